"""The device axis of the matrix: one model's spread across devices, in the terminal table and
the HTML report (rendered by headless Chromium)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from benchlab.report.matrix import (
    device_spread,
    device_spread_table,
    devices_of,
    matrix_cells,
    per_device,
)
from benchlab.report.matrix_html import matrix_html, write_matrix_html
from benchlab.report.terminal import results_table
from benchlab.schema.result import Result, Status

from .browser import colour_pixels, screenshot
from .test_matrix import _result


def _on(result: Result, target: str, device: str) -> Result:
    return replace(result, identity=replace(result.identity, target=target, device=device))


def _lab() -> list[Result]:
    """mobilenet on three devices (the phone 4× slower than the host), ORT failing on the
    board, and a model measured on the host alone."""
    return [
        _on(_result("mobilenet_v2", "onnxruntime", {}, 5.0, None), "host", "build-01"),
        _on(_result("mobilenet_v2", "onnxruntime", {}, 8.0, None), "ssh", "pi5"),
        _on(_result("mobilenet_v2", "onnxruntime", {}, 20.0, None), "adb", "Pixel_8-S1"),
        _on(_result("mobilenet_v2", "pytorch", {"mode": "eager"}, 10.0, None), "host",
            "build-01"),
        _on(_result("mobilenet_v2", "pytorch", {"mode": "eager"}, 0.0, None,
                    status=Status.FAILED, error="no torch"), "ssh", "pi5"),
        _on(_result("resnet18", "onnxruntime", {}, 30.0, None), "host", "build-01"),
    ]


def _text(renderable: object) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_spread_has_each_devices_median_and_the_slowest_over_fastest_ratio() -> None:
    cells = matrix_cells(_lab())
    assert devices_of(cells) == ["host:build-01", "ssh:pi5", "adb:Pixel_8-S1"]
    rows = {(r.model, r.label): r for r in device_spread(cells)}
    ort = rows[("mobilenet_v2", "onnxruntime")]
    assert ort.ratio is not None and abs(ort.ratio - 4.0) < 0.2
    assert (ort.fastest, ort.slowest) == ("host:build-01", "adb:Pixel_8-S1")
    eager = rows[("mobilenet_v2", "pytorch[eager]")]
    assert eager.p50["ssh:pi5"] is None and eager.ratio is None  # one measured device only
    assert rows[("resnet18", "onnxruntime")].p50["adb:Pixel_8-S1"] is None


def test_cells_of_several_devices_keep_one_series_per_device() -> None:
    series = [(c.model, c.label) for c in per_device(matrix_cells(_lab()))]
    assert ("mobilenet_v2", "onnxruntime @ adb:Pixel_8-S1") in series
    assert len(set(series)) == len(series)
    one_device = matrix_cells(_lab()[:1])
    assert per_device(one_device)[0].label == "onnxruntime"


def test_terminal_shows_a_device_column_and_the_spread_table() -> None:
    table = _text(results_table(_lab()))
    assert "device" in table and "adb:Pixel_8-S1" in table
    spread = _text(device_spread_table(_lab()))
    assert "slow/fast" in spread and "×4.0" in spread
    assert device_spread_table(_lab()[:1]) is None
    assert "device" not in _text(results_table(_lab()[:1])).split("\n")[2]


def test_html_report_has_the_device_axis(tmp_path: Path) -> None:
    page = matrix_html(matrix_cells(_lab()))
    assert "<h2>Across devices</h2>" in page and "slowest/fastest" in page
    assert "×4.0" in page and "pi5" in page
    assert "Across devices" not in matrix_html(matrix_cells(_lab()[:1]))
    path = write_matrix_html(_lab(), tmp_path / "lab.html")
    shot = screenshot(path, tmp_path / "lab.png", (1400, 1400))
    # The 4× device is shaded half-way to red: hsl(60,60%,88%).
    assert colour_pixels(shot, "#f3f3ce") > 500
