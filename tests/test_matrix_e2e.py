"""The model × backend matrix end to end: one command runs a zoo model on every runtime, the
accuracy columns are real, and the HTML report is written (real exports, real runtimes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import machine_facts
import pytest
from typer.testing import CliRunner

import benchlab
from benchlab.cli.commands import app
from benchlab.report.matrix import matrix_cells
from benchlab.schema.result import Metric, Status

RUNTIMES = {"pytorch", "onnxruntime", "tflite", "executorch", "openvino"}


@pytest.mark.slow
def test_one_model_on_every_backend_with_real_accuracy(
    tmp_path: Path, machine_case: Callable[[str], None], zoo_cache_dir: Path
) -> None:
    overrides = benchlab.TestOverrides(iter=5, min_time=0.0, repeat=1, warmup=1)
    results = benchlab.run(
        models=["convnet"],
        frameworks=["all", "openvino:precision=f32", "openvino:precision=bf16"],
        db=tmp_path / "r.db", cache_dir=zoo_cache_dir, overrides=overrides,
    )
    assert {r.identity.framework for r in results} == RUNTIMES
    assert all(r.status is Status.OK for r in results), [(r.identity.label, r.error)
                                                         for r in results if not r.ok]
    cells = {c.label: c for c in matrix_cells(results)}
    # Same runtime, same weights: bit-identical; other fp32 runtimes agree to ~1e-6.
    assert cells["pytorch[torchscript]"].error_max_abs == 0
    assert cells["pytorch[export]"].error_max_abs == 0
    for label in ("onnxruntime", "tflite", "executorch[xnnpack]", "openvino[f32]"):
        assert cells[label].error_max_abs < 1e-5, label
        assert cells[label].top1 == 1.0 and cells[label].size > 0 and cells[label].p50 > 0
    # Every runtime says how much of its own code the process loaded (README command 1's
    # "code" column): its distribution's libraries, the same for every cell of one runtime.
    for result in results:
        assert result.summaries[Metric.CODE_SIZE.key].p50 > 0, result.identity.label
    codes = {r.identity.framework: r.details["code_size"]["distribution"].split()[0]
             for r in results}
    assert codes == {"pytorch": "torch", "onnxruntime": "onnxruntime",
                     "tflite": "ai-edge-litert", "executorch": "executorch",
                     "openvino": "openvino"}
    # Lower precision shows as larger error, from the same reference.
    assert cells["onnxruntime[int8]"].precision == "int8"
    assert cells["onnxruntime[int8]"].error_max_abs > 10 * cells["onnxruntime"].error_max_abs
    assert cells["executorch[xnnpack,int8]"].sqnr < cells["executorch[xnnpack]"].sqnr - 20
    assert cells["openvino[f32]"].precision == "f32"
    # The precision column says what the compiled model runs, not what was asked for: bf16
    # where the CPU has bf16 arithmetic, f32 (and f32's accuracy) where it has not.
    bf16 = cells["openvino[bf16]"]
    if machine_facts.openvino_runs_bf16():
        machine_case("OpenVINO lists BF16: a bf16 request runs as bf16, with bf16's error")
        assert bf16.precision == "bf16"
        assert bf16.error_max_abs > 10 * cells["openvino[f32]"].error_max_abs
    else:
        machine_case("OpenVINO lists no BF16 on this CPU: a bf16 request runs as f32")
        assert bf16.precision == "f32"
        assert bf16.error_max_abs < 1e-5


@pytest.mark.slow
def test_cli_matrix_one_backend_on_the_small_zoo_writes_the_report(tmp_path: Path,
                                                                   zoo_cache_dir: Path) -> None:
    report = tmp_path / "report.html"
    outcome = CliRunner().invoke(app, [
        "run", "--models", "small", "-f", "onnxruntime", "--iter", "5", "--repeat", "1",
        "--min-time", "0", "--db", str(tmp_path / "r.db"), "--cache-dir", str(zoo_cache_dir),
        "--html", str(report), "--quiet",
    ])
    assert outcome.exit_code == 0, outcome.output
    for model in ("mlp", "convnet", "transformer"):
        assert model in outcome.output
    page = report.read_text()
    assert page.count('class="plot dist"') == 3 and page.count('class="plot pareto"') == 3
    assert "onnxruntime[int8]" in page
    # The runtime's code size beside the model's, in the terminal's cost table and the report.
    assert "code" in outcome.output and "code MiB" in page
