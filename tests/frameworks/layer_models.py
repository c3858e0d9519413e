"""A small seeded convolutional model for the layer-table tests, and copies of it with one
convolution's weights perturbed: as an eager factory, a torch.export ``.pt2`` and ONNX.

Every layer before the perturbed convolution computes exactly what the original computes, so
the table must mark that convolution's output as the first to diverge.
"""

from __future__ import annotations

from pathlib import Path

#: Input shape of the model (one NCHW image).
SHAPE = (1, 3, 16, 16)
#: Which convolution (0-based, in forward order) the perturbed copies change, and how.
PERTURBED_CONV, FACTOR = 2, 1.3

ENTRY_SOURCE = """
import torch
from torch import nn


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.body = nn.Sequential(
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1),
        )
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(x + self.body(x))
        return self.head(x.mean(dim=(2, 3)))


def convnet():
    torch.manual_seed(0)
    model = ConvNet().eval()
    model.example_shapes = [[1, 3, 16, 16]]
    return model
"""


def write_entry(path: Path) -> str:
    """Write the factory's source to ``path``; returns its ``entry`` (``path:convnet``)."""
    path.write_text(ENTRY_SOURCE)
    return f"{path}:convnet"


def build(entry: str, perturbed: bool = False):  # type: ignore[no-untyped-def]
    """The eager model of ``entry``; with ``perturbed``, convolution :data:`PERTURBED_CONV`'s
    weights are multiplied by :data:`FACTOR`."""
    import torch

    from benchlab.frameworks.pytorch.backend import build_from_entry

    model = build_from_entry(entry)
    if perturbed:
        conv = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)][PERTURBED_CONV]
        with torch.no_grad():
            conv.weight.mul_(FACTOR)
    return model


def example():  # type: ignore[no-untyped-def]
    """A seeded input tensor of :data:`SHAPE`."""
    import torch

    return torch.randn(*SHAPE, generator=torch.Generator().manual_seed(1))


def write_pt2(entry: str, path: Path, perturbed: bool = False) -> Path:
    """``torch.export`` of the (perturbed) model, saved to ``path``."""
    import torch

    torch.export.save(torch.export.export(build(entry, perturbed), (example(),)), str(path))
    return path


def write_onnx(entry: str, path: Path) -> Path:
    """The model exported to ONNX (the zoo's exporter settings), input named ``input0``."""
    import torch

    torch.onnx.export(build(entry), (example(),), str(path), dynamo=True, external_data=False,
                      input_names=["input0"])
    return path


def perturb_onnx(source: Path, target: Path) -> str:
    """Copy ``source`` with the weights of its Conv number :data:`PERTURBED_CONV` multiplied by
    :data:`FACTOR`; returns that Conv's output tensor name."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    conv = [n for n in model.graph.node if n.op_type == "Conv"][PERTURBED_CONV]
    weights = {t.name: t for t in model.graph.initializer}
    tensor = weights[conv.input[1]]
    tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor) * FACTOR, tensor.name))
    onnx.save(model, str(target))
    return conv.output[0]
