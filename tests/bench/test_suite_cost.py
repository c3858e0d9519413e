"""bench/suite_cost.py --smoke: two quick test files in two xdist workers, and its record of
where each test's time went (no timing is asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_the_smoke_run_records_every_test_fixture_and_worker(tmp_path: Path) -> None:
    out = tmp_path / "suite_cost.json"
    proc = run_bounded([sys.executable, str(BENCH / "suite_cost.py"), "--smoke", "--out",
                        str(out)], limit_s=540)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads(out.read_text())
    figures = record["figures"]
    assert record["smoke"] is True and figures["exit_status"] == 0
    # Both workers' records are merged: every test once, each with its phases.
    assert set(figures["worker_busy_s"]) == {"gw0", "gw1"}
    tests = figures["all_tests"]
    assert len(tests) == figures["tests"] > 0
    assert len({t["test"] for t in tests}) == len(tests)
    assert {t["test"].split("::")[0] for t in tests} == {"tests/test_process_state.py",
                                                        "tests/stats/test_stats.py"}
    assert all(t["outcome"] == "passed" and t["wall_s"] >= 0 for t in tests)
    assert figures["outcomes"]["passed"] == len(tests)
    # The fixtures' setups, with their scopes, and the table printed for docs.
    scopes = {f["fixture"]: f["scope"] for f in figures["fixtures"]}
    assert scopes.get("_torch_settings_restored") == "function"
    assert "| test | wall s | setup | call | teardown |" in proc.stdout
    # The suite's own budget figures ride along, and a module's CPU is its tests' sum.
    budget = figures["suite_budget"]
    assert budget["cost"]["minutes"] > 0 and budget["cost"]["calibration_s"] > 0
    # Each figure is rounded to 0.1 s on its own: two rounded parts may sum to 0.1 s below
    # the rounded whole (1.6 + 8.2 against 9.8 failed in CI).
    assert (budget["pytest_cpu_s"] + budget["children_cpu_s"]
            >= budget["cost"]["tests_cpu_s"] - 0.1 - 1e-9)
    for module in figures["modules"]:
        mine = [t for t in tests if t["test"].startswith(module["module"] + "::")]
        assert module["cpu_s"] == pytest.approx(
            sum(t["cpu_s"] + t["children_cpu_s"] for t in mine), abs=0.1 * len(mine) + 0.1)
