"""Smoke run of bench/first_run.py: export progress and per-cell lines reach a non-terminal
stderr, before the run ends (no timing is asserted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_first_run_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "first_run.json"
    proc = run_bounded([sys.executable, str(BENCH / "first_run.py"), "--smoke", "--out",
                        str(out)], limit_s=540)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())["figures"]
    fresh, warm = figures["fresh"], figures["warm"]
    assert fresh["rc"] == 0 and warm["rc"] == 0
    # Export lines came first, then a line per cell, each before the process ended.
    assert fresh["exports_end_s"] is not None and fresh["cells"] >= 1
    assert fresh["exports_end_s"] <= fresh["first_cell_s"] <= fresh["total_s"]
    assert 0 < fresh["exporting_s"] <= fresh["total_s"] and warm["exporting_s"] is None
    assert warm["exports_end_s"] is None and warm["cells"] == fresh["cells"]
    assert figures["exports_1_worker_s"] is None and figures["exports_2_workers_s"] > 0
    # A user's model from a file beside the zoo's convnet: both ran and measured.
    mine = figures["your_model"]
    assert mine["model"]["rc"] == 0 and mine["convnet"]["rc"] == 0
    assert mine["model"]["cells"] == mine["convnet"]["cells"] == 2  # ONNX Runtime fp32, int8
    assert mine["ratio"] > 0
