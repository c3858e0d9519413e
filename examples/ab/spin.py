"""A small benchmark "build" with a calibrated slowdown knob, for A/B comparisons.

Each iteration runs a fixed amount of integer work (``WORK`` loop steps scaled by
``--slowdown``), times it with ``perf_counter_ns`` and prints a FAI-PEP observer line. Two
copies of this program with different ``--slowdown`` values behave like two builds of one
program whose second one is that much slower.

It speaks benchlab's step protocol (docs/ab.md): started with ``BENCHLAB_STEP=1`` it does its
warm-up, prints ``BENCHLAB_STEP ready`` and then runs one timed iteration per line on stdin,
so ``benchlab compare`` can alternate two builds iteration by iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator

try:
    from benchlab.protocol.step import steps
except ImportError:  # benchlab is not installed here: the step protocol in a few lines

    def steps(iterations: int) -> Iterator[int]:
        if os.environ.get("BENCHLAB_STEP", "").strip() in ("", "0"):
            yield from range(iterations)
            return
        print("BENCHLAB_STEP ready", flush=True)
        index = 0
        while True:
            sys.stdout.flush()
            line = sys.stdin.readline()
            if not line or line.strip() == "stop":
                return
            yield index
            index += 1

WORK = 20_000


def spin(steps: int) -> int:
    total = 0
    for i in range(steps):
        total += i * i % 7
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iter", type=int, default=30)
    parser.add_argument("--slowdown", type=float, default=0.0, help="0.05 = 5%% more work")
    args = parser.parse_args()
    work = int(WORK * (1.0 + args.slowdown))
    for _ in range(args.warmup):
        spin(work)
    for _ in steps(args.iter):
        start = time.perf_counter_ns()
        spin(work)
        elapsed = time.perf_counter_ns() - start
        line = {"type": "NET", "metric": "latency", "unit": "us", "value": elapsed / 1e3}
        print("PyTorchObserver " + json.dumps(line))


if __name__ == "__main__":
    main()
