"""bench/scenarios.py --smoke runs and writes its figures (numbers mean nothing here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"

pytest.importorskip("mlperf_loadgen")


@pytest.mark.slow
def test_scenarios_bench_smoke_writes_its_figures(tmp_path: Path, zoo_cache_dir: Path) -> None:
    out = tmp_path / "scenarios.json"
    proc = run_bounded([sys.executable, str(BENCH / "scenarios.py"), "--smoke", "--out",
                        str(out), "--cache-dir", str(zoo_cache_dir)], limit_s=540,
                       stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    record = json.loads(out.read_text())
    figures = record["figures"]
    assert record["smoke"] is True
    assert {r["scenario"] for r in figures["cells"]} == {"single_stream", "server@15ms",
                                                         "offline"}
    assert {r["framework"] for r in figures["cells"]} == {"onnxruntime", "openvino"}
    assert all(r["status"] == "ok" for r in figures["cells"])
    assert len(figures["rounds"]) == 2
    for key in ("single_stream_ratio", "offline_ratio"):
        assert figures[key]["ratio"] > 0 and figures[key]["low"] <= figures[key]["high"]
