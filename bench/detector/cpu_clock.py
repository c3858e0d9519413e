"""Is CPU time a less noisy clock than wall time for A/B decisions on this machine?

Every runner sample records both (``NET latency`` and ``NET cpu_time``, ms per call); the
in-process runner records both per call. This runs ``--sessions`` in-process A/A sessions of
the spin backend (the same work loop as examples/ab/spin.py) and, for the process level,
``--sessions`` fresh runner processes of one side, and reports, on each clock, the SD and the
robust SD (1.4826 × MAD) of:

- each in-process session's paired estimate (median of its blocks' log-ratios): what the
  in-process verdict is taken on;
- the log-ratio of consecutive processes' medians: what a process-pair verdict is taken on.

    .venv/bin/python bench/detector/cpu_clock.py                # writes cpu_clock.json
    .venv/bin/python bench/detector/cpu_clock.py --sessions 4 --out /tmp/c.json   # smoke
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description
sys.path.insert(0, str(HERE))

from _common import provenance
from sources import robust_sd
from spinjobs import runner_pair

from benchlab.ab.inprocess import inprocess_session
from benchlab.ab.sessions import balanced_orders
from benchlab.spec.artifacts import ArtifactCache
from benchlab.harness.jobrun import run_job
from benchlab.schema.result import Metric
from benchlab.targets.host import HostTarget

OUT = HERE / "cpu_clock.json"


def _spread(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values)
    return {"sd": float(np.std(arr, ddof=1)), "robust_sd": robust_sd(arr), "n": len(values)}


def measure(sessions: int) -> dict:
    """In-process A/A sessions and single-side processes, both clocks."""
    target = HostTarget()
    with tempfile.TemporaryDirectory(prefix="bench-cpu-clock-") as tmp:
        control, treatment = runner_pair(Path(tmp), 0.0, 0.0)
        cache = ArtifactCache(Path(tmp) / "cache")
        wall, cpu = [], []
        started = time.perf_counter()
        for index in range(sessions):
            session = inprocess_session(control, treatment, target, cache,
                                        order=balanced_orders(30, index),
                                        loaded_first="ct"[index % 2], warmup=3)
            wall.append(session.estimate_on("wall"))
            cpu.append(session.estimate_on("cpu"))
        medians: dict[str, list[float]] = {"wall": [], "cpu": []}
        for _ in range(sessions):
            result = run_job(control, target, cache)
            for clock, metric in (("wall", Metric.LATENCY), ("cpu", Metric.CPU_TIME)):
                values = [s.value for s in result.samples if s.metric == metric
                          and s.type == "NET"]
                medians[clock].append(statistics.median(values))
        wall_s = time.perf_counter() - started
    pairs = {clock: [float(np.log(b / a)) for a, b in zip(v[0::2], v[1::2], strict=False)]
             for clock, v in medians.items()}
    return {
        "in_process_session_estimate": {"wall": _spread(wall), "cpu": _spread(cpu)},
        "process_pair_log_ratio": {clock: _spread(v) for clock, v in pairs.items()},
        "wall_s": round(wall_s, 1),
    }


def main() -> None:
    """Measure, print a small table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    figures = measure(args.sessions)
    record = {**provenance("cpu_clock"), **figures}
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    for what in ("in_process_session_estimate", "process_pair_log_ratio"):
        for clock in ("wall", "cpu"):
            s = figures[what][clock]
            print(f"{what:30s} {clock:4s}  SD {s['sd'] * 100:5.2f}%  robust "
                  f"{s['robust_sd'] * 100:5.2f}%  n={s['n']}")
    print(f"{figures['wall_s']} s -> {args.out}")


if __name__ == "__main__":
    main()
