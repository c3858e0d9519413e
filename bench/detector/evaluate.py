"""How good is benchlab's A/B regression detector, and how does FAI-PEP's detector compare?

For the default budget of ``benchlab compare`` (looks 20/40/80 pairs, minimum effect 1%,
alpha 0.05, verify on) this measures, per noise source:

1. the A/A false-positive rate before and after the verify re-run;
2. the power at injected slowdowns of 1, 2, 5 and 10%;
3. the coverage of the change's confidence interval (95%, and the reported 1 − α/3 one);
4. FAI-PEP's DelayRegressionDetector on the same noise, its false-positive rate and power.

Noise sources (``sources.py``): replays of real spin.py processes recorded on this machine
(``recorded_spin.json``, made once by ``record.py``), resampled in adjacent pairs; and a
synthetic lognormal process noise of σ = 2% and 5%. The slowdown multiplies every iteration of
the treatment's processes. The A/B protocol is the library's own decision code
(``detectors.py``). In full mode, a few real end-to-end ``benchlab.compare`` runs of spin.py
with ``--slowdown 0`` and ``0.05`` are added (``endtoend.py``).

    .venv/bin/python bench/detector/evaluate.py                 # full: results.json
    .venv/bin/python bench/detector/evaluate.py --smoke --out /tmp/d.json

Smoke numbers mean nothing; they only keep the script working.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description

from _common import provenance
from detectors import BenchlabRun, faipep_checks, run_benchlab
from sources import LognormalSource, Recording, ReplaySource, Source

from benchlab.schema.comparison import Outcome
from benchlab.ab.sides import CompareSettings

# 20% and 50% go beyond the brief's 1-10%: they locate where FAI-PEP's detector starts to fire.
SLOWDOWNS = (0.0, 0.01, 0.02, 0.05, 0.10, 0.20, 0.50)
SYNTHETIC_SIGMAS = (0.02, 0.05)
# benchlab's own design goals (docs/detector.md), power at 10% and 1% and bias included.
TARGETS = {
    "fpr_before_verify": ("<=", 0.05),
    "fpr_after_verify": ("<=", 0.005),
    "power_10pct": (">=", 0.99),
    "power_5pct": (">=", 0.95),
    "power_2pct": (">=", 0.80),
    "power_1pct": (">=", 0.30),
    "coverage95": (">=", 0.93),
    "abs_bias": ("<=", 0.005),
}
AA_FACTOR = 4  # A/A cells get 4x the replicates: the after-verify target (0.5%) is a rare event


def rate(k: int, n: int) -> dict[str, Any]:
    """A proportion with its 95% Wilson interval (Monte Carlo error, not process noise)."""
    if n == 0:
        return {"rate": 0.0, "ci95": [0.0, 1.0], "k": 0, "n": 0}
    z = NormalDist().inv_cdf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"rate": p, "ci95": [max(0.0, centre - half), min(1.0, centre + half)], "k": k, "n": n}


def benchlab_cell(source: Source, slowdown: float, replicates: int, rng: np.random.Generator,
                  settings: CompareSettings) -> dict[str, Any]:
    """Run ``replicates`` simulated comparisons and summarise their verdicts and intervals."""
    runs = [run_benchlab(source, slowdown, rng, settings) for _ in range(replicates)]
    return summarise_runs(runs, slowdown, settings)


def summarise_runs(runs: list[BenchlabRun], slowdown: float,
                   settings: CompareSettings) -> dict[str, Any]:
    """Verdict rates, interval coverage and bias of simulated comparisons of one cell."""
    replicates = len(runs)
    outcomes = [r.estimate.outcome for r in runs]
    count = {o: sum(1 for x in outcomes if x is o) for o in Outcome}
    change = np.array([r.estimate.change for r in runs])
    pairs = np.array([r.estimate.n_pairs for r in runs])
    verify_pairs = np.array([r.estimate.n_pairs if r.verified is not None else 0 for r in runs])
    covered95 = sum(1 for r in runs if r.ci95[0] <= slowdown <= r.ci95[1])
    covered_rep = sum(1 for r in runs if r.estimate.ci_low <= slowdown <= r.estimate.ci_high)
    return {
        "regression_before_verify": rate(count[Outcome.REGRESSION], replicates),
        "regression_after_verify": rate(sum(r.declared_regression for r in runs), replicates),
        "improvement": rate(count[Outcome.IMPROVEMENT], replicates),
        "no_change": rate(count[Outcome.NO_CHANGE], replicates),
        "undecided": rate(count[Outcome.UNDECIDED], replicates),
        "coverage95": rate(covered95, replicates),
        "coverage_reported": rate(covered_rep, replicates),
        "reported_ci_level": runs[0].estimate.ci_level,
        "bias": float(np.mean(change) - slowdown),
        "median_error": float(np.median(change) - slowdown),
        "mean_ci95_width": float(np.mean([r.ci95[1] - r.ci95[0] for r in runs])),
        "stopped_at": {str(n): int(np.sum(pairs == n)) for n in settings.looks},
        "verify_variants": {
            name: rate(sum(r.verify_variants.get(name, False) for r in runs), replicates)
            for name in ("looks", "once", "significant")
        },
        "mean_pairs": float(np.mean(pairs)),
        "mean_processes": float(np.mean(2 * (pairs + verify_pairs))),
    }


def faipep_cell(source: Source, slowdown: float, replicates: int,
                rng: np.random.Generator) -> dict[str, Any]:
    """FAI-PEP's check in its two modes: flagged by the first detection, and after verify."""
    checks = faipep_checks(source, slowdown, rng, replicates)
    return {
        kind: {"flagged": rate(int(v["flagged"].sum()), replicates),
               "after_verify": rate(int(v["verified"].sum()), replicates)}
        for kind, v in checks.items()
    }


