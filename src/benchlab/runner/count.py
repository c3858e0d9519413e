"""``python -m benchlab.runner.count WHAT -- PROGRAM ARGS...``: a program's measured calls,
counted.

Runs the program under valgrind's callgrind with instrumentation and collection off; the
program switches them on around each call it measures (:class:`benchlab.runner.counting.
Callgrind` in benchlab's runner, ``BENCHLAB_COUNTED`` of ``benchlab_step.h`` in C), and
callgrind writes one dump per call. The program's own output passes through; after it exits,
each dump becomes metric lines (``NET instructions``, and with ``cache`` the simulated
first-level data and last-level misses) and one detail line says how they were counted.

An aarch64 program on an x86-64 host is counted on an emulated ARM core instead
(``--cpu cortex-a76``; default ``cortex-a53``): QEMU's user-mode emulator with benchlab's plugin
counts the instructions between the program's marks (:mod:`benchlab.runner.qemucount`).

Counting is exact for what it counts: every instruction the process executed inside the
counted calls, on every thread. Threads that spin or wait for each other execute a number of
instructions that depends on timing, so counting mode runs one intra-op thread unless told
otherwise (docs/statistics.md, "Counted instructions"). Python's hash seed is fixed (0) so two
processes take the same paths through dictionaries.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from benchlab.devicetools.elf import elf_architecture
from benchlab.protocol.lines import format_detail, format_metric, parse_output
from benchlab.runner.counting import COUNTS, CountingUnavailable, parse_dump
from benchlab.runner.qemucount import plugin_library, qemu_argv, qemu_version
from benchlab.schema.result import DetailKey, Metric
from benchlab.schema.units import Dimension, dimension_of
from benchlab.targets.environment import cpu_features

__all__ = ["counted_lines", "hardware_counters", "main", "valgrind_argv"]

#: perf_event_open's syscall number per machine (asm/unistd.h).
_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}


def hardware_counters() -> str:
    """Whether this kernel lets a process count its own user-mode instructions (perf's
    ``instructions:u``): ``"exposed"``, or why not. A probe only: benchlab counts with
    valgrind either way (one tool, one meaning for every count it stores)."""
    number = _PERF_EVENT_OPEN.get(platform.machine())
    if number is None:
        return f"not probed on {platform.machine()}"
    attr = (ctypes.c_uint8 * 128)()
    fields = ctypes.cast(attr, ctypes.POINTER(ctypes.c_uint64))
    ctypes.cast(attr, ctypes.POINTER(ctypes.c_uint32))[1] = 128  # attr.size
    fields[1] = 1  # config: PERF_COUNT_HW_INSTRUCTIONS (type 0: PERF_TYPE_HARDWARE)
    fields[5] = 1 | 32 | 64  # disabled, exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(number, ctypes.byref(attr), 0, -1, -1, 0)
    if fd >= 0:
        os.close(fd)
        return "exposed"
    code = ctypes.get_errno()
    why = {errno.ENOENT: "no such event: the CPU or VM exposes no instruction counter",
           errno.EOPNOTSUPP: "not supported: the CPU or VM exposes no instruction counter",
           errno.EACCES: "not permitted (kernel.perf_event_paranoid)",
           errno.EPERM: "not permitted (kernel.perf_event_paranoid)"}
    return f"not exposed: perf_event_open(instructions:u): {why.get(code, os.strerror(code))}"


def valgrind_argv(what: str, out_file: str, log_file: str) -> list[str]:
    """valgrind's command line for counting ``what`` into ``out_file`` (``%p``: the pid)."""
    # Children are followed: a program started through a shell is the shell's child.
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
            "--trace-children=yes",
            f"--callgrind-out-file={out_file}", f"--log-file={log_file}",
            "--dump-line=no", "--compress-strings=no",
            *(["--cache-sim=yes"] if what == "cache" else [])]


