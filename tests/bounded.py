"""Run a program from a test so that it, and every process it started, ends by the test's limit.

``subprocess.run(..., timeout=T)`` kills only the program, with SIGKILL: a bench script that
started lab workers, a server or PostgreSQL leaves them running for the rest of the suite (seen:
three orphaned ``benchlab lab worker`` processes after the chaos smoke passed pytest-timeout's
600 s), and its ``finally`` blocks never run. A ``T`` above pytest-timeout's limit is never
reached at all: pytest-timeout fires first, and the program is SIGKILLed the same way.

:func:`run_bounded` starts the program in a session of its own, and at its limit, or when the
test itself is interrupted, sends the whole session SIGTERM (a bench script turns it into
``SystemExit`` and its clean-up runs), then, after a grace period, SIGKILL to it and to every
process it started, found by parent in ``/proc`` before the first signal: a lab worker or a
benchmark starts in a session of its own and no process-group signal reaches it. The limit must
leave that grace period inside pytest-timeout's. :func:`alive` is the tests' one check of
whether a process is still there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

__all__ = ["GRACE_S", "TEST_LIMIT_S", "alive", "run_bounded"]

#: pytest-timeout's limit for one test, read from pyproject.toml (its one home).
TEST_LIMIT_S = float(tomllib.loads(
    (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    ["tool"]["pytest"]["ini_options"]["timeout"])
#: How long a program gets to clean up after SIGTERM before its session is SIGKILLed.
GRACE_S = 30.0


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[1]), int(fields[19])) if fields[0] != "Z" else None


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process: a zombie (killed, not yet reaped) is not; the one
    check of the tests that look for processes left behind."""
    return _stat(pid) is not None


def _descendants(root: int) -> dict[int, int]:
    """Every live process below ``root``: pid -> its start time (to tell a reused pid)."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(stat[0], []).append((int(entry.name), stat[1]))
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for pid, started in children.get(todo.pop(), []):
            found[pid] = started
            todo.append(pid)
    return found


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _read_until_exit(proc: subprocess.Popen[str], seconds: float) -> tuple[str, str] | None:
    """The program's output once its pipes close; None as soon as the program has exited with
    something it started still holding them; TimeoutExpired after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return proc.communicate(timeout=min(0.5, max(0.01, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if proc.poll() is not None:
                return None
            if time.monotonic() >= deadline:
                raise


def _end(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM the program's process group, then SIGKILL it and every process it started
    (a lab worker or a benchmark runs in a session of its own) after the grace period; what
    it printed."""
    tree = _descendants(proc.pid)  # before the program dies and its children lose their parent
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        done = _read_until_exit(proc, GRACE_S)
    except subprocess.TimeoutExpired:
        done = None
    _signal_group(proc.pid, signal.SIGKILL)
    for pid, started in tree.items():
        stat = _stat(pid)
        if stat is not None and stat[1] == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if done is not None:
        return done
    try:
        return proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()  # a pipe held open by a process that escaped every signal: stop reading
        proc.wait()
        return "", "(its output was held open by a process that outlived it)"


def run_bounded(argv: Sequence[str], limit_s: float, **options: object,
                ) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with its output captured as text, ending its session at ``limit_s``.

    Raises AssertionError naming the program and its last output when it ran past the limit;
    ``options`` go to :class:`subprocess.Popen` (``env``, ``cwd``, ``stdin``). A program that
    exits leaving a process that holds its output open gets that process ended too.
    """
    if limit_s + GRACE_S > TEST_LIMIT_S:
        raise ValueError(f"limit {limit_s:.0f} s + {GRACE_S:.0f} s of clean-up passes "
                         f"pytest-timeout's {TEST_LIMIT_S:.0f} s: the test would be killed first")
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **options)  # type: ignore[call-overload]
    try:
        done = _read_until_exit(proc, limit_s)
    except subprocess.TimeoutExpired:
        out, err = _end(proc)
        raise AssertionError(
            f"{' '.join(argv[:3])} ran past its {limit_s:.0f} s and was ended with its "
            f"processes; its last output:\n{out[-2000:]}\n{err[-3000:]}") from None
    except BaseException:
        _end(proc)  # pytest-timeout or Ctrl-C interrupted the test: leave nothing running
        raise
    out, err = done if done is not None else _end(proc)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
