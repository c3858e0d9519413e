"""Tiny models for tests of the runner and the framework adapters, written into a directory.

The ONNX graph is built with ``onnx.helper`` (no torch needed, milliseconds to make); the
TorchScript file is a traced two-layer perceptron. Both take one float input ``x`` of shape
``[batch, 8]`` and return ``[batch, 4]``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

IN_FEATURES = 8
OUT_FEATURES = 4


def run_export_script(code: str, out: Path) -> None:
    """Run a test module's export script (``python -c code out``) in a fresh process: the
    converters it imports stay out of the pytest process."""
    proc = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


def write_onnx(path: Path) -> Path:
    """Gemm → Relu → MatMul with a symbolic batch dimension, opset 17."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal((IN_FEATURES, 16)).astype(np.float32), "w1"),
        numpy_helper.from_array(np.zeros(16, np.float32), "b1"),
        numpy_helper.from_array(rng.standard_normal((16, OUT_FEATURES)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["hidden"]),
        helper.make_node("Relu", ["hidden"], ["active"]),
        helper.make_node("MatMul", ["active", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", IN_FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", OUT_FEATURES])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by older onnxruntime releases too
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


# Source of an eager-model factory, for ``model.entry = "path/to/file.py:tiny"``.
ENTRY_SOURCE = f"""
import torch

def tiny():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear({IN_FEATURES}, 16), torch.nn.ReLU(), torch.nn.Linear(16, {OUT_FEATURES})
    ).eval()
    model.example_shapes = [[2, {IN_FEATURES}]]
    return model
"""


def write_entry(path: Path) -> Path:
    """A Python file whose ``tiny()`` builds the eager model."""
    path.write_text(ENTRY_SOURCE)
    return path


def write_torchscript(path: Path) -> Path:
    """The eager model of :data:`ENTRY_SOURCE`, traced and saved."""
    import warnings

    import torch

    from benchlab.frameworks.pytorch.backend import build_from_entry

    source = write_entry(path.with_name(path.stem + "_entry.py"))
    model = build_from_entry(f"{source}:tiny")
    # TorchScript is deprecated upstream but still what many deployments ship; the warning
    # says nothing about the code under test.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.trace(model, (torch.zeros(1, IN_FEATURES),)).save(str(path))
    return path