def _dumps(folder: Path) -> list[Path]:
    """The numbered dumps of every process in ``folder``, in the order they were written."""
    found = [(p, re.fullmatch(r"count\.(\d+)\.(\d+)", p.name)) for p in folder.iterdir()]
    numbered = [(int(m.group(1)), int(m.group(2)), p) for p, m in found if m]
    return [p for _, _, p in sorted(numbered)]


def counted_lines(what: str, dumps: Sequence[Path]) -> list[str]:
    """Metric lines for each dump: one counted call each."""
    lines = []
    for path in dumps:
        events = parse_dump(path)
        lines.append(format_metric("NET", Metric.INSTRUCTIONS, events.get("Ir", 0), "count"))
        if what == "cache":
            l1 = events.get("D1mr", 0) + events.get("D1mw", 0)
            last = events.get("DLmr", 0) + events.get("DLmw", 0)
            lines.append(format_metric("NET", Metric.L1D_MISSES, l1, "count"))
            lines.append(format_metric("NET", Metric.LL_MISSES, last, "count"))
    return lines


def _valgrind_version() -> str:
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except OSError:
        return "unknown"


def _isa_under_valgrind() -> str | None:
    """What valgrind hides of this CPU, where it matters: valgrind emulates x86-64 up to
    AVX2, so on a CPU with AVX-512 a runtime that picks its kernels by CPUID runs (and is
    counted in) its AVX2 kernels."""
    if "avx512f" not in cpu_features():
        return None
    return ("this CPU has AVX-512, which valgrind does not emulate: the program saw AVX2 at "
            "most, and a runtime that picks its kernels by CPUID was counted in its AVX2 "
            "kernels")


def _pass_through(stream: TextIO) -> int:
    """Copy the program's output to ours as it comes, leaving out the times it measured of
    itself (under valgrind they say nothing about the program); how many were left out."""
    dropped = 0
    for line in stream:
        parsed = parse_output([line])
        if parsed.samples and all(dimension_of(s.unit) is Dimension.TIME
                                  for s in parsed.samples):
            dropped += 1
            continue
        sys.stdout.write(line)
    sys.stdout.flush()
    return dropped


_USAGE = (f"usage: python -m benchlab.runner.count {{{','.join(COUNTS)}}} [--cpu CORE] -- "
          "PROGRAM [ARGS...]")
_UNMARKED = ("benchlab count: the program counted no call: measured calls are counted only "
             "when the program marks them (benchlab's runner does; a C program uses "
             "BENCHLAB_COUNTED from benchlab_step.h)")


def _parse(argv: Sequence[str]) -> tuple[str, str | None, list[str]] | None:
    """(what, the emulated core or None, the program) from the command line; None if bad."""
    args = list(argv)
    cpu = None
    if len(args) > 2 and args[1] == "--cpu":
        cpu, args = args[2], [args[0], *args[3:]]
    if len(args) < 3 or args[1] != "--" or args[0] not in COUNTS:
        return None
    return args[0], cpu, args[2:]