def target_checks(cells: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of §5.7 against one source's cells: value, met or missed, and by how much."""
    aa = cells["0"]["benchlab"]
    # Coverage and bias are judged over the targeted range (A/A to 10%), not the large
    # slowdowns added only to place FAI-PEP.
    targeted = [c for c in cells.values() if c["slowdown"] <= 0.10]
    values = {
        "fpr_before_verify": aa["regression_before_verify"]["rate"],
        "fpr_after_verify": aa["regression_after_verify"]["rate"],
        "power_10pct": cells["0.1"]["benchlab"]["regression_after_verify"]["rate"],
        "power_5pct": cells["0.05"]["benchlab"]["regression_after_verify"]["rate"],
        "power_2pct": cells["0.02"]["benchlab"]["regression_after_verify"]["rate"],
        "power_1pct": cells["0.01"]["benchlab"]["regression_after_verify"]["rate"],
        "coverage95": min(c["benchlab"]["coverage95"]["rate"] for c in targeted),
        "abs_bias": max(abs(c["benchlab"]["bias"]) for c in targeted),
    }
    out = []
    for name, (op, goal) in TARGETS.items():
        value = values[name]
        met = value <= goal if op == "<=" else value >= goal
        out.append({"measure": name, "target": f"{op} {goal:g}", "value": value, "met": met,
                    "margin": (goal - value) if op == "<=" else (value - goal)})
    return out


def evaluate_source(source: Source, index: int, replicates: int, seed: int,
                    settings: CompareSettings) -> dict[str, Any]:
    """Every slowdown cell of one source, for both detectors, each with its own seeded stream."""
    cells = {}
    for j, slowdown in enumerate(SLOWDOWNS):
        n = replicates * AA_FACTOR if slowdown == 0 else replicates
        started = time.perf_counter()
        cells[f"{slowdown:g}"] = {
            "slowdown": slowdown,
            "replicates": n,
            "benchlab": benchlab_cell(source, slowdown, n,
                                      np.random.default_rng([seed, index, j, 0]), settings),
            "faipep": faipep_cell(source, slowdown, n, np.random.default_rng([seed, index, j, 1])),
        }
        cells[f"{slowdown:g}"]["seconds"] = round(time.perf_counter() - started, 2)
    return {"description": source.description, "cells": cells, "targets": target_checks(cells)}


def pct(value: float, digits: int = 1) -> str:
    """A proportion as a percentage string."""
    return f"{100 * value:.{digits}f}%"


def table(record: dict[str, Any]) -> str:
    """The Markdown table of docs/detector.md: one row per source and slowdown."""
    header = (
        "| source | slowdown | benchlab flagged → after verify | 95% CI cov. | reported CI cov. "
        "| bias (pp) | mean pairs | FAI-PEP diff flagged → after verify "
        "| FAI-PEP raw flagged → after verify |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for name, src in record["sources"].items():
        for cell in src["cells"].values():
            b, f = cell["benchlab"], cell["faipep"]
            lines.append(
                f"| {name} | {pct(cell['slowdown'], 0)} "
                f"| {pct(b['regression_before_verify']['rate'], 2)} → "
                f"{pct(b['regression_after_verify']['rate'], 2)} "
                f"| {pct(b['coverage95']['rate'])} | {pct(b['coverage_reported']['rate'])} "
                f"| {100 * b['bias']:+.2f} | {b['mean_pairs']:.0f} "
                f"| {pct(f['diff']['flagged']['rate'], 2)} → "
                f"{pct(f['diff']['after_verify']['rate'], 2)} "
                f"| {pct(f['raw']['flagged']['rate'], 2)} → "
                f"{pct(f['raw']['after_verify']['rate'], 2)} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run every source (and, in full mode, the real runs), write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true",
                        help="few replicates, no real runs: keeps the script working")
    parser.add_argument("--replicates", type=int, default=None,
                        help="replicates per power cell (A/A cells get 4x); "
                             "default 2000, 30 with --smoke")
    parser.add_argument("--real-runs", type=int, default=None,
                        help="real benchlab.compare runs per slowdown (default 3, 0 with --smoke)")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    replicates = args.replicates or (30 if args.smoke else 2000)
    real_runs = args.real_runs if args.real_runs is not None else (0 if args.smoke else 3)
    out = args.out or HERE / ("smoke-results.json" if args.smoke else "results.json")

    settings = CompareSettings()  # the library's defaults: the budget under evaluation
    recording = Recording.load()
    described = recording.describe()
    sources = [ReplaySource(recording)] + [
        LognormalSource(s, described["within_process_log_sd_robust"],
                        iterations=described["iterations"])
        for s in SYNTHETIC_SIGMAS
    ]
    started = time.perf_counter()
    results = {}
    for i, source in enumerate(sources):
        results[source.name] = evaluate_source(source, i, replicates, args.seed, settings)
        print(f"{source.name}: done after {time.perf_counter() - started:.0f} s", file=sys.stderr)
    simulated_s = time.perf_counter() - started

    end_to_end = None
    if real_runs:
        from endtoend import real_compares

        end_to_end = real_compares(real_runs, settings)

    record = {
        **provenance("detector"),
        "smoke": bool(args.smoke),
        "seed": args.seed,
        "replicates": {"power_cells": replicates, "aa_cells": replicates * AA_FACTOR},
        "settings": {"looks": list(settings.looks), "min_effect": settings.min_effect,
                     "alpha": settings.alpha, "verify": settings.verify},
        "targets": {k: f"{op} {goal:g}" for k, (op, goal) in TARGETS.items()},
        "recording": described,
        "sources": results,
        "simulation_seconds": round(simulated_s, 1),
        "end_to_end": end_to_end,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(table(record))
    for name, src in results.items():
        missed = [f"{t['measure']} {pct(t['value'], 2)} (target {t['target']})"
                  for t in src["targets"] if not t["met"]]
        print(f"{name}: targets missed: {', '.join(missed) or 'none'}")
    if end_to_end:
        for run in end_to_end["runs"]:
            print(f"real compare, slowdown {run['slowdown']:.0%}: {run['verdict']}, change "
                  f"{pct(run['change'], 2)} [{pct(run['ci_low'], 2)}, {pct(run['ci_high'], 2)}]"
                  f", {run['pairs']} pairs, {run['wall_s']:.0f} s")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
