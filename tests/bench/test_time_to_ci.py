"""Smoke run of bench/time_to_ci.py so the benchmark keeps working (no timing assertions)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_time_to_ci_smoke_writes_every_policy(tmp_path: Path, zoo_cache_dir: Path) -> None:
    out = tmp_path / "ttci.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "time_to_ci.py"), "--smoke", "--repeats", "1",
         "--out", str(out), "--cache-dir", str(zoo_cache_dir)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record["smoke"] is True and record["command"]
    assert set(record["figures"]) == {"mlp/fai-pep", "mlp/benchlab"}
    for cell in record["figures"].values():
        for key in ("wall_s", "ci_rel_halfwidth", "median_ms"):
            assert all(math.isfinite(v) and v > 0 for v in cell[key].values())
