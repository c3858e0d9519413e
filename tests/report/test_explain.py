"""The reports say why a cell is slow or wrong: the coverage column and its warning, the int8
error split, the layer table with the first diverging layer marked (rendered in Chromium)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from benchlab.schema.diagnosis import Coverage, LayerError, LayerTable
from benchlab.harness.jobrun import summarize_samples
from benchlab.report.matrix import cell_of
from benchlab.report.matrix_html import write_matrix_html
from benchlab.report.terminal import result_notes, results_table
from benchlab.schema.result import DetailKey, JobIdentity, Result, Sample, Status

from .browser import colour_pixels, screenshot

TAKEN_NOTHING = Coverage(engine="AzureExecutionProvider", method="ONNX Runtime profiler",
                         asked=True, nodes=55, delegated=0, fallback={"Conv": 52, "Add": 3},
                         by_engine={"AzureExecutionProvider": 0, "CPUExecutionProvider": 55})
XNNPACK = Coverage(engine="XnnpackBackend", method=".pte instructions", asked=True,
                   partitions=2, fallback={"aten::mean.out": 1},
                   by_engine={"XnnpackBackend": 2})
LAYERS = LayerTable(reference="mobilenet_v2.onnx (fp32)", matched=4, layers=(
    LayerError("conv0", "Conv", 300.0, 0.0, 0.0), LayerError("relu0", "Clip", 300.0, 0.0, 0.0),
    LayerError("conv1", "Conv", 11.2, 0.8, 0.27), LayerError("out", "Gemm", 9.5, 1.3, 0.33)))


def _result(framework: str, config: dict, details: dict, *, int8: bool = False) -> Result:
    samples = [Sample("latency", 5.0 + 0.01 * i, "ms", repetition=i // 10, index=i % 10)
               for i in range(20)]
    samples += [Sample("sqnr", 31.0, "dB"), Sample("error_l2_rel", 0.028, "rel")]
    if int8:
        samples += [Sample("quantization_sqnr", 33.0, "dB"), Sample("lowering_sqnr", 36.5, "dB"),
                    Sample("quantization_l2_rel", 0.0224, "rel"),
                    Sample("lowering_l2_rel", 0.015, "rel"),
                    Sample("lowering_floor_sqnr", 38.0, "dB"),
                    Sample("lowering_floor_l2_rel", 0.01, "rel")]
    identity = JobIdentity(spec="zoo:mobilenet_v2", model_name="mobilenet_v2", model_hash="h",
                           test_identifier="default", framework=framework,
                           framework_config=config, target="host")
    return Result(identity=identity, status=Status.OK, samples=tuple(samples),
                  summaries=summarize_samples(samples), details=details)


def _sweep() -> list[Result]:
    return [
        _result("onnxruntime", {"providers": "AzureExecutionProvider+CPUExecutionProvider"},
                {DetailKey.DELEGATION: TAKEN_NOTHING.to_detail(),
                 DetailKey.LAYER_ERRORS: LAYERS.to_detail()}),
        _result("executorch", {"delegate": "xnnpack", "precision": "int8"},
                {DetailKey.DELEGATION: XNNPACK.to_detail()}, int8=True),
    ]


def test_cells_read_back_what_the_runner_stored() -> None:
    azure, xnnpack = (cell_of(r) for r in _sweep())
    assert azure.delegation == TAKEN_NOTHING and azure.layers == LAYERS
    assert azure.layers is not None and azure.layers.first_diverging == LAYERS.layers[2]
    assert xnnpack.delegation == XNNPACK and xnnpack.quant_sqnr == 33.0
    assert xnnpack.lowering_sqnr == 36.5 and xnnpack.lowering_l2_rel == 0.015
    assert "quantization_sqnr" not in xnnpack.other  # a column of its own, not "other"


def test_terminal_shows_the_columns_and_says_why_in_the_notes() -> None:
    console = Console(width=250, record=True)
    console.print(results_table(_sweep()))
    table = console.export_text()
    assert "deleg" in table and "0% " in table and "2 parts + 1 op" in table
    assert "33.0/36.5" in table and "fallback" in table and "layer" in table
    notes = "\n".join(result_notes(_sweep()))
    assert "AzureExecutionProvider was asked for but took no operator" in notes
    assert "fell back: Conv ×52, Add ×3" in notes
    assert "first below 40 dB: conv1 (Conv, 11.2 dB)" in notes
    assert "int8 error: quantization 33.0 dB, lowering 36.5 dB (total 31.0 dB)" in notes
    # 36.5 dB of lowering error against a 38 dB floor: within 3 dB, read as rounding flips.
    assert "rounding floor 38.0 dB (the lowering error is within it" in notes
    assert "fell back: aten::mean.out ×1" in notes


def test_html_report_shows_coverage_attribution_and_the_diverging_layer(tmp_path: Path) -> None:
    page = write_matrix_html(_sweep(), tmp_path / "report.html")
    html = page.read_text()
    why = html.split("<h2 id='why'>")[1]
    assert "⚠ AzureExecutionProvider was asked for but took no operator" in why
    assert "aten::mean.out ×1" in why and "quantization 33.0 dB, lowering 36.5 dB" in why
    assert "<tr class='diverging'><td><code>conv1</code>" in why
    assert html.count("<tr class='diverging'>") == 1
    shot = screenshot(page, tmp_path / "report.png", (1400, 3200))
    # The diverging row's orange and the warnings' amber are painted, not just in the markup.
    assert colour_pixels(shot, "#ffe0b2", tolerance=4) > 2000
    assert colour_pixels(shot, "#b26a00", tolerance=30) > 50


def test_the_progress_line_warns_as_soon_as_the_job_ends() -> None:
    from benchlab.report.terminal import cell_line

    azure, xnnpack = _sweep()
    assert "⚠ AzureExecutionProvider was asked for but took no operator" in cell_line(azure)
    assert "⚠" not in cell_line(xnnpack)  # partitions taken: not flagged
