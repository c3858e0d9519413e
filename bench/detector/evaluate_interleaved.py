"""Process pairs, in-process and lock-step side by side: replays of real recordings of one day.

For each recording of the same spin work loop on this machine (``recorded_spin.json``:
fresh processes, ``record.py``; ``recorded_inprocess.json`` and ``recorded_lockstep.json``:
A/A interleaved sessions, ``record_interleaved.py``; and, beside them, lock-step sessions of the
compiled twin ``spin.c``, ``recorded_lockstep_c.json``), this measures by replay:

1. the A/A false-positive rate before and after verify;
2. the power at injected slowdowns of 1, 2 and 5%;
3. the coverage of the 95% interval of the change, and its bias;

under three budgets: looks (20, 40), i.e. at most 40 processes per side before verify (the
issue's budget); the library's default looks (20, 40, 80); and looks (20, 40) with no minimum
effect (what the noise alone would allow). Minimum effect 1% (except that last one), alpha
0.05 and verify on, as ``CompareSettings`` has them.

A replayed comparison draws its observations with replacement from the recording: ABBA pairs
of adjacent recorded processes for process pairs (``sources.ReplaySource``, as
``evaluate.py``), whole recorded sessions for the interleaved modes (``sources.SessionReplay``,
the side loaded/started first alternating as the protocol has it). The slowdown multiplies
every call of the treatment by 1 + δ; a session's estimate is then recomputed by the library
(``Session.estimate``). The looks, the decision (``decide_log_ratios``), Benjamini-Hochberg and
the verify re-run (an independent second draw through the same looks) are ``detectors.py``'s
``run_protocol``, the flow of ``compare_jobs``. Results: ``results_interleaved.json``.

    .venv/bin/python bench/detector/evaluate_interleaved.py
    .venv/bin/python bench/detector/evaluate_interleaved.py --smoke --out /tmp/i.json

Smoke numbers mean nothing; they only keep the script working.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description

from _common import provenance
from detectors import run_benchlab, run_protocol
from evaluate import AA_FACTOR, pct, summarise_runs
from record_interleaved import cpu_seconds
from sources import (
    INPROCESS_RECORDING,
    LOCKSTEP_C_RECORDING,
    LOCKSTEP_RECORDING,
    RECORDING,
    Recording,
    ReplaySource,
    SessionRecording,
    SessionReplay,
    robust_sd,
)

from benchlab.ab.sides import CompareSettings

SLOWDOWNS = (0.0, 0.01, 0.02, 0.05)
BUDGETS = {
    "looks_20_40": CompareSettings(looks=(20, 40)),
    "default": CompareSettings(),
    "looks_20_40_no_min_effect": CompareSettings(looks=(20, 40), min_effect=0.0),
}
PRIMARY = "looks_20_40"
# From the issue ("see a 2% change on a noisy shared machine"), within 40 processes per side;
# the before-verify and 5% targets are benchlab's own design goals (docs/detector.md).
TARGETS = {
    "fpr_before_verify": ("<=", 0.05),
    "fpr_after_verify": ("<=", 0.005),
    "power_1pct": (">=", 0.50),
    "power_2pct": (">=", 0.90),
    "power_5pct": (">=", 0.95),
    "coverage95": (">=", 0.93),
}
# What the issue quotes for this machine: the SD of ABBA pair log-ratios, and of an
# interleaved A/A session's estimate.
ISSUE_SD = {"process_pairs": 0.21, "interleaved": 0.028}


class _Mode:
    """One recording and how to replay a comparison from it."""

    def __init__(self, name: str, noise: dict[str, Any], processes_per_session: str,
                 replay: Any) -> None:
        self.name, self.noise = name, noise
        self.processes_per_session = processes_per_session
        self.replay = replay  # (slowdown, rng, settings) -> BenchlabRun


def process_pairs_mode(path: Path) -> _Mode:
    """``record.py``'s fresh processes, replayed as ABBA pairs of adjacent processes."""
    recording = Recording.load(path)
    source = ReplaySource(recording)
    noise = recording.describe()
    pairs = np.diff(np.log(recording.medians))  # adjacent processes: what one ABBA pair sees
    noise["abba_pair_log_ratio_sd"] = noise["adjacent_pair_log_ratio_sd"]
    noise["abba_pair_log_ratio_sd_robust"] = robust_sd(pairs)
    noise["wall_s"] = recording.meta.get("wall_s")
    return _Mode("process-pairs", noise, "1 per side per pair",
                 lambda slowdown, rng, settings: run_benchlab(source, slowdown, rng, settings))


