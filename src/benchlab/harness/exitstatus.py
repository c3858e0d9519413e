"""How a finished command's end reads: cleanly, timed out, killed by a signal, failed, or
ended by the runner's own bound on its teardown after its results were printed."""

from __future__ import annotations

import signal

from benchlab.protocol.lines import parse_output
from benchlab.schema.result import DetailKey, Status
from benchlab.targets.base import CommandResult

__all__ = ["ended_after_its_results", "failure_of"]

_HINTS = {
    "SIGKILL": " (killed from outside: out of memory?)",
    "SIGSEGV": " (crashed: segmentation fault)",
    "SIGABRT": " (aborted)",
    "SIGILL": " (an instruction this CPU lacks: a program built for a newer CPU)",
}


def _signal_of(code: int) -> int | None:
    # A shell reports a child killed by signal N as status 128+N; Python's subprocess as -N.
    return -code if code < 0 else code - 128 if 128 < code < 160 else None


def failure_of(result: CommandResult, timeout: float) -> tuple[Status, str] | None:
    """The status and reason for a command that did not finish cleanly."""
    if result.timed_out:
        return Status.TIMEOUT, f"timed out after {timeout:g} s; its process group was killed"
    code = result.returncode
    if code == 0:
        return None
    if code is None:
        return Status.FAILED, "the command ended without an exit status"
    signum = _signal_of(code)
    if signum is not None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return Status.FAILED, f"killed by {name}{_HINTS.get(name, '')} (exit status {code})"
    last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
    reason = f"exited with status {code}"
    return Status.FAILED, f"{reason}: {last.strip()[:300]}" if last else reason


def ended_after_its_results(result: CommandResult) -> str | None:
    """Why a runner that SIGALRM ended still finished its work, or ``None``.

    Only benchlab's runner arms that alarm, and only after printing its last line, which
    announces the limit (:mod:`benchlab.runner.shutdown`): a process that printed that line
    and then died of SIGALRM measured everything and hung in its runtime's teardown.
    """
    code = result.returncode
    if result.timed_out or code is None or _signal_of(code) != signal.SIGALRM:
        return None
    limit = parse_output(result.stdout).details.get(DetailKey.SHUTDOWN_LIMIT)
    if limit is None:
        return None
    return (f"the process printed its results, then did not exit within {limit} s (a hang in "
            "the runtime's teardown); it was ended by SIGALRM and its results are kept")
