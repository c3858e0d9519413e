"""The terminal report names device flags and energy, so noisy numbers are explained."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from benchlab.report.terminal import result_notes, results_table
from benchlab.schema.result import JobIdentity, Result, Status


def _result(details: dict[str, Any]) -> Result:
    identity = JobIdentity(spec="s.json", model_name="net", model_hash="h", test_identifier="t",
                           framework="generic", framework_config={}, target="adb", device="ph")
    return Result(identity=identity, status=Status.OK, samples=(), summaries={},
                  environment={}, details=details, error=None, stderr_tail=None,
                  started_at="", finished_at="")


def test_device_flags_and_energy_reach_the_notes() -> None:
    hot = _result({
        "device_flags": [
            {"flag": "temperature_above_gate", "detail": "rose from 38.0 to 47.5 °C (gate 45 °C)"},
            {"flag": "frequency_changed", "detail": "cpu4 max 2400 → 1600 MHz"},
            {"flag": "samples_drift", "detail": "Trend across iterations: ..."},
        ],
        "energy": {"status": "ok", "joules_per_inference": 0.0123, "meter": "android-battery",
                   "window": "command", "warning": ""},
    })
    plugged = _result({"energy": {"status": "unavailable", "reason": "the phone is charging"}})
    notes = result_notes([hot, plugged])
    assert "net/t @ generic: device temperature above gate: rose from 38.0 to 47.5 °C" \
        " (gate 45 °C)" in notes
    assert "net/t @ generic: device frequency changed: cpu4 max 2400 → 1600 MHz" in notes
    assert "net/t @ generic: energy 12.3 mJ/inference (android-battery, window: command)" in notes
    assert "net/t @ generic: energy unavailable: the phone is charging" in notes
    assert not any("samples drift" in n for n in notes)  # the latency warning says it already
    console = Console(width=200, record=True)
    console.print(results_table([hot]))
    assert "hot,freq" in console.export_text()
