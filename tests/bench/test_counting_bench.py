"""Smoke run of bench/counting.py: one counted pair of two small chains, decided from counts."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
@pytest.mark.valgrind
def test_counting_bench_smoke(tmp_path: Path) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    out = tmp_path / "counting.json"
    proc = run_bounded([sys.executable, str(BENCH / "counting.py"), "--smoke", "--out",
                        str(out)], limit_s=540)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counted = json.loads(out.read_text())["figures"]["smoke"]["instructions"]
    # Five MatMuls against four: more instructions, decided by one pair.
    assert counted["mode"] == "counted" and counted["n"] == 1
    assert counted["outcome"] == "regression" and counted["change"] > 0.1
