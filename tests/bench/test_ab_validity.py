"""bench/ab_validity.py keeps working: a smoke run of every part on MobileNetV2 with ONNX
Runtime (numbers mean nothing), and its summary of the issue's goals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bounded import run_bounded

BENCH = Path(__file__).resolve().parents[2] / "bench"


# Exclusive: its A/A sessions judge noise (at most one false regression), which another
# test beside it would add.
@pytest.mark.slow
@pytest.mark.exclusive
def test_the_smoke_run_measures_every_part(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    proc = run_bounded(
        [sys.executable, str(BENCH / "ab_validity.py"), "--smoke", "--repeats", "1",
         "--out", str(out)], limit_s=540)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())["figures"]
    for setting in ("parked", "live"):
        sides = {f["side"] for f in figures["lockstep"][setting]["fidelity"]}
        assert sides == {"control", "treatment"}
    assert set(figures["truth"]["slowdown"]) == {"2%"}
    (aa,) = figures["aa"]
    assert aa["sessions"] == 4
    # The smoke reports fidelity but keeps the mode auto picks (its few blocks judge noise):
    # in-process, whatever fidelity a busy machine gives.
    assert aa["mode"] == "in-process"
    assert aa["regime"]["control"]["thread_pool"] == "global"
    assert {f["side"] for f in aa["fidelity"]} == {"control", "treatment"}
    assert len(figures["ab"]["2%"]) == 1  # the smoke: one compare per repeat
    summary = figures["summary"]
    assert summary["aa_false_regressions"] in (0, 1)
    assert summary["coverage_of_truth"].endswith("/1")
