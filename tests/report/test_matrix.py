"""The matrix cells, the Pareto front, the terminal table and the self-contained HTML report
(rendered by headless Chromium with the network cut off, then checked pixel by pixel)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.harness.jobrun import summarize_samples
from benchlab.report.matrix import matrix_cells, pareto_front
from benchlab.report.matrix_html import matrix_html, write_matrix_html
from benchlab.report.matrix_plots import _FRONT, _PALETTE
from benchlab.report.terminal import results_table
from benchlab.schema.metrics import METRICS, milliseconds
from benchlab.schema.result import JobIdentity, Metric, Result, Sample, Status

from .browser import colour_pixels, measure, screenshot


def _result(model: str, framework: str, config: dict, latency: float, sqnr: float | None,
            *, precision: str = "fp32", ops: dict[str, float] | None = None,
            status: Status = Status.OK, error: str | None = None) -> Result:
    samples = [Sample("latency", latency * (1 + 0.02 * ((i * 7) % 5 - 2)), "ms", repetition=i // 10,
                      index=i % 10) for i in range(30)]
    samples += [Sample("load_time", 12.0, "ms"), Sample("first_inference", latency * 3, "ms"),
                Sample("memory_peak", 300.0, "MiB"), Sample("model_size", 13.5, "MiB")]
    if sqnr is not None:
        samples += [Sample("sqnr", sqnr, "dB"), Sample("error_max_abs", 10 ** (-sqnr / 20), "abs"),
                    Sample("cosine_similarity", 1 - 10 ** (-sqnr / 10), "cos"),
                    Sample("top1_agreement", 1.0, "ratio")]
    for op, ms in (ops or {}).items():
        samples += [Sample("latency", ms, "ms", type=op, index=i) for i in range(3)]
    identity = JobIdentity(spec=f"zoo:{model}", model_name=model, model_hash="h",
                           test_identifier="default", framework=framework,
                           framework_config=config, target="host")
    if status is not Status.OK:
        samples = []
    return Result(identity=identity, status=status, samples=tuple(samples),
                  summaries=summarize_samples(samples), error=error,
                  details={"precision": precision, "inputs": {"input0": [[4, 3, 8, 8], "float32"]},
                           "model_info": {"params": 3_500_000, "flops": 600_000_000}})


def _sweep() -> list[Result]:
    return [
        _result("mobilenet_v2", "pytorch", {"mode": "eager"}, 20.0, 300.0,
                ops={"aten::conv2d": 12.0, "aten::relu": 3.0}),
        _result("mobilenet_v2", "onnxruntime", {}, 5.0, 140.0,
                ops={"Conv": 3.0, "Clip": 0.8, "Gemm": 0.2}),
        _result("mobilenet_v2", "onnxruntime", {"precision": "int8"}, 3.0, 28.0,
                precision="int8"),
        _result("mobilenet_v2", "openvino", {"precision": "bf16"}, 4.0, 45.0,
                precision="bf16"),
        _result("mobilenet_v2", "tflite", {}, 6.0, 120.0),  # slower and less accurate than ORT
        _result("mobilenet_v2", "executorch", {"delegate": "portable"}, 0.0, None,
                status=Status.FAILED, error="portable kernels crashed <boom>"),
    ]


def test_cells_carry_the_matrix_columns() -> None:
    cells = matrix_cells(_sweep())
    ort = next(c for c in cells if c.label == "onnxruntime")
    assert ort.p50 == pytest.approx(5.0, rel=0.05)
    assert ort.size == 13.5 and ort.memory_peak == 300.0 and ort.load == 12.0
    assert ort.sqnr == 140.0 and ort.top1 == 1.0 and ort.params == 3_500_000
    assert ort.throughput == pytest.approx(4 * 1000 / ort.p50)  # batch 4
    assert ort.ops == {"Conv": 3.0, "Clip": 0.8, "Gemm": 0.2}
    assert next(c for c in cells if c.label == "openvino[bf16]").precision == "bf16"
    failed = next(c for c in cells if c.label == "executorch[portable]")
    assert not failed.ok and "crashed" in (failed.error or "")


def test_pareto_front_keeps_only_undominated_cells() -> None:
    cells = [c for c in matrix_cells(_sweep()) if c.ok]
    front = pareto_front(cells)
    # int8 is fastest, eager is exact; ORT fp32 beats tflite on both axes, so tflite is out.
    assert "onnxruntime[int8]" in front and "pytorch[eager]" in front
    assert "onnxruntime" in front and "openvino[bf16]" in front
    assert "tflite" not in front


def test_terminal_table_shows_precision_size_and_error() -> None:
    console = Console(width=220, record=True)
    console.print(results_table(_sweep()))
    text = console.export_text()
    for header in ("prec", "size", "err", "SQNR", "top1"):
        assert header in text
    assert "int8" in text and "13.50" in text and "300.0" in text


def test_html_is_self_contained_and_escaped() -> None:
    page = matrix_html(matrix_cells(_sweep()), skipped=[("ssdlite @ tflite export", "x<y")])
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<script" not in page.lower()
    assert "&lt;boom&gt;" in page and "x&lt;y" in page
    for kind in ("dist", "pareto", "ops"):
        assert f'class="plot {kind}"' in page


def test_the_main_table_reads_the_registry_and_spans_a_failed_cells_error() -> None:
    """One table builder: metric columns headed and formatted as the registry says; a failed
    cell shows its names, then its error across the numbers."""
    page = matrix_html(matrix_cells(_sweep()))
    head = re.search(r"<table><tr><th>model</th>.*?</tr>", page).group(0)
    labels = re.findall(r"<th>(.*?)</th>", head)
    for metric in (Metric.MEMORY_PEAK, Metric.MODEL_SIZE, Metric.SQNR, Metric.COSINE_SIMILARITY):
        assert METRICS[metric].label in labels
    assert labels[:7] == ["model", "backend", "runtime", "precision", "status", "p50 ms", "p90 ms"]
    rows = {re.search(r'<td class="nw">([^<]*)</td>', row.split("</td>", 1)[1]).group(1): row
            for row in re.findall(r"<tr><td.*?</tr>", page.split("<table><tr><th>model</th>")[1]
                                  .split("</table>")[0])}
    ort = re.findall(r'<td class="n">([^<]*)</td>', rows["onnxruntime"])
    # p50 with the registry's latency digits, peak MiB and size MiB in their formats
    cell = next(c for c in matrix_cells(_sweep()) if c.label == "onnxruntime")
    assert ort[0] == milliseconds(cell.p50) == "5.000"
    assert METRICS[Metric.MEMORY_PEAK].text(300.0) in ort and "13.50" in ort
    failed = rows["executorch[portable]"]
    assert failed.count("<td") == 6  # five words, then the error
    assert f'colspan="{len(labels) - 5}" class="failed">portable kernels crashed &lt;boom&gt;' \
        in failed
    assert '<td class="nw failed">failed</td>' in failed


@pytest.mark.slow
def test_report_renders_in_headless_chromium_offline(tmp_path: Path) -> None:
    page = write_matrix_html(_sweep(), tmp_path / "report.html", title="matrix test")
    shot = screenshot(page, tmp_path / "shot.png", (1100, 3600))
    # The plots drew: the first backend colour (dots, boxes, bars), the Pareto front's red,
    # and several other series colours cover real areas of the screenshot.
    assert colour_pixels(shot, _PALETTE[0]) > 300
    assert colour_pixels(shot, _FRONT) > 150
    drawn = [c for c in _PALETTE[1:5] if colour_pixels(shot, c) > 100]
    assert len(drawn) >= 3, drawn
    assert math.isfinite(shot.stat().st_size)


# Each table's box in the laid-out page (named by the heading above it): its width, and how
# far its table reaches.
_BOXES = """{window: innerWidth, page: document.documentElement.scrollWidth,
  main: document.querySelector('main').clientWidth,
  boxes: [...document.querySelectorAll('div.wide')].map(box => ({
    title: [...document.querySelectorAll('h2')].filter(h =>
      h.compareDocumentPosition(box) & Node.DOCUMENT_POSITION_FOLLOWING).pop().textContent,
    width: box.clientWidth, reach: box.scrollWidth}))}"""


@pytest.mark.slow
def test_the_tables_use_the_windows_width_before_they_scroll(tmp_path: Path) -> None:
    page = write_matrix_html(_sweep(), tmp_path / "report.html", title="matrix test")
    seen = measure(page, _BOXES, (1300, 900))
    # The page column is the window's (it stopped at 1000 px), and nothing scrolls sideways:
    # not the page, not the glance table, not the table of every cell.
    assert seen["main"] == seen["window"] == 1300 and seen["page"] <= 1300, seen
    boxes = {box["title"]: box for box in seen["boxes"]}
    assert {"Latency at a glance", "All cells"} <= set(boxes), seen
    for box in boxes.values():
        assert 1200 <= box["width"] and box["reach"] <= box["width"], seen
    # Only the columns the run has numbers in: none of this sweep's cells has a power.
    head = re.search(r"<table><tr><th>model</th>.*?</tr>", page.read_text()).group(0)
    assert "<th>p50 ms</th>" in head and "<th>power W</th>" not in head


def test_metrics_without_a_column_are_shown_by_name() -> None:
    # A FAI-PEP postprocess prints top1_accuracy; the matrix has no column for it.
    plain = _result("mobilenet_v2", "onnxruntime", {}, 5.0, None)
    scored = _result("mobilenet_v2", "tflite", {}, 6.0, None)
    extra = (Sample("top1_accuracy", 85.0, "percent"), Sample("top1_accuracy", 75.0, "percent"))
    scored = Result(identity=scored.identity, status=scored.status,
                    samples=scored.samples + extra,
                    summaries=summarize_samples([*scored.samples, *extra]),
                    details=scored.details)
    console = Console(width=250, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(results_table([plain, scored]))
    text = console.export_text()
    assert "top1_accuracy" in text and "80 percent" in text
    console.print(results_table([plain]))
    assert "top1_accuracy" not in console.export_text()
    page = matrix_html(matrix_cells([plain, scored]))
    assert "top1_accuracy 80 percent" in page


def test_noise_line_sums_up_the_warnings_in_one_line() -> None:
    from benchlab.report.terminal import noise_line, result_notes

    results = _sweep()
    noisy = [Sample("latency", 10.0 * (1 + (i % 2)), "ms", repetition=i // 10, index=i % 10)
             for i in range(30)]  # two levels: high variability and two modes
    results.append(Result(
        identity=JobIdentity(spec="zoo:x", model_name="x", model_hash="h",
                             test_identifier="default", framework="tflite",
                             framework_config={}, target="host"),
        status=Status.OK, samples=tuple(noisy), summaries=summarize_samples(noisy)))
    line = noise_line(results)
    assert line is not None and line.startswith("Noise: 1 of 6 cells with a noise warning (")
    assert "noisy" in line and "widest (x/default @ tflite)" in line
    assert "ran one process" not in line  # every cell ran three processes
    full = result_notes(results)
    short = result_notes(results, warnings=False)
    assert any("High variability" in n for n in full)
    assert not any("High variability" in n for n in short)
    assert any("portable kernels crashed" in n for n in short)  # errors are always shown


def test_the_glance_table_marks_a_backend_it_cannot_separate_from_the_fastest() -> None:
    from benchlab.report.matrix import fastest_ratios

    cells = matrix_cells(_sweep())
    ratios = fastest_ratios(cells)
    # int8 ORT is the fastest; the same three rounds' noise pattern repeats in every cell,
    # so every other backend's paired ratio is exact and separable.
    assert ratios[("mobilenet_v2", "onnxruntime[int8]")].rounds == 0
    eager = ratios[("mobilenet_v2", "pytorch[eager]")]
    assert eager.rounds == 3 and eager.value == pytest.approx(20 / 3) and eager.separable
    page = matrix_html(cells)
    glance = page.split('<table class="heat">')[1].split("</table>")[0]
    assert "×6.67 [6.67–6.67]" in glance and "≈" not in glance
    twin = _result("mobilenet_v2", "onnxruntime", {"precision": "int8", "threads": "1"}, 3.0,
                   28.0, precision="int8")
    page = matrix_html(matrix_cells([*_sweep(), twin]))
    glance = page.split('<table class="heat">')[1].split("</table>")[0]
    assert glance.count(" ≈<br>") == 1 and 'class="n tie"' in glance
