"""Runner overhead per iteration: benchlab's timed loop around a no-op model vs a bare loop.

Goal: benchlab's loop costs under 1 µs per iteration more than the simplest loop that could
time the same call. Three figures are measured in this one process, interleaved (their order
rotates from repeat to repeat, so a slow phase of the machine does not always land on the same
one), each ``--repeats`` times:

* **floor**: the cost of one ``time.perf_counter_ns()`` call, i.e. a loop of N clock reads
  minus an empty loop of N, divided by N. Every timed iteration pays at least two of these.
* **bare loop**: ``t0 = ns(); f(); t1 = ns(); out.append(t1 - t0)`` around a no-op ``f``,
  from the first ``t0`` to the last ``t1``, divided by N.
* **benchlab loop**: :func:`benchlab.runner.loop.measure` with the no-op backend of
  ``bench/noop_backend.py`` (which hands back the very same ``f``), N fixed iterations, no
  warm-up and ``min_time`` 0. Its per-iteration cost is the ``elapsed_s`` detail (first
  ``t0`` to last ``t1`` of the timed loop) divided by ``iterations``: the metric lines that
  ``measure`` prints afterwards, and the backend import, are outside that span.

The overhead is benchlab loop − bare loop, per repeat (the two are measured next to each other).
"""

from __future__ import annotations

import io
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the runner imports the backend by module name
    sys.path.insert(0, str(HERE))

from _common import parse_args, spread, write_result
from noop_backend import noop

from benchlab.protocol.lines import parse_output
from benchlab.runner.config import RunnerConfig
from benchlab.runner.loop import measure

NAME = "overhead"
GOAL_NS = 1000.0
BACKEND = "noop_backend:NoopBackend"


def floor_ns(n: int) -> float:
    """Nanoseconds per ``perf_counter_ns()`` call: N reads minus an empty loop of N, over N."""
    clock = time.perf_counter_ns
    rounds = range(n)
    t0 = clock()
    for _ in rounds:
        clock()
    t1 = clock()
    for _ in rounds:
        pass
    t2 = clock()
    return ((t1 - t0) - (t2 - t1)) / n


def bare_loop_ns(n: int) -> float:
    """Nanoseconds per iteration of the simplest loop that times one call per iteration."""
    clock = time.perf_counter_ns
    f = noop
    out: list[int] = []
    started = t1 = clock()
    for _ in range(n):
        t0 = clock()
        f()
        t1 = clock()
        out.append(t1 - t0)
    return (t1 - started) / n


def benchlab_loop_ns(n: int) -> float:
    """Nanoseconds per iteration of benchlab's own timed loop around the no-op backend."""
    config = RunnerConfig(backend=BACKEND, iterations=n, warmup=0, min_time=0.0)
    sink = io.StringIO()
    measure(config, sink)
    # Only the detail line matters; parsing every latency line would take longer than the run.
    details = parse_output(
        line for line in sink.getvalue().split("\n") if '"detail"' in line
    ).details
    if details.get("iterations") != n:
        raise RuntimeError(f"expected {n} iterations, the runner reports {details!r}")
    return float(details["elapsed_s"]) * 1e9 / n


def main() -> int:
    """Measure, print the table and write ``bench/results/overhead.json``."""
    args = parse_args(__doc__.splitlines()[0])
    n = 20_000 if args.smoke else 300_000
    phases = {"floor": floor_ns, "bare": bare_loop_ns, "benchlab": benchlab_loop_ns}
    for measure_phase in phases.values():  # warm the code paths and the allocator once
        measure_phase(min(n, 5_000))
    samples: dict[str, list[float]] = {name: [] for name in phases}
    order = list(phases)
    for repeat in range(args.repeats):
        shift = repeat % len(order)
        for name in order[shift:] + order[:shift]:
            samples[name].append(phases[name](n))
    overhead = [c - b for c, b in zip(samples["benchlab"], samples["bare"], strict=True)]
    figures = {
        "floor_ns": spread(samples["floor"]),
        "bare_loop_ns": spread(samples["bare"]),
        "benchlab_loop_ns": spread(samples["benchlab"]),
        "overhead_ns": spread(overhead),
        "iterations": n,
        "goal_ns": GOAL_NS,
        "goal_met": spread(overhead)["median"] < GOAL_NS,
    }
    rows = [
        ("clock read (floor)", figures["floor_ns"]),
        ("bare timed loop / iter", figures["bare_loop_ns"]),
        ("benchlab loop / iter", figures["benchlab_loop_ns"]),
        ("overhead (benchlab - bare)", figures["overhead_ns"]),
    ]
    print(f"runner overhead, {n} iterations x {args.repeats} repeats (ns per iteration)")
    print(f"{'figure':<28} {'min':>8} {'median':>8} {'max':>8}")
    for label, s in rows:
        print(f"{label:<28} {s['min']:>8.1f} {s['median']:>8.1f} {s['max']:>8.1f}")
    verdict = "met" if figures["goal_met"] else "MISSED"
    print(f"goal: overhead < {GOAL_NS:.0f} ns per iteration: {verdict}")
    if any(not math.isfinite(v) for s in (r[1] for r in rows) for v in s.values()):
        print("warning: a figure is not finite", file=sys.stderr)
    print(f"wrote {write_result(NAME, args, figures)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
