"""Smoke run of bench/lab_chaos.py: under every kind of fault, no job is lost and no result
is stored twice (the recovery times are figures, never asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


# Exclusive: it kills and restarts workers, PostgreSQL and the server on a schedule and
# waits for each recovery; another test beside it would shift the schedule it checks.
@pytest.mark.slow
@pytest.mark.exclusive
@pytest.mark.postgres
def test_lab_chaos_smoke_loses_nothing_and_stores_nothing_twice(tmp_path: Path) -> None:
    out = tmp_path / "chaos.json"
    proc = run_bounded([sys.executable, str(BENCH / "lab_chaos.py"), "--smoke", "--out",
                        str(out)], limit_s=480)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())["figures"]
    if not figures["available"]:
        pytest.skip(figures["reason"])
    assert figures["lost"] == 0, (figures, proc.stdout[-2000:])
    assert figures["results_twice"] == 0, figures
    assert figures["ok_results_per_job"] == {"1": figures["jobs"]}, figures
    assert figures["ended_without_reason"] == 0
    assert {f["kind"] for f in figures["faults"]} == {
        "worker_kill", "pg_restart", "server_restart", "phone_disconnect"}
