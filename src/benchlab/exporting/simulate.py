"""The zoo's int8 recipes run exactly: the simulated outputs that split an int8 file's error.

Beside each int8 file of a torch model the zoo writes ``simulated_<file key>``
(``NAME.int8.simulated.npz``, ``NAME.xnnpack-int8.simulated.npz``): the reference's input sets
and what the quantization recipe itself computes on them, in the reference's layout
(:mod:`benchlab.runner.accuracy`). The runner then reports how far that is from the fp32
reference (the quantization error) and how far the runtime is from it (the lowering error).

What "the recipe run exactly" is, per file:

* ExecuTorch: the fake-quantized ``GraphModule`` that PT2E's ``convert_pt2e`` returns, run in
  eager PyTorch (quantize/dequantize ops around float ops), before XNNPACK lowers it.
* ONNX Runtime: the int8 ``.onnx`` graph's own arithmetic, by :func:`onnx_simulator`.

Heavy imports (onnx, onnxruntime, torch) stay inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.frameworks.common import SIMULATED_PREFIX

__all__ = [
    "INTEGER_OPS",
    "SIMULATED_SUFFIX",
    "Simulator",
    "onnx_simulator",
    "simulated_key",
    "simulated_path",
    "torch_simulator",
    "write_simulated",
]

#: File name ending of a simulated outputs file, put in place of the int8 file's extension.
SIMULATED_SUFFIX = ".simulated.npz"
#: ONNX ops that compute on integers. A graph holding one is evaluated by ``onnx.reference``
#: (numpy), never by ONNX Runtime: these are the very kernels whose error is to be measured.
INTEGER_OPS = frozenset({
    "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
    "QLinearAdd", "QLinearMul", "QLinearAveragePool", "QLinearGlobalAveragePool",
    "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu", "QGemm", "DynamicQuantizeMatMul",
    "MatMulIntegerToFloat",
})

#: ``inputs in the reference's order -> outputs``: one run of a recipe.
Simulator = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


def simulated_key(key: str) -> str:
    """The model file key of the simulated outputs of the file keyed ``key``."""
    return SIMULATED_PREFIX + key


def simulated_path(model_file: Path) -> Path:
    """Where the simulated outputs of ``model_file`` go: ``m.int8.onnx`` → ``m.int8.simulated.npz``."""
    return model_file.with_name(model_file.name.rsplit(".", 1)[0] + SIMULATED_SUFFIX)


def write_simulated(reference: Path, target: Path, run: Simulator) -> Path:
    """Run ``run`` on every input set of the ``reference`` file and write the outputs to
    ``target`` with the same input sets, in the same order (the runner pairs them by set)."""
    from benchlab.runner.accuracy import load_reference, save_reference

    ref = load_reference(reference)
    sets = [ref.inputs, *(inputs for inputs, _ in ref.more)]
    results = [(inputs, run(list(inputs.values()))) for inputs in sets]
    (first_inputs, first_outputs), *more = results
    save_reference(target, first_inputs, first_outputs, ref.task, more=more)
    return target


def torch_simulator(module: Any) -> Simulator:
    """Run a torch module (the fake-quantized ``GraphModule``) on numpy inputs."""
    import torch

    from benchlab.runner.accuracy import to_arrays

    def run(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            return to_arrays(module(*(torch.from_numpy(np.ascontiguousarray(a))
                                      for a in inputs)))

    return run


def onnx_simulator(path: Path) -> tuple[Simulator, str]:
    """A function computing the int8 ONNX graph ``path`` as written, and how it does so.

    The simulated outputs must come from neither the kernels under test nor their rewrites:

    * a graph with integer ops (:data:`INTEGER_OPS`: ORT's dynamic quantization writes
      ``DynamicQuantizeLinear`` + ``MatMulInteger``) goes through ``onnx.reference``, ONNX's
      numpy evaluator: integer products summed exactly in int32, then the float rescaling, as
      the operator specs say. ONNX Runtime would run those nodes on its own integer kernels
      even with every optimisation off (MLAS's u8s8 GEMM, which saturates on x86 CPUs without
      VNNI), hiding precisely the error to be measured. Measured on one core: mlp 0.15 s,
      transformer 0.2 s, transformer_encoder 1.8 s per input set.
    * a QDQ graph (static quantization: QuantizeLinear/DequantizeLinear pairs around float
      ops) runs in ONNX Runtime with every graph optimisation off: that is fake quantization,
      Q/DQ nodes and float convolutions, and ORT's int8 kernels never run (it is the QDQ
      fusions, off here, that make QLinearConv and friends). It computes the same float32
      spec arithmetic as ``onnx.reference`` but 6-70x faster (numpy's im2col convolutions:
      mobilenet_v2 1.4 s against 0.2 s a set, style_transfer 12 s against 1.1 s, with eight
      sets a model). The two differ only in float summation order, which flips a few
      values sitting on a rounding boundary of a QuantizeLinear; in deep nets those flips
      spread (mobilenet_v2: 1.5% relative L2 between the two; convnet, squeezenet: <1e-7),
      a floor under the lowering error of any static int8 file that neither method removes.

    Returns the function and the method's name (``onnx-reference`` or ``ort-unoptimized``).
    """
    import onnx

    model = onnx.load(str(path))
    initializers = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    if any(node.op_type in INTEGER_OPS for node in model.graph.node):
        from onnx.reference import ReferenceEvaluator

        evaluator = ReferenceEvaluator(model, new_ops=_fixed_reference_ops())

        def run_reference(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
            return [np.asarray(o) for o in evaluator.run(None, dict(zip(names, inputs,
                                                                       strict=True)))]

        return run_reference, "onnx-reference"
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run_ort(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return list(session.run(None, dict(zip(names, inputs, strict=True))))

    return run_ort, "ort-unoptimized"


def _fixed_reference_ops() -> list[type]:
    """``onnx.reference`` kernels replaced where onnx 1.23's are wrong or needlessly slow."""
    from onnx.reference.op_run import OpRun

    class GatherElements(OpRun):  # type: ignore[misc]
        """GatherElements by ``np.take_along_axis``.

        onnx 1.23's goes through ``np.choose``, which takes at most 64 choices, and its
        fallback for more is wrong (MiniLM's token-type ids: "cannot reshape array of size 1
        into shape (1,128)").
        """

        op_domain = ""

        def _run(self, data: np.ndarray, indices: np.ndarray, axis: int = 0
                 ) -> tuple[np.ndarray]:
            axis = axis % data.ndim
            indices = np.where(indices < 0, indices + data.shape[axis], indices)
            return (np.take_along_axis(data, indices.astype(np.int64), axis=axis),)

    class MatMulInteger(OpRun):  # type: ignore[misc]
        """MatMulInteger through float64 BLAS: still exact, many times faster.

        numpy multiplies int32 matrices without BLAS. Every product of two zero-point-shifted
        8-bit values is below 2^16 in magnitude, so float64 (53-bit mantissa) sums up to 2^37
        of them exactly, in any order.
        """

        op_domain = ""

        def _run(self, a: np.ndarray, b: np.ndarray, a_zero_point: Any = None,
                 b_zero_point: Any = None) -> tuple[np.ndarray]:
            a64 = a.astype(np.float64) - _zero_point(a_zero_point, a.ndim, row=True)
            b64 = b.astype(np.float64) - _zero_point(b_zero_point, b.ndim, row=False)
            return (np.matmul(a64, b64).astype(np.int32),)

    return [GatherElements, MatMulInteger]


def _zero_point(value: Any, ndim: int, *, row: bool) -> np.ndarray | float:
    """A MatMulInteger zero point, shaped to broadcast: A's is per row (M), B's per column (N).

    Scalars and 1-element tensors apply to every element; a 1-D zero point of A holds one
    value per row of A, one of B one value per column of B (the operator's spec).
    """
    if value is None:
        return 0.0
    zero = np.asarray(value).astype(np.float64)
    if zero.size == 1:
        return float(zero.reshape(-1)[0])
    if zero.ndim == 1 and row:
        return zero.reshape(*([1] * (ndim - 2)), -1, 1)
    return zero
