"""The per-layer error table on PyTorch, through the real runner process.

The rows are the nodes of torch.export graphs: a ``.pt2`` of the model with one convolution's
weights perturbed is compared with the entry's fp32 model and found at that convolution; eager
bf16 is compared with the same model at fp32; modes whose layers do not exist say so.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import benchlab
from benchlab.frameworks.pytorch.layers import unavailable_reason
from benchlab.runner.accuracy import SQNR_CEILING_DB

from . import layer_models

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory) -> str:
    return layer_models.write_entry(tmp_path_factory.mktemp("layers-pt") / "convnet.py")


def _spec(root: Path, entry: str | None, files: dict[str, Path]) -> Path:
    model: dict[str, object] = {
        "name": "convnet", "format": "pytorch",
        "files": {k: {"location": str(v), "md5": None} for k, v in files.items()},
    }
    if entry:
        model["entry"] = entry
    path = root / "spec.json"
    path.write_text(json.dumps({"model": model, "tests": [
        {"identifier": "t", "inputs": {"x": {"shapes": [list(layer_models.SHAPE)]}}}]}))
    return path


def test_a_perturbed_convolution_in_a_pt2_is_the_first_diverging_node(
    entry: str, tmp_path: Path
) -> None:
    pt2 = layer_models.write_pt2(entry, tmp_path / "convnet.perturbed.pt2", perturbed=True)
    spec = _spec(tmp_path, entry, {"pt2": pt2})
    got = benchlab.outputs(spec, "pytorch:mode=export", layer_errors=True,
                           cache_dir=tmp_path / "cache")
    table = got.layers
    assert table is not None and not table.note, table
    assert table.reference == "the entry's fp32 eager model (its torch.export graph)"
    names = [layer.name for layer in table.layers]
    # stem, body.0, body.2: the third convolution in forward order, in module body.2.
    first = table.first_diverging
    assert first is not None and first.name == "conv2d_2", names
    assert first.op == "conv2d (body.2)"
    before = table.layers[:names.index("conv2d_2")]
    assert [layer.name for layer in before] == ["conv2d", "relu", "conv2d_1", "relu_1"]
    # The same ATen kernels on the same weights: bit for bit the reference's.
    assert all(layer.sqnr == SQNR_CEILING_DB for layer in before), before
    assert 5.0 < first.sqnr < 20.0
    assert table.matched == len(names) and not table.unmatched


def test_eager_bf16_is_compared_with_the_same_model_at_fp32(entry: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, entry, {})
    got = benchlab.outputs(spec, "pytorch:mode=eager,precision=bf16", layer_errors=True,
                           cache_dir=tmp_path / "cache")
    table = got.layers
    assert table is not None and not table.note, table
    assert table.reference == "the same eager model at fp32 (its torch.export graph)"
    ops = [layer.op.split(" ")[0] for layer in table.layers]
    assert ops[:2] == ["conv2d", "relu"] and {"add", "mean", "linear"} <= set(ops)
    # bfloat16 keeps 8 significant bits: about 50 dB per rounding, less as errors add up.
    assert all(20.0 < layer.sqnr < 70.0 for layer in table.layers), table.layers
    assert table.matched == len(table.layers) and not table.unmatched


def test_a_mode_without_layers_says_why(entry: str, tmp_path: Path) -> None:
    import torch

    script = tmp_path / "convnet.pt"
    # TorchScript is deprecated upstream; the warning says nothing about the code under test.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.trace(layer_models.build(entry), (layer_models.example(),)).save(str(script))
    spec = _spec(tmp_path, entry, {"model": script})
    got = benchlab.outputs(spec, "pytorch:mode=torchscript", layer_errors=True,
                           cache_dir=tmp_path / "cache")
    assert got.layers is not None and not got.layers.layers
    assert "TorchScript" in got.layers.note and "no layer table" in got.layers.note
    assert got.outputs and got.outputs[0].shape == (1, 4)  # the run itself went on


def test_a_pt2_without_an_entry_has_no_reference(entry: str, tmp_path: Path) -> None:
    pt2 = layer_models.write_pt2(entry, tmp_path / "convnet.pt2")
    got = benchlab.outputs(_spec(tmp_path, None, {"pt2": pt2}), "pytorch:mode=export",
                           layer_errors=True, cache_dir=tmp_path / "cache")
    assert got.layers is not None and "no reference" in got.layers.note


@pytest.mark.parametrize(("mode", "why"), [("aoti", "generated kernels"),
                                           ("compile", "generated kernels"),
                                           ("export", None), ("eager", None)])
def test_which_modes_expose_their_layers(mode: str, why: str | None) -> None:
    reason = unavailable_reason(mode)
    assert (reason is None) if why is None else (why in str(reason))
