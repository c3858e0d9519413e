"""The per-layer error table on ONNX Runtime, through the real runner process.

A convolutional model with one convolution's weights perturbed is found at that convolution;
its int8 copy (the zoo's static QDQ quantization) is compared tensor by tensor with the fp32
model, whose names the quantized graph keeps.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import benchlab
from benchlab.schema.diagnosis import LayerTable
from benchlab.frameworks.onnxruntime.layers import INPUT_OP, layer_rows, read_as
from benchlab.schema.result import DetailKey

from . import layer_models

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")  # torch.onnx's exporter makes the test model

# fp32 kernels of an optimised session against the unoptimised graph differ by rounding only.
ROUNDING_DB = 100.0


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    """The fp32 ONNX model, its perturbed copy (and the perturbed Conv's output), its int8 copy."""
    from benchlab.exporting.quantize import quantize_onnx

    root = tmp_path_factory.mktemp("layers-ort")
    entry = layer_models.write_entry(root / "convnet.py")
    fp32 = layer_models.write_onnx(entry, root / "convnet.onnx")
    perturbed = root / "convnet.perturbed.onnx"
    conv = layer_models.perturb_onnx(fp32, perturbed)
    rng = np.random.default_rng(5)
    calibration = [(rng.standard_normal(layer_models.SHAPE).astype(np.float32),)
                   for _ in range(4)]
    int8 = root / "convnet.int8.onnx"
    assert quantize_onnx(fp32, int8, calibration) == "static-qdq"
    return {"fp32": fp32, "perturbed": perturbed, "conv": conv, "int8": int8, "root": root}


def _spec(root: Path, files: dict[str, Path]) -> Path:
    path = root / f"spec-{'-'.join(files)}.json"
    path.write_text(json.dumps({
        "model": {"name": "convnet", "format": "onnx",
                  "files": {k: {"location": str(v), "md5": None} for k, v in files.items()}},
        "tests": [{"identifier": "t",
                   "inputs": {"input0": {"shapes": [list(layer_models.SHAPE)]}}}],
    }))
    return path


def test_a_perturbed_convolution_is_the_first_diverging_layer(
    models: dict[str, Path | str], tmp_path: Path
) -> None:
    root = Path(models["root"])
    spec = _spec(root, {"onnx": Path(models["fp32"]), "perturbed": Path(models["perturbed"])})
    got = benchlab.outputs(spec, "onnxruntime:file=perturbed", layer_errors=True,
                           cache_dir=tmp_path / "cache")
    table = got.layers
    assert table is not None and not table.note, table
    assert table.reference.startswith("convnet.onnx on CPUExecutionProvider")
    names = [layer.name for layer in table.layers]
    first = table.first_diverging
    assert first is not None and first.name == models["conv"] and first.op == "Conv"
    before = table.layers[:names.index(first.name)]
    assert len(before) == 4  # conv2d, relu, conv2d_1, relu_1
    assert all(layer.sqnr >= ROUNDING_DB for layer in before), before
    # ×1.3 on the weights (and the same bias): the output is off by about a quarter.
    assert 5.0 < first.sqnr < 20.0
    assert table.matched == len(names) and not table.unmatched


def test_int8_against_fp32_matches_every_layer_and_lands_in_the_result(
    models: dict[str, Path | str], tmp_path: Path
) -> None:
    root = Path(models["root"])
    spec = _spec(root, {"onnx": Path(models["fp32"]), "onnx_int8": Path(models["int8"])})
    overrides = benchlab.TestOverrides(layer_errors=True, iter=2, warmup=0, min_time=0.0,
                                       repeat=1)
    [result] = benchlab.run([spec], frameworks=["onnxruntime:precision=int8"],
                            overrides=overrides, db=tmp_path / "r.db",
                            cache_dir=tmp_path / "cache")
    assert result.ok, result.error
    table = LayerTable.from_detail(result.details[DetailKey.LAYER_ERRORS])
    assert table is not None and not table.note
    assert table.reference.startswith("convnet.onnx")
    # Every float activation of the QDQ graph has its fp32 namesake: the input as quantized,
    # each Conv (its Relu folded into the quantization), the Add, the mean and the Gemm.
    assert not table.unmatched and table.matched >= 8
    assert table.layers[0].name == "input0" and table.layers[0].op == INPUT_OP
    assert {"Conv", "Add", "ReduceMean", "Gemm"} <= {layer.op for layer in table.layers}
    # int8 error, not fp32 rounding and not garbage.
    assert all(15.0 < layer.sqnr < 60.0 for layer in table.layers), table.layers


def test_quantized_tensors_are_read_after_their_quantize_dequantize_pair(
    models: dict[str, Path | str]
) -> None:
    import onnx

    graph = onnx.load(str(models["int8"])).graph
    reads = read_as(graph)
    assert reads["input0"].endswith("DequantizeLinear_Output")
    rows = layer_rows(graph)
    shown = {name for name, _ in rows}
    # A DequantizeLinear output that stands for a listed tensor is not a row of its own, nor is
    # anything computed from the weights alone.
    assert not shown & set(reads.values())
    assert not any(name.endswith("weight_DequantizeLinear_Output") for name in shown)


def test_the_fp32_file_is_compared_with_its_own_unoptimised_graph(
    models: dict[str, Path | str], tmp_path: Path
) -> None:
    root = Path(models["root"])
    spec = _spec(root, {"onnx": Path(models["fp32"])})
    got = benchlab.outputs(spec, "onnxruntime", layer_errors=True, cache_dir=tmp_path / "c")
    table = got.layers
    assert table is not None and table.reference.startswith("this model on")
    assert table.first_diverging is None and table.matched == 11
    assert all(layer.sqnr >= ROUNDING_DB for layer in table.layers)
