"""Do the main job's numbers hold from one run to the next?

Runs README command 1's sweep (``benchlab run``, the zoo's default models on every installed
runtime) N times back to back, warm, nothing changed between runs, and for every pair of
consecutive runs measures, over the cells both measured:

* coverage: how often run i's printed 95% interval holds run i+1's p50, for the interval
  benchlab prints now (process level, ``summary.ci_low/ci_high``) and for the one it printed
  before (the pooled iterations' order-statistic interval, recomputed from the raw samples);
* the run-to-run change of p50 and of the "× fastest backend" ratios (paired per round, as
  the report shows them, and the plain ratio of p50s);
* the dashboard's false flags: cells the overview would mark ▲/▼ between the two identical
  runs, under its rule now (:func:`benchlab.runstats.run_change`) and under the old one
  (disjoint pooled intervals);
* the wall time of each run.

``--analyse DIR [DIR ...]`` re-reads the JSON directories of earlier runs instead of running.
Writes ``bench/results/repeatability.json``; ``--smoke`` runs two one-model runs quickly.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402

from benchlab.report.matrix import fastest_ratios, matrix_cells  # noqa: E402
from benchlab.runstats import run_change  # noqa: E402
from benchlab.schema import LATENCY_KEY, Result  # noqa: E402
from benchlab.stats import median_ci  # noqa: E402
from benchlab.units import convert  # noqa: E402


def _extra(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--analyse", nargs="+", type=Path, default=None,
                        help="JSON directories of earlier runs, in order; nothing is run")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each run's JSON directory under here")
    parser.add_argument("--run-arg", action="append", default=[],
                        help="extra argument for every benchlab run (repeatable)")


def _one_run(index: int, where: Path, db: Path, extra: Sequence[str],
             smoke: bool) -> tuple[Path, float]:
    out = where / f"run{index}"
    argv = [sys.executable, "-m", "benchlab", "run", "--db", str(db), "--json-dir", str(out),
            "-q", *extra]
    if smoke:
        argv += ["--models", "mlp", "-f", "onnxruntime", "--iter", "5", "--min-time", "0"]
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - began
    if proc.returncode not in (0, 1):
        raise SystemExit(f"run {index} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    print(f"run {index}: {wall:.0f} s", flush=True)
    return out, wall


def _load(directory: Path) -> dict[str, Result]:
    results = {}
    for path in sorted(directory.rglob("*.json")):
        result = Result.from_dict(json.loads(path.read_text()))
        if result.ok and LATENCY_KEY in result.summaries:
            results[result.identity.key] = result
    return results


def _latencies_ms(result: Result) -> tuple[list[float], dict[int, list[float]]]:
    pooled: list[float] = []
    by_process: dict[int, list[float]] = {}
    for sample in result.samples:
        if sample.key != LATENCY_KEY:
            continue
        value = convert(sample.value, sample.unit, "ms")
        if value is not None:
            pooled.append(value)
            by_process.setdefault(sample.repetition, []).append(value)
    return pooled, by_process


def _p50_ms(result: Result) -> float:
    summary = result.summaries[LATENCY_KEY]
    return float(convert(summary.p50, summary.unit, "ms") or math.nan)


def _interval_ms(result: Result) -> tuple[float, float]:
    summary = result.summaries[LATENCY_KEY]
    return (float(convert(summary.ci_low, summary.unit, "ms") or math.nan),
            float(convert(summary.ci_high, summary.unit, "ms") or math.nan))


def _ratios(results: dict[str, Result]) -> tuple[dict[str, float], dict[str, float]]:
    """Per cell: the paired ratio to its model's fastest, and the plain ratio of p50s."""
    ordered = list(results.values())
    cells = matrix_cells(ordered)
    paired = fastest_ratios(cells)
    best = {}
    for cell in cells:
        if cell.p50:
            best[cell.model] = min(best.get(cell.model, math.inf), cell.p50)
    by_key_paired, by_key_plain = {}, {}
    for result, cell in zip(ordered, cells, strict=True):
        ratio = paired.get((cell.model, cell.label))
        if ratio is not None and cell.p50:
            by_key_paired[result.identity.key] = ratio.value
            by_key_plain[result.identity.key] = cell.p50 / best[cell.model]
    return by_key_paired, by_key_plain


