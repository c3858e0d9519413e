"""Does interleaving bend a known change? One 5% change measured both ways, and by process pairs.

In-process, both sides share one process and run call by call, so one side's call may leave
the caches, branch predictors or allocator in a state that speeds up or slows down the other
side's next call. If that happens the measured change depends on which side is which. This
bench measures one known change (the spin backend with 5% more work) both ways, in sessions
that alternate between the two directions so that the machine's drift falls on both:

- forward: control A, treatment A+5%: a change x (log-ratio L = log(1 + x));
- reverse: control A+5%, treatment A: without interference exactly the mirror image,
  -x/(1 + x) (log-ratio -L).

The asymmetry L_forward + L_reverse is 0 without interference; it is reported with a 95%
bootstrap interval over sessions (each direction's estimate is the library's Hodges-Lehmann
centre of the session estimates). The forward change is also measured by ``compare_jobs`` in
process-pair mode (fresh runner processes in ABBA pairs, no interleaving), and the work ratio
itself says what to expect: int(20000 × 1.05) / 20000 = +5.00% more loop steps.

    .venv/bin/python bench/detector/interference.py                 # 30 sessions each way
    .venv/bin/python bench/detector/interference.py --smoke --out /tmp/x.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description

from _common import provenance
from record_interleaved import cpu_seconds
from spinjobs import runner_jobs, runner_pair, runner_side

from benchlab.ab import CompareSettings, compare_jobs
from benchlab.ab.interleave import session_runner
from benchlab.schema.comparison import Mode
from benchlab.ab.stats import decide_log_ratios, hodges_lehmann
from benchlab.spec.artifacts import ArtifactCache
from benchlab.schema.result import LATENCY_KEY
from benchlab.targets.host import HostTarget

CHANGE = 0.05
SEED = 20261124


def _interval(d: np.ndarray) -> dict[str, Any]:
    """The library's estimate of one direction: change and 95% interval (one look)."""
    e = decide_log_ratios(d, min_effect=0.0, alpha=0.05, n_looks=1)
    return {"sessions": int(d.size), "change": e.change, "ci95": [e.ci_low, e.ci_high],
            "log_ratio": math.log1p(e.change)}


def asymmetry(forward: np.ndarray, reverse: np.ndarray, rng: np.random.Generator,
              resamples: int = 10_000) -> dict[str, Any]:
    """L_forward + L_reverse (0 when the two directions are mirror images), with a 95%
    percentile bootstrap interval over sessions, each direction resampled on its own."""
    centre = hodges_lehmann(forward)[0] + hodges_lehmann(reverse)[0]
    boot = np.empty(resamples)
    for i in range(resamples):
        f = forward[rng.integers(0, forward.size, forward.size)]
        r = reverse[rng.integers(0, reverse.size, reverse.size)]
        boot[i] = hodges_lehmann(f)[0] + hodges_lehmann(r)[0]
    low, high = np.quantile(boot, [0.025, 0.975])
    return {"log_ratio_sum": float(centre), "ci95": [float(low), float(high)],
            "mirror_images": bool(low <= 0.0 <= high), "resamples": resamples}


def both_ways(sessions: int, tmp: Path) -> dict[str, Any]:
    """``sessions`` in-process sessions each way, alternating forward and reverse."""
    cache = ArtifactCache(tmp / "cache")
    runners = {
        name: session_runner(Mode.IN_PROCESS, runner_pair(tmp, c, t), ("c", "t"), ({}, {}),
                             HostTarget(), cache, seed=SEED + k)
        for k, (name, c, t) in enumerate((("forward", 0.0, CHANGE), ("reverse", CHANGE, 0.0)))
    }
    estimates: dict[str, list[float]] = {"forward": [], "reverse": []}
    for index in range(sessions):
        for name in (("forward", "reverse") if index % 2 == 0 else ("reverse", "forward")):
            estimates[name].append(runners[name](index).estimate)
    return {name: np.array(values) for name, values in estimates.items()}


def process_pairs(pairs: int, tmp: Path) -> dict[str, Any]:
    """The forward change by ``compare_jobs`` in process-pair mode: ``pairs`` ABBA pairs."""
    comparison = compare_jobs(
        runner_jobs(tmp), runner_side("A", 0.0), runner_side("A+5%", CHANGE), HostTarget(),
        ArtifactCache(tmp / "cache"),
        CompareSettings(looks=(pairs,), verify=False, mode="process-pairs", min_effect=0.0),
    )
    (latency,) = [m for m in comparison.metrics if m.metric == LATENCY_KEY]
    assert latency.mode is Mode.PROCESS_PAIRS
    d = np.log(np.array(latency.treatment) / np.array(latency.control))
    return {"pairs": latency.estimate.n_pairs, **_interval(d),
            "pair_log_ratio_sd": float(np.std(d, ddof=1))}


def main(argv: list[str] | None = None) -> None:
    """Parse the options, measure, write the JSON and print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=None,
                        help="in-process sessions per direction (default 30, 3 with --smoke)")
    parser.add_argument("--pairs", type=int, default=None,
                        help="process pairs for the reference (default 40, 6 with --smoke)")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    sessions = args.sessions or (3 if args.smoke else 30)
    pairs = args.pairs or (6 if args.smoke else 40)
    out = args.out or HERE / ("smoke-interference.json" if args.smoke else "interference.json")

    started, cpu = time.perf_counter(), cpu_seconds()
    with tempfile.TemporaryDirectory(prefix="bench-interference-") as tmp:
        found = both_ways(sessions, Path(tmp))
        interleaved_s = time.perf_counter() - started
        reference = process_pairs(pairs, Path(tmp))
    forward, reverse = _interval(found["forward"]), _interval(found["reverse"])
    mirror = -forward["change"] / (1.0 + forward["change"])
    record = {
        **provenance("interference"),
        "smoke": bool(args.smoke),
        "change": CHANGE,
        "work_ratio_change": int(20_000 * (1 + CHANGE)) / 20_000 - 1.0,
        "in_process": {
            "forward": forward,
            "reverse": reverse,
            "mirror_of_forward": mirror,
            "asymmetry": asymmetry(found["forward"], found["reverse"],
                                   np.random.default_rng(SEED)),
            "session_estimates": {k: [round(float(v), 6) for v in vals]
                                  for k, vals in found.items()},
            "wall_s": round(interleaved_s, 1),
        },
        "process_pairs": reference,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(cpu_seconds() - cpu, 1),
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    a = record["in_process"]["asymmetry"]
    print(f"in-process forward  A -> A+5%: {forward['change']:+.2%} "
          f"[{forward['ci95'][0]:+.2%}, {forward['ci95'][1]:+.2%}] ({sessions} sessions)")
    print(f"in-process reverse  A+5% -> A: {reverse['change']:+.2%} "
          f"[{reverse['ci95'][0]:+.2%}, {reverse['ci95'][1]:+.2%}]; mirror image of forward "
          f"{mirror:+.2%}")
    print(f"asymmetry L_fwd + L_rev: {a['log_ratio_sum']:+.2%} "
          f"[{a['ci95'][0]:+.2%}, {a['ci95'][1]:+.2%}] -> mirror images: {a['mirror_images']}")
    print(f"process pairs       A -> A+5%: {reference['change']:+.2%} "
          f"[{reference['ci95'][0]:+.2%}, {reference['ci95'][1]:+.2%}] ({reference['pairs']} "
          f"pairs); work ratio {record['work_ratio_change']:+.2%}")
    print(f"{record['wall_s']} s wall, {record['cpu_s']} s cpu -> {out}")


if __name__ == "__main__":
    main()
