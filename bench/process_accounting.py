"""The kernel's process accounting, for bench/suite_cost.py: every process's CPU time, exactly.

``getrusage(RUSAGE_CHILDREN)`` deltas around a test miss a process that another test reaps (a
background export, a server stopped later) and give its CPU to whichever test reaped it. With
BSD process accounting (``acct(2)``: Linux with ``CONFIG_BSD_PROCESS_ACCT``, run as root) the
kernel writes one record per process as it exits: its pid, its parent's pid, its start time,
its CPU time and its command name. A process is then charged to the test of the pytest worker it
descends from whose run overlaps it most (a process outliving its test, a fixture's export
started in the background, goes to the test it ran beside longest).

    with accounting(Path("/tmp/suite.pacct")) as on:   # on: whether the kernel accepted it
        ...                                              # run the suite
    charged = charge(read_records(path), windows)

The record layout is ``struct acct_v3`` of ``linux/acct.h`` (64 bytes); times are in the
kernel's ``AHZ`` (100) ticks, CPU times as ``comp_t`` (13-bit mantissa, base-8 exponent).
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: ``struct acct_v3``: flag, version, tty, exit code, uid, gid, pid, ppid, btime (s), etime
#: (float, AHZ ticks), utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t), comm[16].
RECORD = struct.Struct("<BBHIIIIIIf8H16s")
AHZ = 100
ACCT_V3 = 3


@dataclass(frozen=True)
class ProcessRecord:
    """One exited process, as the kernel accounted it."""

    pid: int
    ppid: int
    started: float  # seconds since the epoch (whole seconds: the kernel's resolution)
    wall_s: float
    cpu_s: float
    command: str


@dataclass(frozen=True)
class TestWindow:
    """When one test ran, and in which pytest process (wall clock, seconds since the epoch)."""

    test: str
    worker_pid: int
    start: float
    end: float


@dataclass(frozen=True)
class Charged:
    """Every accounted process's CPU: per test, per command name, and what no test owns."""

    per_test: dict[str, float]
    per_command: dict[str, float]
    workers_s: float  # the pytest processes' own CPU
    unowned_s: float  # descendants of no worker (the controller's, a daemon's)
    total_s: float


def _comp_t(value: int) -> int:
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def read_records(path: Path) -> list[ProcessRecord]:
    """The v3 records of an accounting file (others, from an older kernel, are skipped)."""
    data = path.read_bytes()
    records = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        (_flag, version, _tty, _exit, _uid, _gid, pid, ppid, btime, etime, utime, stime,
         *_rest, comm) = RECORD.unpack_from(data, offset)
        if version & 0x7F != ACCT_V3:
            continue
        records.append(ProcessRecord(
            pid=pid, ppid=ppid, started=float(btime), wall_s=etime / AHZ,
            cpu_s=(_comp_t(utime) + _comp_t(stime)) / AHZ,
            command=comm.split(b"\0", 1)[0].decode(errors="replace")))
    return records


@contextmanager
def accounting(path: Path) -> Iterator[bool]:
    """Process accounting into ``path`` while the block runs; yields whether it is on (root on
    Linux with the kernel's support), and turns it off after, whatever happens."""
    path.touch()
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
    on = libc is not None and libc.acct(str(path).encode()) == 0
    try:
        yield on
    finally:
        if on:
            libc.acct(None)  # type: ignore[union-attr]


def _parent_finder(records: Sequence[ProcessRecord]):  # noqa: ANN202 - a closure
    """``parent(record)``: the record of the process that started it, or None. A pid can come
    back after its process ended: the parent is the latest process of that pid that had
    started by then."""
    by_pid: dict[int, list[ProcessRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r.started):
        by_pid[record.pid].append(record)

    def parent(record: ProcessRecord) -> ProcessRecord | None:
        before = [r for r in by_pid.get(record.ppid, ()) if r.started <= record.started]
        return before[-1] if before else None

    return parent


def charge(records: Iterable[ProcessRecord], windows: Iterable[TestWindow]) -> Charged:
    """Each process's CPU charged to a test (see the module docstring)."""
    records = list(records)
    by_worker: dict[int, list[TestWindow]] = defaultdict(list)
    for window in windows:
        by_worker[window.worker_pid].append(window)
    parent = _parent_finder(records)
    per_test: dict[str, float] = defaultdict(float)
    per_command: dict[str, float] = defaultdict(float)
    workers_s = unowned_s = 0.0
    for record in records:
        if record.pid in by_worker:
            workers_s += record.cpu_s
            continue
        per_command[record.command] += record.cpu_s
        worker = _worker_of(record, parent, by_worker)
        if worker is None:
            unowned_s += record.cpu_s
            continue
        test = _test_beside(record, by_worker[worker])
        per_test[test or f"<worker {worker}, between tests>"] += record.cpu_s
    total = workers_s + sum(per_command.values())
    return Charged(dict(per_test), dict(per_command), workers_s, unowned_s, total)


def _worker_of(record: ProcessRecord, parent, workers: Mapping[int, object]) -> int | None:  # noqa: ANN001
    seen = 0
    current: ProcessRecord | None = record
    while current is not None and seen < 64:  # a chain, never a loop
        if current.ppid in workers:
            return current.ppid
        current = parent(current)
        seen += 1
    return None


def _test_beside(record: ProcessRecord, windows: Sequence[TestWindow]) -> str | None:
    """The test whose run overlaps the process most; a start is known to the second only, so
    a test that ended within the second before it counts too."""
    end = record.started + max(record.wall_s, 0.01)
    best, overlap = None, -1.0
    for window in windows:
        if not window.start - 1.0 <= record.started <= window.end + 0.5:
            continue
        shared = min(end, window.end) - max(record.started, window.start)
        if shared > overlap:
            best, overlap = window.test, shared
    return best


def module_totals(per_test: Mapping[str, float]) -> dict[str, float]:
    """Per test module, largest first."""
    totals: dict[str, float] = defaultdict(float)
    for test, cpu in per_test.items():
        totals[test.split("::")[0]] += cpu
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))
