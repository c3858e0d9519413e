"""Smoke run of bench/targets.py: it keeps producing its figures (no timing is asserted)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab_standin.board import find_sshd

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_targets_bench_smoke(tmp_path: Path) -> None:
    if shutil.which("adb") is None or find_sshd() is None:
        pytest.skip("needs adb and sshd")
    out = tmp_path / "targets.json"
    proc = subprocess.run([sys.executable, str(BENCH / "targets.py"), "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(out.read_text())["figures"]
    for name in ("host", "ssh (multiplexed)", "ssh (new connection each)", "adb stand-in",
                 "adb stand-in + logcat"):
        assert figures[name]["ms_per_command"]["median"] > 0
        assert figures[name]["ms_per_state_probe"]["median"] > 0
