"""A small benchmark "build" with a calibrated slowdown knob, for A/B comparisons.

Each iteration runs a fixed amount of integer work (``WORK`` loop steps scaled by
``--slowdown``), times it with ``perf_counter_ns`` and prints a FAI-PEP observer line. Two
copies of this program with different ``--slowdown`` values behave like two builds of one
program whose second one is that much slower.
"""

from __future__ import annotations

import argparse
import json
import time

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
    steps = int(WORK * (1.0 + args.slowdown))
    for step in range(args.warmup + args.iter):
        start = time.perf_counter_ns()
        spin(steps)
        elapsed = time.perf_counter_ns() - start
        if step >= args.warmup:
            line = {"type": "NET", "metric": "latency", "unit": "us", "value": elapsed / 1e3}
            print("PyTorchObserver " + json.dumps(line))


if __name__ == "__main__":
    main()
