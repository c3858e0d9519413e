"""The int8 accuracy baseline check: a floor, and drift that names the packages that changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .int8_baseline import BASELINE_PATH, check_int8_sqnr, installed_versions, load_baseline


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(BASELINE_PATH.read_text())
    return path


def _entry(path: Path) -> dict[str, Any]:
    return load_baseline(path)["entries"]["dictmodel/onnx_int8"]


def test_within_tolerance_passes(baseline: Path) -> None:
    recorded = _entry(baseline)["sqnr_db"]
    check_int8_sqnr("dictmodel", "onnx_int8", recorded + 0.9, path=baseline)
    check_int8_sqnr("dictmodel", "onnx_int8", recorded - 0.9, path=baseline)


def test_below_the_floor_fails_even_when_updating(baseline: Path) -> None:
    with pytest.raises(AssertionError, match="below its floor of 30.0 dB"):
        check_int8_sqnr("dictmodel", "onnx_int8", 16.0, update=True, path=baseline)


def test_drift_names_the_package_versions_that_changed(baseline: Path) -> None:
    data = json.loads(baseline.read_text())
    entry = data["entries"]["dictmodel/onnx_int8"]
    installed = entry["versions"]["onnxruntime"]
    entry["versions"]["onnxruntime"] = "1.0.0"
    baseline.write_text(json.dumps(data))
    with pytest.raises(AssertionError) as info:
        check_int8_sqnr("dictmodel", "onnx_int8", entry["sqnr_db"] + 3.0, path=baseline)
    message = str(info.value)
    assert "moved +3.00 dB" in message
    assert f"'onnxruntime': '1.0.0 -> {installed}'" in message
    assert "--update-int8-baseline" in message


def test_drift_without_a_version_change_says_so(baseline: Path) -> None:
    data = json.loads(baseline.read_text())
    entry = data["entries"]["dictmodel/onnx_int8"]
    entry["versions"] = installed_versions("onnx_int8")
    baseline.write_text(json.dumps(data))
    with pytest.raises(AssertionError, match="no exporter package changed"):
        check_int8_sqnr("dictmodel", "onnx_int8", entry["sqnr_db"] - 2.0, path=baseline)


def test_update_records_the_figure_and_todays_versions(baseline: Path) -> None:
    check_int8_sqnr("dictmodel", "onnx_int8", 41.234, update=True, path=baseline)
    entry = _entry(baseline)
    assert entry["sqnr_db"] == 41.23
    assert entry["versions"]["onnxruntime"] is not None
    assert BASELINE_PATH.read_text() != baseline.read_text()
