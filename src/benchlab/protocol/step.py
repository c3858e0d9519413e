"""The step protocol, program side: let benchlab run a benchmark one timed iteration at a time.

``benchlab compare`` can measure two builds of a program in lock-step (docs/ab.md, "The step
protocol"): it starts both with ``BENCHLAB_STEP=1`` in their environment and asks each in turn
for one timed iteration, so that neighbouring iterations of the two builds share the
machine's state. A Python benchmark speaks the protocol by changing its timed loop by one
line::

    from benchlab.protocol.step import steps

    for _ in steps(args.iter):                      # was: range(args.iter)
        start = time.perf_counter_ns()
        run_once()
        us = (time.perf_counter_ns() - start) / 1e3
        print('BENCHLAB_METRIC {"type":"NET","metric":"latency","unit":"us","value":%.3f}' % us)

Without ``BENCHLAB_STEP`` in the environment, :func:`steps` is ``range(iterations)`` and the
program behaves as before. In step mode it prints ``BENCHLAB_STEP ready`` (so do the setup
and any warm-up of your own before the loop), then yields once per line benchlab sends, until
the line ``stop`` or the end of stdin. It flushes stdout before waiting for each step, so the
metric line printed by the previous iteration reaches benchlab even from a plain ``print``.

This module uses the standard library only and imports nothing of benchlab: a program that
runs where benchlab is not installed may carry a copy of this file next to itself. C and C++
programs include ``benchlab_step.h`` from :func:`include_dir` instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from typing import TextIO

__all__ = ["ENV", "READY", "STOP", "include_dir", "next_step", "ready", "stepping", "steps"]

ENV = "BENCHLAB_STEP"
"""The environment variable that asks a program to step; benchlab sets it to ``1``."""

READY = "BENCHLAB_STEP ready"
"""The line a stepping program prints once its setup is done."""

STOP = "stop"
"""The line that ends a stepping program (so does the end of stdin)."""


def stepping(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process was started in step mode: ``BENCHLAB_STEP`` set to anything but
    empty or ``0``."""
    value = (os.environ if environ is None else environ).get(ENV, "")
    return value.strip() not in ("", "0")


def ready(stdout: TextIO | None = None) -> None:
    """Print the ready line and flush: call it once, after setup and before the first step."""
    out = sys.stdout if stdout is None else stdout
    out.write(READY + "\n")
    out.flush()


def next_step(stdin: TextIO | None = None, stdout: TextIO | None = None) -> bool:
    """Flush stdout, wait for benchlab's next line, and say whether to run one more iteration
    (False on ``stop`` or the end of stdin)."""
    (sys.stdout if stdout is None else stdout).flush()
    line = (sys.stdin if stdin is None else stdin).readline()
    return bool(line) and line.strip() != STOP


def steps(iterations: int, *, stdin: TextIO | None = None,
          stdout: TextIO | None = None) -> Iterator[int]:
    """Iteration indices for a benchmark's timed loop.

    Outside step mode: ``0 .. iterations - 1``. In step mode ``iterations`` is ignored: the
    ready line is printed, then one index is yielded per step benchlab asks for, until it says
    ``stop`` or closes stdin. Each iteration must print exactly one latency metric line
    (``BENCHLAB_METRIC {...}`` or ``PyTorchObserver {...}``) on stdout.
    """
    if not stepping():
        yield from range(iterations)
        return
    ready(stdout)
    index = 0
    while next_step(stdin, stdout):
        yield index
        index += 1
    (sys.stdout if stdout is None else stdout).flush()


def include_dir() -> str:
    """The directory holding ``benchlab_step.h``, for a C compiler's ``-I`` (installed
    benchlab only, not a copy of this file)."""
    from importlib.resources import files

    return str(files("benchlab").joinpath("data"))
