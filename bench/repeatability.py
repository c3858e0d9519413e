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
  runs, under its rule now (:func:`benchlab.stats.runstats.run_change`) and under the old one
  (disjoint pooled intervals);
* the wall time of each run.

Each run also measures the other half of the dashboard's promise, a known effect: MobileNetV2's
ONNX file and a copy with identity MatMuls (1000×1000, outputs unchanged) appended to its
logits, two more cells of the same run on ONNX Runtime (one intra-op thread, whose processes
run at one level; with two threads they jump between levels 50% apart on this VM) with the zoo's
default test. The effect
is their paired ratio over every round of every run; each consecutive pair of runs gives one
real change (the original, then the slowed copy: it must be flagged), and the two cells count
among the identical ones like every other.

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
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402

from benchlab.report.matrix import cell_of, fastest_ratios, matrix_cells  # noqa: E402
from benchlab.harness.rounds import contest_key  # noqa: E402
from benchlab.stats.runstats import run_change  # noqa: E402
from benchlab.schema.result import LATENCY_KEY, Result  # noqa: E402
from benchlab.stats.summary import median_ci  # noqa: E402
from benchlab.schema.units import convert  # noqa: E402


#: Other confidence levels of the between-runs test, reported beside the rule's own.
SENSITIVITY = (0.9, 0.95, 0.98, 0.99)
#: A file in each run's directory holding the run's start (seconds since the epoch).
STARTED = "started.txt"


def _extra(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--analyse", nargs="+", type=Path, default=None,
                        help="JSON directories of earlier runs, in order; nothing is run")
    parser.add_argument("--walls", type=float, nargs="+", default=None,
                        help="with --analyse: the runs' wall times in seconds, for the record")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each run's JSON directory under here")
    parser.add_argument("--run-arg", action="append", default=[],
                        help="extra argument for every benchlab run (repeatable)")
    parser.add_argument("--matmuls", type=int, default=8,
                        help="identity MatMuls appended to the slowed copy (0: no such cells)")
    parser.add_argument("--baseline-arg", action="append", default=None,
                        help="also run this design (its benchlab run arguments, repeatable) "
                             "between the runs, one after each, and analyse it apart: two "
                             "designs measured in the same stretch of the machine's day")
    parser.add_argument("--analyse-baseline", nargs="+", type=Path, default=None,
                        help="with --analyse: the baseline design's JSON directories")


def _one_run(index: int, where: Path, db: Path, extra: Sequence[str], smoke: bool,
             specs: Sequence[Path]) -> tuple[Path, float]:
    out = where / f"run{index}"
    argv = [sys.executable, "-m", "benchlab", "run", "--db", str(db), "--json-dir", str(out),
            "-q", *extra, *map(str, specs)]
    if smoke:
        argv += ["--models", "mlp", "-f", "onnxruntime", "--iter", "5", "--min-time", "0",
                 "--repeat", "3"]
    elif specs:
        argv += ["--models", "default"]
    began = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    # When the run started, for the first cell's time on screen (its JSON file's mtime).
    (out / STARTED).write_text(repr(time.time()))
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


def _pair(before: dict[str, Result], after: dict[str, Result],
          earlier: Sequence[dict[str, Result]] = ()) -> dict[str, Any]:
    """Run ``before`` against the next run ``after``; ``earlier`` runs are the flag rule's
    history (oldest first)."""
    from benchlab.lab.flags import FLAG_HISTORY, changed

    keys = sorted(set(before) & set(after))
    covered_now = covered_old = flags_now = flags_old = 0
    by_level = {str(level): 0 for level in SENSITIVITY}
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
        history = [run[key].summaries[LATENCY_KEY] for run in earlier if key in run]
        flag_now = changed(a.summaries[LATENCY_KEY], b.summaries[LATENCY_KEY],
                           history[-FLAG_HISTORY:])
        for level in SENSITIVITY:
            other = run_change(a.summaries[LATENCY_KEY].process_p50s,
                               b.summaries[LATENCY_KEY].process_p50s, level=level)
            by_level[str(level)] += bool(other and other.significant)
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
        "false_flags_at_level": by_level,
        "old_false_flags": flags_old,
        "p50_change_median": statistics.median(changes) if changes else None,
        "p50_change_max": max(changes) if changes else None,
        "ratio_change_median": statistics.median(paired_changes) if paired_changes else None,
        "ratio_change_max": max(paired_changes) if paired_changes else None,
        "plain_ratio_change_median": statistics.median(plain_changes) if plain_changes else None,
        "plain_ratio_change_max": max(plain_changes) if plain_changes else None,
        "per_cell": cells,
    }


