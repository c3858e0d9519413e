"""Real end-to-end ``compare_jobs`` runs in the interleaved modes, at known slowdowns.

- ``in-process``: the framework-configuration pair: the spin runner backend
  (``tests/ab/spin_backend.py``, spin.py's loop) as control, the same with the framework option
  ``slowdown`` = X as treatment; ``compare`` picks in-process for it.
- ``lockstep``: the compiled program ``examples/ab/spin.c`` (``cc -O2`` with
  ``benchlab.protocol.step``'s header) through ``examples/ab/spin.yaml``, control ``spin --slowdown 0``,
  treatment ``spin --slowdown X``; ``compare`` picks lock-step for it.

Default ``CompareSettings`` (looks 20, 40, 80 sessions, verify on, minimum effect 1%, alpha
0.05). Runs go round the slowdowns (0, 1, 2, 5%) so that a drift of the machine during the
series falls on every cell. Per cell: verdict counts, median change, wall time.

    .venv/bin/python bench/detector/endtoend_interleaved.py --runs 10 --modes in-process
    .venv/bin/python bench/detector/endtoend_interleaved.py --runs 10 --modes lockstep
    .venv/bin/python bench/detector/endtoend_interleaved.py --smoke --out /tmp/e.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description

from _common import provenance
from endtoend import _verdict
from record_interleaved import cpu_seconds
from spinjobs import build_spin_c, program_jobs, program_side, runner_jobs, runner_side

from benchlab.ab import CompareSettings, compare_jobs
from benchlab.schema.comparison import Mode
from benchlab.spec.artifacts import ArtifactCache
from benchlab.schema.result import LATENCY_KEY
from benchlab.targets.host import HostTarget

SLOWDOWNS = (0.0, 0.01, 0.02, 0.05)
MODES = (Mode.IN_PROCESS.value, Mode.LOCKSTEP.value)


def one_compare(mode: str, slowdown: float, tmp: Path, binary: str | None,
                settings: CompareSettings) -> dict[str, Any]:
    """One real comparison of the spin pair in ``mode`` (chosen by compare itself)."""
    cache = ArtifactCache(tmp / "cache")
    if mode == Mode.IN_PROCESS.value:
        jobs = runner_jobs(tmp)
        control, treatment = runner_side("A", 0.0), runner_side(f"A+{slowdown:.0%}", slowdown)
    else:
        assert binary is not None
        jobs = program_jobs(tmp)
        control = program_side("spin", binary, 0.0)
        treatment = program_side(f"spin +{slowdown:.0%}", binary, slowdown)
    started, cpu = time.perf_counter(), cpu_seconds()
    comparison = compare_jobs(jobs, control, treatment, HostTarget(), cache, settings)
    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    if comparison.failed:
        raise SystemExit("; ".join(comparison.failed))
    (latency,) = [m for m in comparison.metrics if m.metric == LATENCY_KEY]
    e = latency.estimate
    return {
        "mode": mode, "measured_in": latency.mode.value, "slowdown": slowdown,
        "sessions": e.n_pairs, "change": e.change, "ci_low": e.ci_low, "ci_high": e.ci_high,
        "ci_level": e.ci_level, "p_value": e.p_value, "outcome": e.outcome.value,
        "verified": latency.verified, "verdict": _verdict(e.outcome, latency.verified),
        "declared_regression": latency in comparison.regressions,
        "notes": list(comparison.notes), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
    }


def cells(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode and slowdown: verdict counts, median change, sessions and wall time."""
    out: dict[str, Any] = {}
    for mode in dict.fromkeys(r["mode"] for r in runs):
        for slowdown in SLOWDOWNS:
            group = [r for r in runs if r["mode"] == mode and r["slowdown"] == slowdown]
            if not group:
                continue
            out.setdefault(mode, {})[f"{slowdown:g}"] = {
                "runs": len(group),
                "verdicts": dict(Counter(r["verdict"] for r in group)),
                "declared_regressions": sum(r["declared_regression"] for r in group),
                "median_change": statistics.median(r["change"] for r in group),
                "median_sessions": statistics.median(r["sessions"] for r in group),
                "wall_s": {"median": statistics.median(r["wall_s"] for r in group),
                           "total": round(sum(r["wall_s"] for r in group), 1)},
                "measured_in": sorted({r["measured_in"] for r in group}),
            }
    return out


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run the compares round the slowdowns, write the JSON, summarise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None,
                        help="compares per mode and slowdown (default 10; 1 with --smoke)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated: in-process, lockstep")
    parser.add_argument("--slowdowns", default=None,
                        help="comma-separated fractions (default 0,0.01,0.02,0.05)")
    parser.add_argument("--max-cpu-minutes", type=float, default=None,
                        help="start no new compare once this much CPU time is spent")
    parser.add_argument("--smoke", action="store_true",
                        help="one compare per mode at 5%% with looks (6,): keeps it working")
    parser.add_argument("--fill", action="store_true",
                        help="keep the runs already in --out and run only the missing ones "
                             "(a series the CPU cap stopped, topped up later)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if unknown := set(modes) - set(MODES):
        raise SystemExit(f"unknown modes: {', '.join(sorted(unknown))}")
    runs_per_cell = args.runs or (1 if args.smoke else 10)
    slowdowns = ([float(s) for s in args.slowdowns.split(",")] if args.slowdowns
                 else [0.05] if args.smoke else list(SLOWDOWNS))
    settings = CompareSettings(looks=(6,)) if args.smoke else CompareSettings()
    # One file per mode when one mode is run (the modes are run at different times).
    stem = "endtoend_" + (modes[0].replace("-", "") if len(modes) == 1 else "interleaved")
    out = args.out or HERE / (f"smoke-{stem}.json" if args.smoke else f"{stem}.json")

    runs: list[dict[str, Any]] = []
    batches: list[dict[str, Any]] = []
    if args.fill and out.exists():
        before = json.loads(out.read_text())
        runs = before["runs"]
        batches = before.get("batches") or [{k: before[k] for k in (
            "command", "date", "wall_s", "cpu_s", "stopped")} | {"compares": len(runs)}]
    done = {(r["mode"], r["slowdown"], r["run"]) for r in runs}
    fresh = 0
    stopped = None
    started, cpu = time.perf_counter(), cpu_seconds()
    with tempfile.TemporaryDirectory(prefix="bench-e2e-interleaved-") as tmp:
        binary = build_spin_c(Path(tmp)) if Mode.LOCKSTEP.value in modes else None
        for index in range(runs_per_cell):
            for mode in modes:
                for slowdown in slowdowns:
                    if (mode, slowdown, index) in done:
                        continue
                    spent = (cpu_seconds() - cpu) / 60
                    if args.max_cpu_minutes is not None and spent >= args.max_cpu_minutes:
                        stopped = (f"stopped after {fresh} compares: {spent:.1f} CPU "
                                   f"minutes spent (cap {args.max_cpu_minutes})")
                        break
                    work = Path(tmp) / f"{mode}-{index}-{slowdown:g}"
                    work.mkdir()
                    when = datetime.now(UTC).isoformat(timespec="seconds")
                    run = one_compare(mode, slowdown, work, binary, settings)
                    run["run"], run["started"] = index, when
                    runs.append(run)
                    fresh += 1
                    print(f"{len(runs)}: {mode} {slowdown:.0%}: {run['verdict']}, change "
                          f"{run['change']:+.2%} [{run['ci_low']:+.2%}, {run['ci_high']:+.2%}],"
                          f" {run['sessions']} sessions, {run['wall_s']} s", file=sys.stderr)
                if stopped:
                    break
            if stopped:
                break
    record = {
        **provenance("endtoend-interleaved"),
        "smoke": bool(args.smoke),
        "settings": {"looks": list(settings.looks), "min_effect": settings.min_effect,
                     "alpha": settings.alpha, "verify": settings.verify},
        "runs_per_cell": runs_per_cell,
        "stopped": stopped,
        "cells": cells(runs),
        "runs": runs,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(cpu_seconds() - cpu, 1),
    }
    # Every invocation that added runs to this file, the last one included.
    record["batches"] = [*batches, {k: record[k] for k in (
        "command", "date", "wall_s", "cpu_s", "stopped")} | {"compares": fresh}]
    out.write_text(json.dumps(record, indent=2) + "\n")
    for mode, by_slowdown in record["cells"].items():
        for key, cell in by_slowdown.items():
            verdicts = ", ".join(f"{v} {n}" for v, n in sorted(cell["verdicts"].items()))
            print(f"{mode} {float(key):.0%}: {verdicts}; median change "
                  f"{cell['median_change']:+.2%}; median {cell['median_sessions']:g} sessions; "
                  f"median {cell['wall_s']['median']:g} s per compare")
    if stopped:
        print(stopped)
    print(f"{record['wall_s']} s wall, {record['cpu_s']} s cpu -> {out}")


if __name__ == "__main__":
    main()
