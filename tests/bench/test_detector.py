"""Smoke run of bench/detector/evaluate.py, plus the FAI-PEP rule and ABBA order on fixed data.

The smoke run only checks that the script works and writes a well-formed result: every rate a
finite number in [0, 1]. No statistical or timing assertion: smoke replicates are too few for
any rate to mean something.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

DETECTOR = Path(__file__).resolve().parents[2] / "bench" / "detector"
SOURCES = {"replay", "lognormal_2pct", "lognormal_5pct"}
CELL_KEYS = {"0", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5"}


def _rates(node: Any) -> list[float]:
    """Every value stored under a "rate" key anywhere in the result."""
    if isinstance(node, dict):
        found = [node["rate"]] if "rate" in node else []
        return found + [r for v in node.values() for r in _rates(v)]
    if isinstance(node, list):
        return [r for v in node for r in _rates(v)]
    return []


@pytest.mark.slow
def test_evaluate_smoke_writes_every_source_cell_and_detector(tmp_path: Path) -> None:
    out = tmp_path / "detector.json"
    proc = subprocess.run(
        [sys.executable, str(DETECTOR / "evaluate.py"), "--smoke", "--replicates", "5",
         "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record["smoke"] is True and record["command"] and record["date"]
    assert record["machine"]["cpus"] and record["end_to_end"] is None  # no real runs in smoke
    assert record["settings"] == {"looks": [20, 40, 80], "min_effect": 0.01, "alpha": 0.05,
                                  "verify": True}
    assert record["recording"]["processes"] >= 3
    assert set(record["sources"]) == SOURCES
    for source in record["sources"].values():
        assert set(source["cells"]) == CELL_KEYS
        for cell in source["cells"].values():
            bl = cell["benchlab"]
            for key in ("regression_before_verify", "regression_after_verify", "improvement",
                        "no_change", "undecided", "coverage95", "coverage_reported"):
                assert bl[key]["n"] == cell["replicates"]
            assert set(bl["verify_variants"]) == {"looks", "once", "significant"}
            assert math.isfinite(bl["bias"]) and math.isfinite(bl["mean_pairs"])
            assert set(cell["faipep"]) == {"diff", "raw"}
            for mode in cell["faipep"].values():
                assert set(mode) == {"flagged", "after_verify"}
        assert {t["measure"] for t in source["targets"]} == set(record["targets"])
        assert all(isinstance(t["met"], bool) and math.isfinite(t["value"])
                   for t in source["targets"])
    rates = _rates(record)
    assert rates and all(math.isfinite(r) and 0.0 <= r <= 1.0 for r in rates)


def _import_detectors() -> Any:
    """bench/detector/detectors.py under a private name (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_detector_detectors",
                                                  DETECTOR / "detectors.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_faipep_rule_matches_its_definition_on_fixed_numbers() -> None:
    det = _import_detectors()
    # History p90s 100..109: the "90th percentile" is sorted[int(10 * 9 / 10)] = sorted[9] = 109
    # and int(range / 10) = int(0.9) = 0, so the threshold is 109 and needs to be exceeded.
    history = np.arange(100.0, 110.0)[None, :]
    assert det._faipep_flagged(np.array([109.5]), history).tolist() == [True]
    assert det._faipep_flagged(np.array([109.0]), history).tolist() == [False]
    # A range of 100 adds int(100 / 10) = 10 to the threshold.
    wide = np.array([[100.0, 101, 102, 103, 200]])
    assert det._faipep_flagged(np.array([209.0]), wide).tolist() == [False]
    assert det._faipep_flagged(np.array([210.5]), wide).tolist() == [True]
    # Fewer than five past runs never flag, however slow the latest run.
    assert det._faipep_flagged(np.array([1e9]), history[:, :4]).tolist() == [False]
    # Per-run summaries: p10 = sorted[n // 10], p90 = sorted[n - n // 10 - 1].
    summary = det._faipep_summary(np.arange(30.0))
    assert (summary["p10"], summary["p50"], summary["p90"]) == (3.0, 14.5, 26.0)


def test_abba_order_and_slowdown_follow_the_protocol() -> None:
    det = _import_detectors()
    # Two pairs; slot 0 ran first. Pair 0 runs control first, pair 1 treatment first.
    pairs = np.array([[[10.0], [20.0]], [[30.0], [40.0]]])
    control, treatment = det._abba(pairs, 0, 0.5)
    assert control.tolist() == [10.0, 40.0]
    assert treatment.tolist() == [30.0, 45.0]
    # Numbering continues across looks: starting at an odd index flips the first pair.
    control, _ = det._abba(pairs, 1, 0.0)
    assert control.tolist() == [20.0, 30.0]


def _import_sources() -> Any:
    """bench/detector/sources.py under a private name (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_detector_sources",
                                                  DETECTOR / "sources.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_session_replay_keeps_the_alternation_and_injects_the_slowdown() -> None:
    src = _import_sources()
    # Four A/A sessions of two blocks: control loaded first in 0 and 2, treatment in 1 and 3.
    control = np.array([[100.0, 100.0], [100.0, 100.0], [200.0, 200.0], [200.0, 200.0]])
    treatment = control * np.array([[1.0], [1.1], [1.2], [1.3]])
    recording = src.SessionRecording("in-process", control, treatment, ("ct",) * 4,
                                     ("c", "t", "c", "t"))
    # The library's estimate (median block log-ratio), and a slowdown adds log(1 + d) to it.
    assert np.allclose(recording.estimates(), np.log([1.0, 1.1, 1.2, 1.3]))
    assert np.allclose(recording.estimates(0.05), np.log([1.0, 1.1, 1.2, 1.3]) + np.log(1.05))
    replay = src.SessionReplay(recording, (0.0,))
    rng = np.random.default_rng(1)
    drawn = replay.draw(rng, 0.0, 3, 200)  # sessions 3..202: odd ones have the treatment first
    odd = np.isin(np.round(drawn, 9), np.round(np.log([1.1, 1.3]), 9))
    assert odd.tolist() == [i % 2 == 1 for i in range(3, 203)]


@pytest.mark.slow
def test_evaluate_interleaved_smoke_writes_every_mode_budget_and_cell(tmp_path: Path) -> None:
    out = tmp_path / "interleaved.json"
    proc = subprocess.run(
        [sys.executable, str(DETECTOR / "evaluate_interleaved.py"), "--smoke", "--replicates",
         "3", "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record["smoke"] is True and record["machine"]["cpus"]
    assert {"process-pairs", "in-process"} <= set(record["modes"])
    for mode in record["modes"].values():
        assert set(mode["budgets"]) == {"looks_20_40", "default", "looks_20_40_no_min_effect"}
        for budget in mode["budgets"].values():
            assert set(budget["cells"]) == {"0", "0.01", "0.02", "0.05"}
            assert {t["measure"] for t in budget["targets"]} == set(record["targets"])
    rates = _rates(record)
    assert rates and all(math.isfinite(r) and 0.0 <= r <= 1.0 for r in rates)
