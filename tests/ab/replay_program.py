"""A stand-in benchmark binary whose noise is known: each run is one "process" of a build.

It prints FAI-PEP observer lines whose level is ``base × (1 + slowdown)`` times a per-process
lognormal factor (the process-to-process noise seen on real machines) with small iteration
noise on top. The random stream is seeded from a counter file, so a test's sequence of runs
is reproducible while every run still differs from the last.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=float, default=1000.0)
    parser.add_argument("--slowdown", type=float, default=0.0)
    parser.add_argument("--noise", type=float, default=0.02, help="per-process sigma (log)")
    parser.add_argument("--iter", type=int, default=15)
    parser.add_argument("--state", type=Path, required=True)
    args = parser.parse_args()
    count = int(args.state.read_text()) if args.state.exists() else 0
    args.state.write_text(str(count + 1))
    rng = random.Random(count)
    level = args.base * (1.0 + args.slowdown) * math.exp(rng.gauss(0.0, args.noise))
    for _ in range(args.iter):
        value = level * math.exp(rng.gauss(0.0, 0.005))
        print("PyTorchObserver " + json.dumps(
            {"type": "NET", "metric": "latency", "unit": "us", "value": value}))
        print("PyTorchObserver " + json.dumps(
            {"type": "conv", "metric": "latency", "unit": "us", "value": value * 0.6}))


if __name__ == "__main__":
    main()