def _pair(before: dict[str, Result], after: dict[str, Result]) -> dict[str, Any]:
    keys = sorted(set(before) & set(after))
    covered_now = covered_old = flags_now = flags_old = 0
    changes, cells = [], []
    paired_before, plain_before = _ratios({k: before[k] for k in keys})
    paired_after, plain_after = _ratios({k: after[k] for k in keys})
    for key in keys:
        a, b = before[key], after[key]
        p50_a, p50_b = _p50_ms(a), _p50_ms(b)
        low, high = _interval_ms(a)
        pooled_a, _ = _latencies_ms(a)
        pooled_b, _ = _latencies_ms(b)
        old_low, old_high = median_ci(pooled_a)
        old_low_b, old_high_b = median_ci(pooled_b)
        now = low <= p50_b <= high
        old = old_low <= p50_b <= old_high
        covered_now += now
        covered_old += old
        change = run_change(a.summaries[LATENCY_KEY].process_p50s,
                            b.summaries[LATENCY_KEY].process_p50s)
        flag_now = bool(change and change.significant)
        flag_old = old_low > old_high_b or old_high < old_low_b
        flags_now += flag_now
        flags_old += flag_old
        changes.append(abs(p50_b / p50_a - 1.0))
        cells.append({"cell": a.identity.label, "p50_ms": [p50_a, p50_b],
                      "interval_ms": [low, high], "old_interval_ms": [old_low, old_high],
                      "covered": now, "old_covered": old, "flag": flag_now,
                      "old_flag": flag_old, "processes": a.summaries[LATENCY_KEY].processes})
    paired_changes = [abs(paired_after[k] / paired_before[k] - 1.0) for k in keys
                      if k in paired_before and k in paired_after]
    plain_changes = [abs(plain_after[k] / plain_before[k] - 1.0) for k in keys
                     if k in plain_before and k in plain_after]
    n = len(keys)
    return {
        "cells": n,
        "coverage": covered_now / n if n else None,
        "covered": covered_now,
        "old_coverage": covered_old / n if n else None,
        "old_covered": covered_old,
        "false_flags": flags_now,
        "old_false_flags": flags_old,
        "p50_change_median": statistics.median(changes) if changes else None,
        "p50_change_max": max(changes) if changes else None,
        "ratio_change_median": statistics.median(paired_changes) if paired_changes else None,
        "ratio_change_max": max(paired_changes) if paired_changes else None,
        "plain_ratio_change_median": statistics.median(plain_changes) if plain_changes else None,
        "plain_ratio_change_max": max(plain_changes) if plain_changes else None,
        "per_cell": cells,
    }


def analyse(directories: Sequence[Path], walls: Sequence[float | None]) -> dict[str, Any]:
    runs = [_load(d) for d in directories]
    pairs = [_pair(a, b) for a, b in zip(runs, runs[1:], strict=False)]
    cells = sum(p["cells"] for p in pairs)

    def total(key: str) -> int:
        return sum(p[key] for p in pairs)

    return {
        "runs": len(runs),
        "run_wall_s": list(walls),
        "cells_compared": cells,
        "coverage": total("covered") / cells if cells else None,
        "old_coverage": total("old_covered") / cells if cells else None,
        "false_flag_rate": total("false_flags") / cells if cells else None,
        "old_false_flag_rate": total("old_false_flags") / cells if cells else None,
        "pairs": pairs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv, repeats=3,
                      repeats_help="back-to-back runs (pairs = runs - 1)", extra=_extra)
    if args.analyse:
        directories, walls = list(args.analyse), [None] * len(args.analyse)
    else:
        runs = 2 if args.smoke else args.repeats
        where = args.keep or Path(tempfile.mkdtemp(prefix="benchlab-repeat-"))
        where.mkdir(parents=True, exist_ok=True)
        directories, walls = [], []
        for index in range(runs):
            out, wall = _one_run(index, where, where / "results.db", args.run_arg, args.smoke)
            directories.append(out)
            walls.append(wall)
    figures = analyse(directories, walls)
    print(f"cells compared: {figures['cells_compared']}; next run's p50 inside the interval: "
          f"{figures['coverage']:.0%} (before: {figures['old_coverage']:.0%}); false flags: "
          f"{figures['false_flag_rate']:.1%} (before: {figures['old_false_flag_rate']:.1%})")
    for i, pair in enumerate(figures["pairs"]):
        print(f"  runs {i}→{i + 1}: covered {pair['covered']}/{pair['cells']} (before "
              f"{pair['old_covered']}), flags {pair['false_flags']} (before "
              f"{pair['old_false_flags']}), p50 change median {pair['p50_change_median']:.1%} "
              f"max {pair['p50_change_max']:.1%}, × fastest change median "
              f"{pair['ratio_change_median']:.1%} max {pair['ratio_change_max']:.1%}")
    path = write_result("repeatability", args, figures)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
