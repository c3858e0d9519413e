"""Smoke run of bench/lab.py: it keeps producing its figures (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
@pytest.mark.postgres
def test_lab_bench_smoke_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "lab.json"
    proc = subprocess.run([sys.executable, str(BENCH / "lab.py"), "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())["figures"]
    if not figures["available"]:
        pytest.skip(figures["reason"])
    assert figures["defer_to_start"]["jobs"] == 5
    assert 0 < figures["defer_to_start"]["median_ms"] <= figures["defer_to_start"]["max_ms"]
    assert figures["throughput"]["jobs"] == 20 and figures["throughput"]["jobs_per_minute"] > 0
    assert figures["store"] == {**figures["store"], "results": 24, "samples": 240}
    for page in ("overview", "trends"):
        assert figures["pages"][page]["median_ms"] > 0
