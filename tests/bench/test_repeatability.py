"""bench/repeatability.py keeps working: a smoke run of two quick runs, and its analysis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_the_smoke_run_compares_two_runs_cell_by_cell(tmp_path: Path,
                                                      zoo_cache_dir: Path) -> None:
    out = tmp_path / "repeat.json"
    # The session's cache, where mlp is exported already (not the user's own cache).
    proc = run_bounded(
        [sys.executable, str(BENCH / "repeatability.py"), "--smoke", "--out", str(out),
         "--keep", str(tmp_path / "runs"), f"--run-arg=--cache-dir={zoo_cache_dir}"],
        limit_s=540)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(out.read_text())["figures"]
    assert figures["runs"] == 2 and figures["cells_compared"] == 2  # mlp: ORT fp32 and int8
    (pair,) = figures["pairs"]
    for cell in pair["per_cell"]:
        assert cell["processes"] == 3
        low, high = cell["interval_ms"]
        assert low <= cell["p50_ms"][0] <= high
        assert cell["covered"] == (low <= cell["p50_ms"][1] <= high)
    assert 0.0 <= figures["coverage"] <= 1.0 and len(figures["run_wall_s"]) == 2
    # The analysis alone re-reads the runs and finds the same coverage.
    again = tmp_path / "again.json"
    subprocess.run([sys.executable, str(BENCH / "repeatability.py"), "--analyse",
                    str(tmp_path / "runs" / "run0"), str(tmp_path / "runs" / "run1"),
                    "--out", str(again)], check=True, capture_output=True, timeout=300)
    assert json.loads(again.read_text())["figures"]["coverage"] == figures["coverage"]
