"""The overhead and fidelity bench scripts run in smoke mode and write well-formed figures.

Smoke numbers mean nothing, so only the shape of the JSON is checked: never a timing. The
fidelity script's ABBA order and ratio interval are checked on fixed numbers.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SPREAD_KEYS = {"min", "median", "max"}
CI_KEYS = {"ratio", "low", "high", "level", "coverage", "rounds", "verdict"}
VERDICTS = {"met", "undecided", "missed"}


def _run_smoke(script: str, out: Path, *more: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke", "--repeats", "1", "--out", str(out),
         *more],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["smoke"] is True
    assert record["repeats"] == 1
    return record["figures"]


def _spread(figure: Any, *, positive: bool) -> None:
    assert isinstance(figure, dict)
    assert set(figure) == SPREAD_KEYS
    for value in figure.values():
        assert isinstance(value, float | int)
        assert math.isfinite(value)
        if positive:
            assert value > 0


def test_overhead_smoke_writes_its_figures(tmp_path: Path) -> None:
    figures = _run_smoke("overhead.py", tmp_path / "x.json")
    for key in ("bare_loop_ns", "benchlab_loop_ns"):
        _spread(figures[key], positive=True)
    # Differences of two noisy costs (the clock floor is N reads minus an empty loop of N):
    # their sign is not guaranteed in a tiny run on a busy machine (-568 ns seen under load).
    for key in ("floor_ns", "overhead_ns"):
        _spread(figures[key], positive=False)
    assert figures["iterations"] > 0
    assert isinstance(figures["goal_met"], bool)


@pytest.mark.slow
def test_fidelity_smoke_writes_its_figures(tmp_path: Path, zoo_cache_dir: Path) -> None:
    pytest.importorskip("torch")
    # The session's cache holds mlp's ONNX, OpenVINO and TFLite files already.
    figures = _run_smoke("fidelity.py", tmp_path / "x.json", "--cache-dir", str(zoo_cache_dir))
    assert figures["rounds"] == 1
    assert figures["run_time_s"] > 0 and figures["diag_time_s"] > 0
    entry = figures["pytorch"]["mlp/t1"]
    _ratio_ci(entry, rounds=1)
    for key in (
        "benchlab_ms",
        "timer_ms",
        "ratio",
        "load1",
        "single_over_blocks",
        "per_call_over_once",
        "no_grad_over_inference",
        "grad_over_inference",
        "benchlab_over_child_singles",
    ):
        _spread(entry[key], positive=key != "load1")
    assert isinstance(entry["goal_met"], bool)
    assert isinstance(figures["goal_met"], bool)
    assert isinstance(figures["native_goal_met"], bool)
    # The native tools ran on the zoo's exported files (both ship in the test environment).
    for name in ("mlp/openvino/t1", "mlp/tflite/t1"):
        native = figures["native"][name]
        assert "skipped" not in native, native
        for key in ("benchlab_ms", "tool_ms", "ratio", "load1"):
            _spread(native[key], positive=key != "load1")
        _ratio_ci(native, rounds=1)
        assert native["iterations"] >= 1
    assert sum(figures["verdicts"].values()) == 3
    assert set(figures["verdicts"]) == VERDICTS


def _ratio_ci(entry: dict[str, Any], *, rounds: int) -> None:
    """A cell's interval and rounds are well-formed (one round: too few for any verdict)."""
    ci = entry["ratio_ci"]
    assert set(ci) == CI_KEYS
    assert ci["rounds"] == rounds == len(entry["per_round"])
    assert 0 < ci["low"] <= ci["ratio"] <= ci["high"]
    assert all(math.isfinite(ci[k]) for k in ("ratio", "low", "high", "coverage"))
    assert ci["verdict"] in VERDICTS
    assert entry["goal_met"] == (ci["verdict"] == "met")
    assert entry["per_round"][0]["first"] == "benchlab"
    assert entry["wall_s"] > 0


def _fidelity() -> Any:
    spec = importlib.util.spec_from_file_location("bench_fidelity", BENCH / "fidelity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fidelity_rounds_run_in_abba_order() -> None:
    fidelity = _fidelity()
    calls: list[str] = []

    def side(name: str) -> Any:
        return lambda: calls.append(name) or {f"{name}_ms": float(len(calls))}

    rounds = fidelity.abba(4, side("benchlab"), side("tool"))
    assert calls == ["benchlab", "tool", "tool", "benchlab", "benchlab", "tool", "tool",
                     "benchlab"]
    assert [r["first"] for r in rounds] == ["benchlab", "tool", "benchlab", "tool"]
    assert [(r["benchlab_ms"], r["tool_ms"]) for r in rounds] == [(1, 2), (4, 3), (5, 6), (8, 7)]


def test_fidelity_ratio_interval_and_verdict_on_fixed_numbers() -> None:
    fidelity = _fidelity()
    assert fidelity.min_rounds(0.95) == 6  # 2**-5 = 0.031 <= 0.05 < 2**-4
    tool = [1.0, 2.0, 1.5, 0.8, 1.2, 1.1, 0.9, 1.3]
    # Every round 1% above: the ratio and both bounds are 1.01, inside 0.97-1.03.
    met = fidelity.ratio_ci([t * 1.01 for t in tool], tool)
    assert met["verdict"] == "met" and met["rounds"] == 8 and met["coverage"] == 0.95
    assert met["ratio"] == pytest.approx(1.01) and met["high"] == pytest.approx(1.01)
    # Every round 10% above: the whole interval lies outside the goal.
    assert fidelity.ratio_ci([t * 1.1 for t in tool], tool)["verdict"] == "missed"
    # Rounds either side of an edge: the interval straddles it.
    factors = [0.95, 1.0, 0.96, 1.01, 0.94, 0.99, 0.97, 1.0]
    straddles = fidelity.ratio_ci([t * f for t, f in zip(tool, factors, strict=True)], tool)
    assert straddles["low"] < 0.97 < straddles["high"]
    assert straddles["verdict"] == "undecided"
    # Five rounds cannot give a 95% interval, however consistent: never a verdict.
    few = fidelity.ratio_ci([t * 1.1 for t in tool[:5]], tool[:5])
    assert few["verdict"] == "undecided" and few["coverage"] == pytest.approx(1 - 2**-4)
