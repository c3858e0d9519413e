"""A bound on the runner's exit, once its results are out.

Everything a measurement has to say is printed and flushed before the runner returns. What
follows is the runtime's teardown: its thread pools joined, its libraries' destructors run. A
runtime that hangs there (seen under QEMU user mode, where a job printed its results and never
exited) would otherwise hold the job until its timeout and lose results already printed. So the
runner says, in a last detail line, how long it allows the teardown, and arms ``alarm``: a
teardown that takes longer ends the process by SIGALRM, whose default action needs no Python
and works in C exit handlers too. The harness keeps the printed results of a runner that ended
so and records that it hung (:func:`benchlab.harness.exitstatus.ended_after_its_results`).
Teardown otherwise runs as usual, so a crash on exit still shows in the exit status.
"""

from __future__ import annotations

import math
import signal
import sys
from typing import TextIO

from benchlab.protocol.lines import format_detail
from benchlab.schema.result import DetailKey

__all__ = ["bound_shutdown"]


def bound_shutdown(limit_s: float | None, out: TextIO | None = None) -> None:
    """Announce ``limit_s`` on ``out`` (stdout) and arm the alarm; nothing when ``None`` or
    where the platform has no ``alarm``."""
    if limit_s is None or not hasattr(signal, "alarm"):
        return
    out = sys.stdout if out is None else out
    seconds = max(1, math.ceil(limit_s))
    out.write(format_detail(**{DetailKey.SHUTDOWN_LIMIT: seconds}) + "\n")
    out.flush()
    sys.stderr.flush()
    # SIGALRM's default action ends the process; nothing in the runner handles it.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(seconds)
