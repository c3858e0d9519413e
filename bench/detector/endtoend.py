"""Real end-to-end ``benchlab.compare`` runs of examples/ab/spin.py with a calibrated slowdown.

The treatment is the same program with ``--slowdown X`` (X more loop work per iteration), so
its true change is about X; the control is ``--slowdown 0``. Runs alternate between slowdown 0
and 0.05 so that a drift of the machine during the series falls on both. These are a handful
of runs, not a rate: they show what the simulated protocol looks like on the real thing.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlab
from benchlab.ab import CompareSettings, Outcome, Side

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "ab" / "spin.yaml"
PROGRAM = REPO / "examples" / "ab" / "spin.py"
SLOWDOWNS = (0.0, 0.05)


def _verdict(outcome: Outcome, verified: bool | None) -> str:
    """The verdict as the report prints it (a regression the re-run did not confirm is not one)."""
    if outcome is Outcome.REGRESSION:
        return "regression (verified)" if verified else "regression not confirmed by verify"
    return outcome.value


def real_compares(runs_per_slowdown: int, settings: CompareSettings) -> dict[str, Any]:
    """``runs_per_slowdown`` compares per slowdown, interleaved; one record per compare."""
    records = []
    with tempfile.TemporaryDirectory(prefix="bench-detector-e2e-") as tmp:
        for index in range(runs_per_slowdown):
            for slowdown in SLOWDOWNS:
                # Absolute paths: each process runs in its own temporary working directory.
                program = f"{sys.executable} {PROGRAM}"
                started = time.perf_counter()
                comparison = benchlab.compare(
                    [SPEC],
                    control=Side("spin", string_map={"program": program}),
                    treatment=Side(f"spin +{slowdown:.0%}",
                                   string_map={"program": f"{program} --slowdown {slowdown}"}),
                    db=Path(tmp) / f"r{index}-{slowdown}.db", cache_dir=Path(tmp) / "cache",
                    settings=settings,
                )
                wall = time.perf_counter() - started
                if comparison.failed:
                    raise SystemExit("; ".join(comparison.failed))
                (latency,) = [m for m in comparison.metrics if m.metric == "NET latency"]
                e = latency.estimate
                records.append({
                    "slowdown": slowdown, "run": index, "pairs": e.n_pairs,
                    "change": e.change, "ci_low": e.ci_low, "ci_high": e.ci_high,
                    "ci_level": e.ci_level, "p_value": e.p_value, "outcome": e.outcome.value,
                    "verified": latency.verified,
                    "verdict": _verdict(e.outcome, latency.verified),
                    "declared_regression": latency in comparison.regressions,
                    "wall_s": round(wall, 1),
                })
                print(f"real compare {len(records)}/{2 * runs_per_slowdown}: slowdown "
                      f"{slowdown:.0%}: {records[-1]['verdict']}", file=sys.stderr)
    return {
        "description": (
            "benchlab.compare on examples/ab/spin.yaml, control `spin.py`, treatment "
            "`spin.py --slowdown X`, default settings, runs alternating X = 0 and 0.05"
        ),
        "runs": records,
    }
