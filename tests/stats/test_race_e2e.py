"""The race and the fixed design on a real runtime: mlp on ONNX Runtime, fp32 and int8, one
contest of two cells measured by real runner processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.schema.result import Result, Status, StopReason

pytestmark = pytest.mark.slow

RACED = {StopReason.DECIDED, StopReason.CLEARLY_SLOWER, StopReason.PROCESS_CAP,
         StopReason.RACE_BUDGET, StopReason.MACHINE_FLOOR}


def _starts(result: Result) -> list[float]:
    """Each process's measuring window start, on the host's monotonic clock."""
    return [w["start"] for w in result.details["per_repetition"]["measure_window"]]


def test_a_default_run_races_and_says_why_each_cell_stopped(tmp_path: Path,
                                                            zoo_cache_dir: Path) -> None:
    results = benchlab.run(
        models=["mlp"], frameworks=["onnxruntime"], db=tmp_path / "r.db",
        cache_dir=zoo_cache_dir,
        overrides=benchlab.TestOverrides(iter=5, min_time=0.0, warmup=1),
    )
    assert len(results) == 2
    for result in results:
        assert result.status is Status.OK, result.error
        assert result.stop_reason in RACED
        assert isinstance(result.details["race"], str) and result.details["race"]
        assert 3 <= result.repetitions <= benchlab.RacePolicy().max_processes
        assert result.summaries["NET latency"].processes == result.repetitions
    # One contest, in rounds: round r of one cell lies between rounds r and r + 1 of the other.
    first, second = (_starts(r) for r in results)
    both = min(len(first), len(second))
    assert first[:both] != second[:both]
    merged = sorted((t, i) for i, starts in enumerate((first, second)) for t in starts[:both])
    assert [i for _, i in merged] == [merged[0][1], 1 - merged[0][1]] * both


def test_repeat_on_the_command_line_reproduces_the_fixed_design(tmp_path: Path,
                                                                zoo_cache_dir: Path) -> None:
    out = tmp_path / "json"
    subprocess.run(
        [sys.executable, "-m", "benchlab", "run", "--models", "mlp", "-f", "onnxruntime",
         "--repeat", "5", "--iter", "5", "--min-time", "0", "--warmup", "1", "-q",
         "--db", str(tmp_path / "r.db"), "--cache-dir", str(zoo_cache_dir),
         "--json-dir", str(out)],
        check=True, capture_output=True, text=True)
    results = [json.loads(p.read_text()) for p in sorted(out.rglob("*.json"))]
    assert len(results) == 2
    for result in results:
        assert result["status"] == "ok"
        assert result["details"]["repetitions"] == 5
        assert result["details"]["job_stop_reason"] == "fixed_repetitions"
        assert "race" not in result["details"]
    starts = [[w["start"] for w in r["details"]["per_repetition"]["measure_window"]]
              for r in results]
    merged = sorted((t, i) for i, s in enumerate(starts) for t in s)
    assert [i for _, i in merged] == [merged[0][1], 1 - merged[0][1]] * 5
