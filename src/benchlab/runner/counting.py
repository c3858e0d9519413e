"""Counted instructions around the measured calls: callgrind's client requests from Python.

Counting mode (the test setting ``count``) runs a measured program under valgrind's callgrind
with collection off, and the program itself switches collection on for exactly the calls it
measures, then asks callgrind to write what it counted: one dump per counted call. Counting
the whole process does not work: two identical processes of ONNX Runtime differed by 4%
before their first inference (docs/statistics.md, "Counted instructions").

The switches are valgrind's *client requests*: a fixed sequence of instructions that does
nothing on a real CPU and that valgrind's translator recognises. Python cannot write them, so
:func:`client_request` puts the few bytes of an x86-64 function that issues one into an
executable page and calls it through ctypes. The same requests are in
``benchlab_step.h`` (``BENCHLAB_COUNTED``) for C and C++ programs.

:mod:`benchlab.runner.count` starts the program under valgrind and turns the dumps into metric
lines; this module is what the program side needs, standard library only.
"""

from __future__ import annotations

import ctypes
import mmap
import platform
from collections.abc import Callable
from functools import cache
from pathlib import Path

__all__ = ["COUNTS", "Callgrind", "CountingUnavailable", "client_request", "count_calls",
           "parse_dump", "running_on_valgrind"]

#: What counting mode can count → the callgrind events that give it.
COUNTS = {
    "instructions": ("Ir",),
    "cache": ("Ir", "D1mr", "D1mw", "DLmr", "DLmw"),
}

# valgrind's request numbers (valgrind.h, callgrind.h): a core request, and callgrind's, which
# start at its tool base ('C','T' << 16).
_RUNNING_ON_VALGRIND = 0x1001
_CALLGRIND_BASE = (ord("C") << 24) | (ord("T") << 16)
_DUMP_STATS = _CALLGRIND_BASE + 0
_ZERO_STATS = _CALLGRIND_BASE + 1
_TOGGLE_COLLECT = _CALLGRIND_BASE + 2
_START_INSTRUMENTATION = _CALLGRIND_BASE + 4
_STOP_INSTRUMENTATION = _CALLGRIND_BASE + 5

# uint64_t request(uint64_t *args /* rdi */, uint64_t default /* rsi */), System V x86-64:
# rax = args, rdx = default; the four rotations of rdi (3 + 13 + 61 + 51 = 128 bits, so rdi is
# unchanged) followed by xchg rbx,rbx are the marker valgrind looks for; it leaves the
# request's answer in rdx. On a real CPU the whole function returns the default.
_REQUEST_CODE = bytes.fromhex(
    "4889f8"      # mov rax, rdi
    "4889f2"      # mov rdx, rsi
    "48c1c703"    # rol rdi, 3
    "48c1c70d"    # rol rdi, 13
    "48c1c73d"    # rol rdi, 61
    "48c1c733"    # rol rdi, 51
    "4887db"      # xchg rbx, rbx
    "4889d0"      # mov rax, rdx
    "c3"          # ret
)

class CountingUnavailable(Exception):
    """What this machine lacks to count, said as what to install."""


@cache
def _request_function() -> tuple[mmap.mmap, Callable[..., int]] | None:
    """The request function in its own executable page (kept alive with it), or ``None``
    where the machine is not x86-64 (valgrind's marker is another sequence there)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_REQUEST_CODE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    kind = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64)
    return page, kind(address)


def client_request(request: int, arg1: int = 0, default: int = 0) -> int:
    """Issue valgrind client request ``request``; ``default`` when not under valgrind (or
    not on x86-64)."""
    made = _request_function()
    if made is None:
        return default
    args = (ctypes.c_uint64 * 6)(request, arg1, 0, 0, 0, 0)
    return int(made[1](ctypes.addressof(args), default))


def running_on_valgrind() -> int:
    """How many valgrinds this process runs under (0 natively)."""
    return client_request(_RUNNING_ON_VALGRIND)


class Callgrind:
    """The program side of counting: collection on around each measured call, one dump each.

    ``start()`` once before the first counted call (instrumentation on: until then the
    program runs at valgrind's uninstrumented speed, several times faster);
    ``counted(call)`` wraps a call so that it alone is counted and dumped; ``stop()`` after
    the last.
    """

    def __init__(self) -> None:
        if running_on_valgrind() == 0:
            raise RuntimeError("counting mode needs the program to run under valgrind's "
                               "callgrind (python -m benchlab.runner.count starts it)")

    def start(self) -> None:
        client_request(_START_INSTRUMENTATION)
        client_request(_ZERO_STATS)

    def stop(self) -> None:
        """Instrumentation off: what the process does after its counted calls (the accuracy
        check, its report) runs at valgrind's uninstrumented speed."""
        client_request(_STOP_INSTRUMENTATION)

    def counted(self, call: Callable[[], object]) -> Callable[[], object]:
        def counted_call() -> object:
            client_request(_TOGGLE_COLLECT)
            try:
                return call()
            finally:
                client_request(_TOGGLE_COLLECT)
                client_request(_DUMP_STATS)
        return counted_call


def count_calls(call: Callable[[], object], warmup: int, calls: int) -> None:
    """The runner's counted loop under valgrind: the first call and ``warmup`` more,
    uncounted and uninstrumented (so the counted calls find their memory pools grown), then
    ``calls`` calls counted one by one."""
    counter = Callgrind()
    call()
    for _ in range(warmup):
        call()
    counter.start()
    counted = counter.counted(call)
    for _ in range(calls):
        counted()
    counter.stop()


def parse_dump(path: Path) -> dict[str, int]:
    """Event name → total from one callgrind dump (its ``events:`` and ``totals:`` lines)."""
    events: list[str] = []
    totals: list[int] = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("totals:", "summary:")):
            totals = [int(x) for x in line.split()[1:]]
    if not events:
        raise ValueError(f"{path}: not a callgrind dump (no events line)")
    return dict(zip(events, totals + [0] * (len(events) - len(totals)), strict=True))
