"""How fast this machine runs a fixed piece of work: the yardstick of the suite's cost budget.

The same suite costs more CPU seconds on a slower machine (1.56 times more on one 2-vCPU VM
than on another of the same kind: docs/performance.md §15), so a budget in seconds either
fails the slower machine or lets the faster one grow. :func:`calibration_seconds` times a
fixed workload, the suite's kinds of work in small: Python code (pytest, benchlab, imports:
dictionaries, strings, calls) and compiled C on a few hundred KiB (zlib, sorting, bytes). The
suite's CPU time divided by it is a figure that moves with the suite, not with the machine
(tests/suite_budget.py).

It is timed in CPU seconds of this process (``time.process_time``), so another process on
the other core costs it little; the fastest of several rounds is kept, the least disturbed
one. One thread: the suite's processes run one thread each, mostly.
"""

from __future__ import annotations

import random
import time
import zlib

#: Rounds timed; the fastest counts.
ROUNDS = 7


def calibration_workload() -> int:
    """One round of the fixed work (about a tenth of a second on the project's VMs); returns
    a checksum, so that no step can be skipped."""
    check = 0
    # Python: arithmetic, calls, a dictionary and strings, as interpreted code does.
    table: dict[str, int] = {}
    for i in range(240_000):
        key = f"k{i % 4099}"
        table[key] = table.get(key, 0) + (i * 7) % 13
    check += sum(table.values())
    words = " ".join(str(i) for i in range(80_000)).split()
    check += sum(len(w) for w in words if w.endswith(("3", "7")))
    # Compiled C over a few hundred KiB: compression, sorting, byte searches.
    generator = random.Random(20261129)
    data = bytes(generator.getrandbits(8) % 32 for _ in range(1 << 17)) * 8
    check += len(zlib.compress(data, 6))
    numbers = [generator.random() for _ in range(200_000)]
    check += int(sorted(numbers)[100_000] * 1000)
    check += data.count(b"\x07\x08")
    return check


def calibration_seconds(rounds: int = ROUNDS) -> float:
    """The CPU seconds of the fastest of ``rounds`` rounds of :func:`calibration_workload`."""
    best = float("inf")
    for _ in range(rounds):
        began = time.process_time()
        calibration_workload()
        best = min(best, time.process_time() - began)
    return best