def session_modes(path: Path) -> list[_Mode]:
    """``record_interleaved.py``'s A/A sessions, replayed whole: on the wall clock (what
    ``compare`` decides on by default) and, where the calls' CPU times were recorded, on CPU
    time too (the sessions' CPU clock)."""
    recording = SessionRecording.load(path)
    per = "1 holding both sides" if recording.mode == "in-process" else "1 per side"
    clocks = ["wall"] + (["cpu"] if recording.control_cpu is not None else [])
    modes = []
    for clock in clocks:
        replay = SessionReplay(recording, SLOWDOWNS, clock)

        def run(slowdown: float, rng: np.random.Generator, settings: CompareSettings,
                replay: SessionReplay = replay) -> Any:
            return run_protocol(lambda first, count: replay.draw(rng, slowdown, first, count),
                                settings)

        modes.append(_Mode(replay.name, recording.describe(clock), per, run))
    return modes


def target_checks(cells: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets against one mode's cells of the primary budget."""
    after = {k: c["regression_after_verify"]["rate"] for k, c in cells.items()}
    values = {
        "fpr_before_verify": cells["0"]["regression_before_verify"]["rate"],
        "fpr_after_verify": after["0"],
        "power_1pct": after["0.01"],
        "power_2pct": after["0.02"],
        "power_5pct": after["0.05"],
        "coverage95": min(c["coverage95"]["rate"] for c in cells.values()),
    }
    out = []
    for name, (op, goal) in TARGETS.items():
        value = values[name]
        met = value <= goal if op == "<=" else value >= goal
        out.append({"measure": name, "target": f"{op} {goal:g}", "value": value, "met": met,
                    "margin": (goal - value) if op == "<=" else (value - goal)})
    return out


def evaluate_mode(mode: _Mode, index: int, replicates: int, seed: int) -> dict[str, Any]:
    """Every budget and slowdown cell of one mode, each with its own seeded stream."""
    budgets = {}
    for b, (budget, settings) in enumerate(BUDGETS.items()):
        cells = {}
        for j, slowdown in enumerate(SLOWDOWNS):
            n = replicates * AA_FACTOR if slowdown == 0 else replicates
            rng = np.random.default_rng([seed, index, b, j])
            started = time.perf_counter()
            runs = [mode.replay(slowdown, rng, settings) for _ in range(n)]
            cell = summarise_runs(runs, slowdown, settings)
            # summarise_runs counts two processes per pair; an in-process session is one.
            if mode.processes_per_session.startswith("1 holding"):
                cell["mean_processes"] /= 2
            cell["slowdown"], cell["replicates"] = slowdown, n
            cell["seconds"] = round(time.perf_counter() - started, 2)
            cells[f"{slowdown:g}"] = cell
        budgets[budget] = {
            "settings": {"looks": list(settings.looks), "min_effect": settings.min_effect,
                         "alpha": settings.alpha, "verify": settings.verify},
            "cells": cells,
            "targets": target_checks(cells),
        }
    return {"noise": mode.noise, "processes_per_session_or_pair": mode.processes_per_session,
            "budgets": budgets}


def sd_row(name: str, noise: dict[str, Any]) -> tuple[float, float]:
    """The SD the decision sees per observation, plain and robust."""
    if name.startswith("process-pairs"):
        return noise["abba_pair_log_ratio_sd"], noise["abba_pair_log_ratio_sd_robust"]
    return noise["session_estimate_sd"], noise["session_estimate_sd_robust"]


def table(record: dict[str, Any], budget: str = PRIMARY) -> str:
    """The side-by-side Markdown table of docs/detector.md for one budget."""
    modes = record["modes"]
    lines = ["| measure | target | " + " | ".join(modes) + " |",
             "|---|---|" + "---|" * len(modes)]

    def row(label: str, target: str, cells: list[str]) -> None:
        lines.append(f"| {label} | {target} | " + " | ".join(cells) + " |")

    row("SD per observation (pair / session), robust", "",
        [f"{100 * sd_row(n, m['noise'])[0]:.2f}% ({100 * sd_row(n, m['noise'])[1]:.2f}%)"
         for n, m in modes.items()])
    checks = {n: {t["measure"]: t for t in m["budgets"][budget]["targets"]}
              for n, m in modes.items()}
    labels = {"fpr_before_verify": "A/A false positives before verify",
              "fpr_after_verify": "A/A false positives after verify",
              "power_1pct": "power at 1%", "power_2pct": "power at 2%",
              "power_5pct": "power at 5%", "coverage95": "95% CI coverage (worst cell)"}
    for measure, label in labels.items():
        cells = []
        for n in modes:
            t = checks[n][measure]
            k = "met" if t["met"] else "missed"
            cells.append(f"**{k}** {pct(t['value'], 2)} ({100 * t['margin']:+.2f})")
        row(label, next(iter(checks.values()))[measure]["target"], cells)
    row("mean sessions or pairs (before verify), at 2%", "",
        [f"{m['budgets'][budget]['cells']['0.02']['mean_pairs']:.0f}" for m in modes.values()])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse the options, replay every recording found, write the JSON, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="few replicates: keeps it working")
    parser.add_argument("--replicates", type=int, default=None,
                        help="replicates per power cell (A/A cells get 4x); "
                             "default 2000, 10 with --smoke")
    parser.add_argument("--seed", type=int, default=20261123)
    parser.add_argument("--process-pairs", type=Path, default=RECORDING)
    parser.add_argument("--inprocess", type=Path, default=INPROCESS_RECORDING)
    parser.add_argument("--lockstep", type=Path, default=LOCKSTEP_RECORDING)
    parser.add_argument("--lockstep-c", type=Path, default=LOCKSTEP_C_RECORDING,
                        help="lock-step sessions of the compiled spin.c (evaluated if present)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    replicates = args.replicates or (10 if args.smoke else 2000)
    out = args.out or HERE / ("smoke-results_interleaved.json" if args.smoke
                              else "results_interleaved.json")

    modes = [process_pairs_mode(args.process_pairs), *session_modes(args.inprocess)]
    missing = []
    for path in (args.lockstep, args.lockstep_c):
        if path.exists():
            modes.extend(session_modes(path))
        else:
            missing.append(f"{path.name} not recorded")
    started, cpu = time.perf_counter(), cpu_seconds()
    results = {}
    for i, mode in enumerate(modes):
        results[mode.name] = evaluate_mode(mode, i, replicates, args.seed)
        print(f"{mode.name}: done after {time.perf_counter() - started:.0f} s", file=sys.stderr)
    record = {
        **provenance("detector-interleaved"),
        "smoke": bool(args.smoke),
        "seed": args.seed,
        "replicates": {"power_cells": replicates, "aa_cells": replicates * AA_FACTOR},
        "targets": {k: f"{op} {goal:g}" for k, (op, goal) in TARGETS.items()},
        "primary_budget": PRIMARY,
        "issue_sd": ISSUE_SD,
        "missing": missing,
        "modes": results,
        "simulation_seconds": round(time.perf_counter() - started, 1),
        "simulation_cpu_seconds": round(cpu_seconds() - cpu, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    for budget in BUDGETS:
        print(f"\n{budget}:\n" + table(record, budget))
    for line in missing:
        print(f"not evaluated: {line}")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