def _run(command: Sequence[str]) -> tuple[int, int, float]:
    """Run ``command`` with the program's output passed through: (exit status, time samples
    left out, seconds). A fixed hash seed: counted calls of a Python program take the same
    paths through its dicts in every process (the environment is the child's own copy)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    started = time.monotonic()
    sys.stdout.flush()
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True,
                          errors="replace") as child:
        assert child.stdout is not None
        dropped = _pass_through(child.stdout)
    return child.returncode, dropped, time.monotonic() - started


def _emulated(program: Sequence[str]) -> bool:
    """Whether the program is an aarch64 executable to count on an emulated core here."""
    found = shutil.which(program[0])
    return (found is not None and platform.machine() != "aarch64"
            and elf_architecture(Path(found)) == "aarch64")


def _count_emulated(what: str, cpu: str, program: list[str],
                    folder: Path) -> tuple[int, list[str], dict[str, Any]]:
    """An aarch64 program on an emulated ``cpu`` with benchlab's QEMU plugin."""
    if what != "instructions":
        raise CountingUnavailable("an emulated core counts instructions only: QEMU simulates no "
                              "cache")
    version, library = qemu_version(), plugin_library()
    out = folder / "counts.txt"
    code, dropped, seconds = _run([*qemu_argv(cpu, library, out), *program])
    if code != 0:
        return code, [], {}
    counts = [int(x) for x in out.read_text().split()] if out.exists() else []
    lines = [format_metric("NET", Metric.INSTRUCTIONS, c, "count") for c in counts]
    facts: dict[str, Any] = {
        "tool": "qemu-plugin", "qemu": version, "cpu": cpu, "counts": what,
        "counted_calls": len(counts), "machine": "aarch64",
        "emulated": f"{cpu} emulated by QEMU in user mode: the instructions are the "
                    "program's own on that core's instruction set, not a time",
        "seconds_under_emulation": round(seconds, 3),
        "region": "each measured call, between the program's own marks"}
    if dropped:
        facts["times_dropped"] = (f"{dropped} time samples the program printed were measured "
                                  "under emulation and are left out")
    return code, lines, facts


def _count_callgrind(what: str, program: list[str],
                     folder: Path) -> tuple[int, list[str], dict[str, Any]]:
    """A program of this machine under valgrind's callgrind."""
    if shutil.which("valgrind") is None:
        raise CountingUnavailable(f"counting needs valgrind on {platform.node()}, not installed "
                              "here (Debian: apt-get install valgrind)")
    log = folder / "valgrind.log"
    code, dropped, seconds = _run([*valgrind_argv(what, f"{folder}/count.%p", str(log)),
                                   *program])
    if code != 0:
        # The program's own last words are already on stderr, and the job's failure quotes
        # the last line: valgrind's summary goes there only when valgrind itself failed.
        said = log.read_text(errors="replace").splitlines() if log.exists() else []
        for line in [x for x in said if "valgrind:" in x or "Fatal" in x][-3:]:
            print(line, file=sys.stderr)
        return code, [], {}
    dumps = _dumps(folder)
    facts: dict[str, Any] = {
        "tool": "callgrind", "valgrind": _valgrind_version(), "counts": what,
        "counted_calls": len(dumps), "machine": platform.machine(),
        "hardware_counters": hardware_counters(),
        "seconds_under_valgrind": round(seconds, 3),
        "region": "each measured call, switched on and off by the program itself"}
    seen = _isa_under_valgrind()
    if seen:
        facts["instruction_set"] = seen
    if dropped:
        facts["times_dropped"] = (f"{dropped} time samples the program printed were measured "
                                  "under valgrind and are left out")
    return code, counted_lines(what, dumps), facts


def main(argv: Sequence[str]) -> int:
    """Run the program after ``--`` counted; its exit status, or 3 when counting failed.
    An aarch64 program on an x86-64 host is counted on an emulated core (``--cpu``, else
    ``QEMU_CPU``, else ``cortex-a53``), anything else under valgrind."""
    parsed = _parse(argv)
    if parsed is None:
        print(_USAGE, file=sys.stderr)
        return 2
    what, cpu, program = parsed
    with tempfile.TemporaryDirectory(prefix="benchlab-count-") as scratch:
        try:
            if _emulated(program):
                # The core as the device's own emulator is told it (QEMU_CPU), unless given.
                core = cpu or os.environ.get("QEMU_CPU") or "cortex-a53"
                code, lines, facts = _count_emulated(what, core, program, Path(scratch))
            else:
                code, lines, facts = _count_callgrind(what, program, Path(scratch))
        except CountingUnavailable as missing:
            print(f"benchlab count: {missing}", file=sys.stderr)
            return 3
    if code != 0:
        return code
    if not lines:
        print(_UNMARKED, file=sys.stderr)
        return 3
    lines.append(format_detail(**{DetailKey.COUNTING: facts}))
    print("\n".join(lines), flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
