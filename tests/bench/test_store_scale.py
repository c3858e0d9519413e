"""Smoke run of bench/store_scale.py so the benchmark keeps working (no timing assertions)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
FIGURES = (
    "ingest_s",
    "ingest_samples_per_s",
    "history_ms",
    "results_summaries_ms",
    "results_samples_ms",
)


def test_store_scale_smoke_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "store_scale.py"), "--smoke", "--repeats", "1",
         "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record["name"] == "store_scale" and record["smoke"] is True and record["command"]
    figures = record["figures"]
    assert (figures["samples"], figures["results"]) == (1000, 2)
    # PostgreSQL may be missing on this machine; then it must say so instead of failing.
    backends = [figures["sqlite"]]
    if figures["postgresql"]["available"]:
        backends.append(figures["postgresql"])
    else:
        assert figures["postgresql"]["reason"]
        assert "postgres: unavailable" in proc.stdout
    assert figures["sqlite"]["available"] is True
    for cell in backends:
        for key in FIGURES:
            assert set(cell[key]) == {"min", "median", "max"}
            assert all(math.isfinite(v) and v > 0 for v in cell[key].values()), (key, cell[key])