def _contest_ratios(results: dict[str, Result]) -> dict[str, Any]:
    """Per cell key: its paired ratio to the fastest of its contest (model, test, device)."""
    groups: dict[Hashable, list[Result]] = {}
    for result in results.values():
        groups.setdefault(contest_key(result.identity), []).append(result)
    out: dict[str, Any] = {}
    for group in groups.values():
        cells = [cell_of(r) for r in group]
        ratios = fastest_ratios(cells)
        for result, cell in zip(group, cells, strict=True):
            out[result.identity.key] = ratios.get((cell.model, cell.label))
    return out


def run_figures(results: dict[str, Result], directory: Path) -> dict[str, Any]:
    """One run's own figures: interval widths, decided ratios, warnings, processes, the
    first cell's time."""
    widths = sorted(r.summaries[LATENCY_KEY].ci_rel_halfwidth for r in results.values())
    ratios = _contest_ratios(results)
    others = [r for r in ratios.values() if r is not None and r.rounds >= 2]
    decided = sum(r.verdict() == "decided" for r in others)
    ties = sum(r.verdict() == "tie" for r in others)
    warned = sum(bool(r.summaries[LATENCY_KEY].warnings) for r in results.values())
    processes = [r.repetitions for r in results.values()]
    reasons: dict[str, int] = {}
    for r in results.values():
        key = (r.stop_reason.value if r.stop_reason else "none")
        reasons[key] = reasons.get(key, 0) + 1
    first = None
    started = directory / STARTED
    if started.is_file():
        stamps = [p.stat().st_mtime for p in directory.rglob("*.json")]
        if stamps:
            first = min(stamps) - float(started.read_text())
    return {
        "cells": len(results),
        "median_halfwidth": widths[len(widths) // 2] if widths else None,
        "quartile_halfwidths": [widths[len(widths) // 4], widths[(3 * len(widths)) // 4]]
        if widths else None,
        "ratios": len(others), "ratios_decided": decided, "ratios_tied": ties,
        "cells_warned": warned,
        "processes_median": statistics.median(processes) if processes else None,
        "processes_total": sum(processes),
        "stop_reasons": reasons,
        "first_cell_s": first,
    }


def ranking_flips(before: dict[str, Result], after: dict[str, Result]) -> tuple[int, int]:
    """(flips, pairs): pairs of backends of one contest whose p50 order differs between two
    runs."""
    keys = set(before) & set(after)
    groups: dict[Hashable, list[str]] = {}
    for key in keys:
        groups.setdefault(contest_key(before[key].identity), []).append(key)
    flips = pairs = 0
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                pairs += 1
                flips += (_p50_ms(before[a]) < _p50_ms(before[b])) != (
                    _p50_ms(after[a]) < _p50_ms(after[b]))
    return flips, pairs


def analyse(directories: Sequence[Path], walls: Sequence[float | None]) -> dict[str, Any]:
    runs = [_load(d) for d in directories]
    pairs = [_pair(runs[i], runs[i + 1], runs[:i]) for i in range(len(runs) - 1)]
    cells = sum(p["cells"] for p in pairs)
    per_run = [run_figures(run, d) for run, d in zip(runs, directories, strict=True)]
    flips = [ranking_flips(runs[i], runs[i + 1]) for i in range(len(runs) - 1)]
    all_widths = sorted(r.summaries[LATENCY_KEY].ci_rel_halfwidth for run in runs
                        for r in run.values())

    def total(key: str) -> int:
        return sum(p[key] for p in pairs)

    return {
        "false_flags_at_level": {str(level): sum(p["false_flags_at_level"][str(level)]
                                                 for p in pairs) for level in SENSITIVITY},
        "runs": len(runs),
        "run_wall_s": list(walls),
        "cells_compared": cells,
        "coverage": total("covered") / cells if cells else None,
        "old_coverage": total("old_covered") / cells if cells else None,
        "false_flag_rate": total("false_flags") / cells if cells else None,
        "old_false_flag_rate": total("old_false_flags") / cells if cells else None,
        "median_halfwidth": all_widths[len(all_widths) // 2] if all_widths else None,
        "ranking_flips": sum(f for f, _ in flips),
        "ranking_pairs": sum(p for _, p in flips),
        "per_run": per_run,
        "pairs": pairs,
    }


def _slowed_pair(where: Path, matmuls: int) -> tuple[Path, Path, list[int]]:
    """MobileNetV2's ONNX export and a copy that does ``matmuls`` identity MatMuls more."""
    import onnx
    from onnx import helper, numpy_helper

    from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
    from benchlab.zoo import export_models

    (export,) = export_models(["mobilenet_v2"], ArtifactCache(default_cache_dir()))
    original = Path(export.files["onnx"][0])
    model = onnx.load(str(original))
    graph = model.graph
    output = graph.output[0].name
    width = graph.output[0].type.tensor_type.shape.dim[-1].dim_value
    eye = numpy_helper.from_array(np.eye(width, dtype=np.float32), "benchlab_identity")
    graph.initializer.append(eye)
    last = output
    for i in range(matmuls):
        name = output if i == matmuls - 1 else f"benchlab_slow_{i}"
        node = helper.make_node("MatMul", [f"{last}_pre" if i == 0 else last,
                                           "benchlab_identity"], [name])
        last = name
        graph.node.append(node)
    # The model's own last node now writes {output}_pre, which the chain reads.
    for node in graph.node[:-matmuls]:
        node.output[:] = [f"{output}_pre" if o == output else o for o in node.output]
    slowed = where / "mobilenet_v2_slowed.onnx"
    onnx.save(model, str(slowed))
    shape = [d.dim_value or 1 for d in graph.input[0].type.tensor_type.shape.dim]
    return original, slowed, shape


def _spec(path: Path, name: str, model: Path, input_name: str, shape: list[int]) -> Path:
    spec = {"model": {"name": name, "format": "onnx", "framework": "onnxruntime",
                      "files": {"model": {"location": str(model), "md5": None}}},
            "tests": [{"identifier": "default", "warmup": 5, "iter": 30, "min_time": 0.3,
                       "repeat": 5, "threads": 1,
                       "inputs": {input_name: {"shapes": [shape]}}}]}
    path.write_text(json.dumps(spec))
    return path


def slowdown_specs(where: Path, matmuls: int) -> list[Path]:
    """Spec files of the known-slowdown pair (see the module's documentation)."""
    import onnx

    original, slowed, shape = _slowed_pair(where, matmuls)
    input_name = onnx.load(str(original), load_external_data=False).graph.input[0].name
    return [_spec(where / "original.json", "known_original", original, input_name, shape),
            _spec(where / "slowed.json", "known_slowed", slowed, input_name, shape)]


def known_slowdown(directories: Sequence[Path]) -> dict[str, Any] | None:
    """The known-effect cells of each run: the effect, and whether the rule flags it."""
    from benchlab.lab.flags import changed
    from benchlab.stats.runstats import paired_ratio

    pairs = []
    for directory in directories:
        by_name = {r.identity.model_name: r.summaries[LATENCY_KEY]
                   for r in _load(directory).values()}
        if "known_original" in by_name and "known_slowed" in by_name:
            pairs.append((by_name["known_original"], by_name["known_slowed"]))
    if len(pairs) < 2:
        return None
    rounds_a = [v for a, _ in pairs for v in a.process_p50s]
    rounds_b = [v for _, b in pairs for v in b.process_p50s]
    effect = paired_ratio(rounds_a, rounds_b)
    originals = [a for a, _ in pairs]
    real = [changed(pairs[i][0], pairs[i + 1][1], originals[:i]) for i in range(len(pairs) - 1)]
    at_level = {}
    for level in SENSITIVITY:
        found = [run_change(pairs[i][0].process_p50s, pairs[i + 1][1].process_p50s, level=level)
                 for i in range(len(pairs) - 1)]
        at_level[str(level)] = sum(bool(c and c.significant) for c in found)
    return {
        "effect": effect.value - 1.0,
        "effect_interval": [(effect.low or math.nan) - 1.0, (effect.high or math.nan) - 1.0],
        "effect_rounds": effect.rounds,
        "per_run_effect": [paired_ratio(a.process_p50s, b.process_p50s).value - 1.0
                           for a, b in pairs],
        "p50_ms": [[a.p50, b.p50] for a, b in pairs],
        "real_changes_flagged": sum(real),
        "real_changes": len(real),
        "real_changes_flagged_at_level": at_level,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv, repeats=3,
                      repeats_help="back-to-back runs (pairs = runs - 1)", extra=_extra)
    baseline_dirs: list[Path] = list(args.analyse_baseline or [])
    baseline_walls: list[float | None] = [None] * len(baseline_dirs)
    if args.analyse:
        directories = list(args.analyse)
        walls = list(args.walls) if args.walls else [None] * len(directories)
    else:
        runs = 2 if args.smoke else args.repeats
        where = args.keep or Path(tempfile.mkdtemp(prefix="benchlab-repeat-"))
        where.mkdir(parents=True, exist_ok=True)
        directories, walls = [], []
        specs = slowdown_specs(where, args.matmuls) if args.matmuls and not args.smoke else []
        for index in range(runs):
            out, wall = _one_run(index, where, where / "results.db", args.run_arg, args.smoke,
                                 specs)
            directories.append(out)
            walls.append(wall)
            if args.baseline_arg is not None and index < runs - 1:
                out, wall = _one_run(index, where / "baseline", where / "baseline.db",
                                     args.baseline_arg, args.smoke, specs)
                baseline_dirs.append(out)
                baseline_walls.append(wall)
    figures = analyse(directories, walls)
    known = known_slowdown(directories)
    if known is not None:
        figures["known_slowdown"] = known
    print(f"cells compared: {figures['cells_compared']}; next run's p50 inside the interval: "
          f"{figures['coverage']:.0%} (before: {figures['old_coverage']:.0%}); false flags: "
          f"{figures['false_flag_rate']:.1%} (before: {figures['old_false_flag_rate']:.1%})")
    for i, pair in enumerate(figures["pairs"]):
        print(f"  runs {i}→{i + 1}: covered {pair['covered']}/{pair['cells']} (before "
              f"{pair['old_covered']}), flags {pair['false_flags']} (before "
              f"{pair['old_false_flags']}), p50 change median {pair['p50_change_median']:.1%} "
              f"max {pair['p50_change_max']:.1%}, × fastest change median "
              f"{pair['ratio_change_median']:.1%} max {pair['ratio_change_max']:.1%}")
    for i, run in enumerate(figures["per_run"]):
        first = run["first_cell_s"]
        print(f"  run {i}: interval median ±{run['median_halfwidth']:.1%}; × fastest decided "
              f"{run['ratios_decided']}, ≈ within ±3% {run['ratios_tied']}, of "
              f"{run['ratios']}; {run['cells_warned']}/{run['cells']} cells warned; "
              f"{run['processes_total']} processes (median {run['processes_median']}); first "
              f"cell {'-' if first is None else f'{first:.0f} s'}; {run['stop_reasons']}")
    print(f"all runs: interval median ±{figures['median_halfwidth']:.1%}; ranking flips "
          f"{figures['ranking_flips']}/{figures['ranking_pairs']}")
    if known is not None:
        print(f"known slowdown: {known['effect']:+.1%} [{known['effect_interval'][0]:+.1%}, "
              f"{known['effect_interval'][1]:+.1%}] over {known['effect_rounds']} rounds; "
              f"flagged {known['real_changes_flagged']} of {known['real_changes']} real changes")
    if len(baseline_dirs) >= 2:
        base = analyse(baseline_dirs, baseline_walls)
        figures["baseline"] = base
        print(f"baseline design ({' '.join(args.baseline_arg or [])}): coverage "
              f"{base['coverage']:.0%} of {base['cells_compared']}, interval median "
              f"±{base['median_halfwidth']:.1%}, ranking flips {base['ranking_flips']}/"
              f"{base['ranking_pairs']}, walls {[round(w or 0) for w in baseline_walls]}")
        for i, run in enumerate(base["per_run"]):
            print(f"  baseline run {i}: ±{run['median_halfwidth']:.1%}; decided "
                  f"{run['ratios_decided']}, ≈ {run['ratios_tied']}, of {run['ratios']}; "
                  f"{run['cells_warned']}/{run['cells']} warned; {run['processes_total']} "
                  f"processes; first cell {run['first_cell_s'] or 0:.0f} s")
    path = write_result("repeatability", args, figures)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
