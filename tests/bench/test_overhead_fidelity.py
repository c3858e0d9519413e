"""The overhead and fidelity bench scripts run in smoke mode and write well-formed figures.

Smoke numbers mean nothing, so only the shape of the JSON is checked: never a timing.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SPREAD_KEYS = {"min", "median", "max"}


def _run_smoke(script: str, out: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke", "--repeats", "1", "--out", str(out)],
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
    for key in ("floor_ns", "bare_loop_ns", "benchlab_loop_ns"):
        _spread(figures[key], positive=True)
    # A difference of two noisy costs: its sign is not guaranteed in a tiny run.
    _spread(figures["overhead_ns"], positive=False)
    assert figures["iterations"] > 0
    assert isinstance(figures["goal_met"], bool)


@pytest.mark.slow
def test_fidelity_smoke_writes_its_figures(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    figures = _run_smoke("fidelity.py", tmp_path / "x.json")
    entry = figures["pytorch"]["mlp/t1"]
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
    # The native tools ran on the zoo's exported files (both ship in the test environment).
    for name in ("mlp/openvino/t1", "mlp/tflite/t1"):
        native = figures["native"][name]
        assert "skipped" not in native, native
        for key in ("benchlab_ms", "tool_ms", "ratio"):
            _spread(native[key], positive=True)
