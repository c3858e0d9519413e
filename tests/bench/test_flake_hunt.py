"""bench/flake_hunt.py finds a test that fails only after another, and gates on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Two tests that share module state: b fails exactly when a ran before it, so one order passes
# and the other fails. Both orders of two tests come up within the seeds below.
ORDER_DEPENDENT = '''
seen = []

def test_a():
    seen.append("a")

def test_b():
    assert "a" not in seen, "a ran first and left its mark"
'''


def _hunt(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "hunt.json"
    proc = subprocess.run([sys.executable, str(BENCH / "flake_hunt.py"), "--out", str(out), *args],
                          capture_output=True, text=True, timeout=600)
    return proc, json.loads(out.read_text())


@pytest.mark.slow
def test_an_order_dependent_test_fails_the_hunt_and_is_named(tmp_path: Path) -> None:
    tests = tmp_path / "test_order_dependent.py"
    tests.write_text(ORDER_DEPENDENT)
    # In one process: the two tests share module state only when they share a process.
    proc, record = _hunt(tmp_path, "--tests", str(tests), "--seeds", "1,2,3,4,5,6",
                         "--bucket", "module", "--no-repeat", "--workers", "0")
    runs = record["figures"]["runs"]
    assert len(runs) == 6 and {r["seed"] for r in runs} == {1, 2, 3, 4, 5, 6}
    failing = [r for r in runs if not r["ok"]]
    passing = [r for r in runs if r["ok"]]
    # Both orders occur among six seeds (each has probability 1/2; a fixed seed is fixed).
    assert failing and passing, runs
    assert all(r["failed"] == 1 and r["passed"] == 1 for r in failing)
    assert record["figures"]["all_ok"] is False
    assert any("test_b" in f and "left its mark" in f
               for f in record["figures"]["distinct_failures"])
    assert proc.returncode == 1


@pytest.mark.slow
def test_smoke_run_passes_and_records_its_runs(tmp_path: Path) -> None:
    # One process: three workers would each import the suite's conftest for two small files
    # (the summary lines it reads are the same; bench/suite_cost.py's smoke runs workers).
    proc, record = _hunt(tmp_path, "--smoke", "--workers", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert record["smoke"] is True and record["figures"]["all_ok"] is True
    (run,) = record["figures"]["runs"]
    assert run["passed"] > 0 and run["failed"] == 0 and run["wall_s"] > 0
