"""Tests of :func:`benchlab.exporting.onnx_stats.onnx_params_and_flops`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from benchlab.exporting.onnx_stats import onnx_params_and_flops


def _constant_of_shape_conv(path: Path) -> Path:
    """Conv whose weight comes from ConstantOfShape (as in ONNX's light zoo), symbolic batch."""
    nodes = [
        helper.make_node("Constant", [], ["wshape"],
                         value=numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64))),
        helper.make_node("ConstantOfShape", ["wshape"], ["w"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.1])),
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "cos",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 4, 8, 8])],
        [numpy_helper.from_array(np.zeros(4, np.float32), "b")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_constant_of_shape_weights_and_fixed_batch(tmp_path: Path) -> None:
    path = _constant_of_shape_conv(tmp_path / "cos.onnx")
    # 4x3x3x3 weight + 4 bias; 2 x batch 2 x 4x8x8 outputs x 27 multiply-adds (bias: 0).
    assert onnx_params_and_flops(path, [[2, 3, 8, 8]]) == (108 + 4, 2 * 2 * 4 * 64 * 27)


def test_symbolic_dims_count_zero(tmp_path: Path) -> None:
    path = _constant_of_shape_conv(tmp_path / "cos.onnx")
    assert onnx_params_and_flops(path) == (112, 0)


@pytest.mark.slow
def test_matches_torch_flop_counter(tmp_path: Path) -> None:
    import contextlib
    import io

    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    class Mixed(nn.Module):
        """Every op family the counter knows: plain, grouped and transposed conv, linear, bmm."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.grouped = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False)
            self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.fc = nn.Linear(16, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.up(torch.relu(self.grouped(torch.relu(self.conv(x)))))  # 2x4x16x16
            t = self.fc(h.reshape(2, 4 * 16, 16))
            return t @ t.transpose(1, 2)

    torch.manual_seed(0)
    model = Mixed().eval()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(x)
    path = tmp_path / "mixed.onnx"
    with contextlib.redirect_stdout(io.StringIO()):
        torch.onnx.export(model, (x,), str(path), dynamo=True, external_data=False)
    params, flops = onnx_params_and_flops(path)
    assert flops == pytest.approx(counter.get_total_flops(), rel=0.01)
    assert params == sum(p.numel() for p in model.parameters())
