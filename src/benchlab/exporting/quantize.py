"""Int8 versions of a zoo model: ONNX Runtime quantization and ExecuTorch's PT2E flow.

Both calibrate on the same seeded inputs (the reference inputs first, then a few more), so an
int8 file is deterministic for a given model and seed. Heavy imports stay inside the functions.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ORT_STATIC_OPS",
    "PER_CHANNEL_OPSET",
    "REDUCE_RANGE",
    "Pt2eInt8",
    "fake_quantize_pt2e_xnnpack",
    "lower_pt2e_xnnpack",
    "quantize_onnx",
    "quantize_pt2e_xnnpack",
]

#: Ops whose presence makes :func:`quantize_onnx` quantize statically. Static QDQ needs
#: calibration but gives ORT's fast int8 convolutions; dynamic quantization would turn
#: convolutions into ConvInteger, which ORT's CPU provider runs slower than fp32.
ORT_STATIC_OPS = frozenset({"Conv", "ConvTranspose"})
#: The first opset whose DequantizeLinear takes per-channel scales.
PER_CHANNEL_OPSET = 13
#: Quantize weights to 7 bits. ONNX Runtime multiplies uint8 activations by int8 weights; on
#: x86 CPUs without VNNI (AVX2, AVX-512 without VNNI) that product goes through an instruction
#: that adds pairs into saturating int16, and 8-bit weights overflow it. 7-bit weights cannot,
#: so the same file gives the same integer results on every x86-64 CPU. Measured on an AVX2
#: EPYC (docs/accuracy.md): a two-Gemm MLP's int8 SQNR is 16 dB with 8-bit weights, 38 dB with
#: 7-bit ones; on a VNNI CPU the cost is one bit of weight precision.
REDUCE_RANGE = True


def _opset(model: Any) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _feeds(
    input_names: Sequence[str], calibration: Sequence[tuple[np.ndarray, ...]]
) -> list[dict[str, np.ndarray]]:
    return [dict(zip(input_names, inputs, strict=True)) for inputs in calibration]


def quantize_onnx(
    source: Path,
    target: Path,
    calibration: Sequence[tuple[np.ndarray, ...]],
    *,
    reduce_range: bool = REDUCE_RANGE,
) -> str:
    """Write an int8 copy of the ONNX model ``source`` to ``target``; returns the method used.

    Graphs with convolutions get static QDQ quantization (per-channel int8 weights, uint8
    activations, the ORT default for x86) calibrated on ``calibration``; the rest (MLPs,
    transformers) get dynamic quantization of their MatMul/Gemm weights, which needs no
    calibration and is what ORT recommends for them. Weights are per-channel in both cases
    (MiniLM's cosine against fp32: 0.917 per-tensor, 0.988 per-channel), and 7 bits wide by
    default (see :data:`REDUCE_RANGE`). The model is pre-processed first (symbolic
    shape inference and graph optimisation, the step ORT's documentation asks for) when that
    works. The result is loaded and run once in ONNX Runtime, so a file ORT cannot run raises
    here instead of in a benchmark.
    """
    import onnx
    import onnx.version_converter
    import onnxruntime as ort
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model = onnx.load(str(source))
    initializers = {t.name for t in model.graph.initializer}
    if model.ir_version < 4:
        # IR 3 lists every initializer as a graph input too. Pre-processing folds some of
        # them away but keeps the inputs, which the calibrator then demands to be fed; from
        # IR 4 on initializers need not be inputs, and dropping them lets ORT fold constants.
        kept = [i for i in model.graph.input if i.name not in initializers]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        model.ir_version = 4
    per_channel = True
    if _opset(model) < PER_CHANNEL_OPSET:
        # Per-channel DequantizeLinear (its axis attribute) needs opset 13; ORT's quantizer
        # itself only lifts old models to opset 11. Without a conversion: per-tensor scales.
        try:
            model = onnx.version_converter.convert_version(model, PER_CHANNEL_OPSET)
        except Exception:  # the converter lacks some old ops' adapters
            per_channel = False
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    static = any(node.op_type in ORT_STATIC_OPS for node in model.graph.node)
    feeds = _feeds(input_names, calibration)

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        """Hands ORT's calibrator the seeded input dicts one by one."""

        def __init__(self) -> None:
            self._it: Iterator[dict[str, np.ndarray]] = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            """The next input dict, None when calibration is done."""
            return next(self._it, None)

    with tempfile.TemporaryDirectory(prefix="benchlab-quant-") as tmp:
        normalised = Path(tmp) / "normalised.onnx"
        onnx.save(model, str(normalised))
        model_in = Path(tmp) / "preprocessed.onnx"
        try:
            quant_pre_process(str(normalised), str(model_in))
        except Exception:  # pre-processing is an optimisation, not a must
            model_in = normalised
        if static:
            quantize_static(
                str(model_in), str(target), Reader(), quant_format=QuantFormat.QDQ,
                per_channel=per_channel, reduce_range=reduce_range,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
            )
        else:
            quantize_dynamic(
                str(model_in), str(target), weight_type=QuantType.QInt8, per_channel=per_channel,
                reduce_range=reduce_range,
            )
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    if feeds:
        session.run(None, feeds[0])
    return "static-qdq" if static else "dynamic"


@dataclass(frozen=True)
class Pt2eInt8:
    """What :func:`quantize_pt2e_xnnpack` makes: the ExecuTorch program (``.buffer`` is the
    ``.pte`` file) and the fake-quantized ``GraphModule`` it was lowered from."""

    program: Any
    fake_quantized: Any


def quantize_pt2e_xnnpack(
    program: Any, args: tuple[Any, ...], calibration: Sequence[tuple[np.ndarray, ...]]
) -> Pt2eInt8:
    """ExecuTorch program of ``program`` (an ExportedProgram) with int8 XNNPACK kernels, and
    the fake-quantized model it was lowered from.

    PT2E flow: annotate the exported graph with XNNPACK's symmetric per-channel config, observe
    activation ranges on ``calibration``, convert to quantize/dequantize pairs, export again and
    lower to XNNPACK, which fuses the pairs into int8 kernels. As for ONNX Runtime, graphs with
    convolutions get static activation scales and the rest dynamic ones (per inference): static
    int8 activations lose too much in transformers (MiniLM: cosine 0.86 against the fp32
    output; tiny transformer: 0.9998 static, 0.999996 dynamic). The converted model is
    returned too: run in eager PyTorch it is the recipe computed exactly (the simulated
    outputs, :mod:`benchlab.exporting.simulate`), so calibration runs once for both.
    """
    converted = fake_quantize_pt2e_xnnpack(program, calibration)
    return Pt2eInt8(program=lower_pt2e_xnnpack(converted, args), fake_quantized=converted)


def fake_quantize_pt2e_xnnpack(
    program: Any, calibration: Sequence[tuple[np.ndarray, ...]]
) -> Any:
    """The fake-quantized ``GraphModule`` of ``program``: XNNPACK's quantizer annotates it
    (static activation scales when it has convolutions, dynamic ones otherwise), observers see
    ``calibration``, and ``convert_pt2e`` replaces them with quantize/dequantize ops."""
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    class Quantizer(XNNPACKQuantizer):  # type: ignore[misc]
        """XNNPACK's quantizer, minus its turning integer scalars into float tensors."""

        def transform_for_annotation(self, model: Any) -> Any:
            """XNNPACK's transform with integer scalars left as they were."""
            return _restore_integer_scalars(super().transform_for_annotation(model))

    # aten.conv2d, conv1d, conv_transpose2d, convolution...: whatever the export kept.
    static = any(
        node.op == "call_function" and str(node.target).startswith("aten.conv")
        for node in program.graph.nodes
    )
    config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=not static)
    quantizer = Quantizer().set_global(config)
    # .module() builds a fresh GraphModule, so the shared fp32 program stays untouched.
    prepared = prepare_pt2e(program.module(), quantizer)
    with torch.no_grad():
        for inputs in calibration:
            prepared(*(torch.from_numpy(np.ascontiguousarray(a)) for a in inputs))
    return convert_pt2e(prepared)


def lower_pt2e_xnnpack(converted: Any, args: tuple[Any, ...]) -> Any:
    """The ExecuTorch program of a fake-quantized ``GraphModule``, its int8 pairs fused into
    XNNPACK kernels (``.buffer`` is the ``.pte`` file)."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    quantized = torch.export.export(converted, args)
    lowered = to_edge_transform_and_lower(quantized, partitioner=[XnnpackPartitioner()])
    return lowered.to_executorch()


def _restore_integer_scalars(model: Any) -> Any:
    """Undo ExecuTorch 1.4.1's scalar conversion on integer adds and muls.

    Before annotating, XNNPACKQuantizer replaces every scalar argument of ``add``/``mul`` with a
    0-d float32 buffer so that it can be observed. On integer arithmetic (position ids:
    ``arange(n) + 2``) that makes the result float, and the ``index`` it feeds then fails with
    "tensors used as indices must be long". An integer-valued node cannot have a 0-d float
    tensor argument otherwise (type promotion would make it float), so those are put back.
    """
    import torch

    targets = (torch.ops.aten.add.Tensor, torch.ops.aten.mul.Tensor)
    for node in model.graph.nodes:
        dtype = getattr(node.meta.get("val"), "dtype", None)
        if node.target not in targets or dtype is None or dtype.is_floating_point:
            continue
        args = []
        for arg in node.args:
            is_attr = getattr(arg, "op", "") == "get_attr"
            value = getattr(model, arg.target, None) if is_attr else None
            if isinstance(value, torch.Tensor) and value.ndim == 0 and value.is_floating_point():
                number = value.item()
                arg = int(number) if float(number).is_integer() else number
            args.append(arg)
        node.args = tuple(args)
    model.graph.eliminate_dead_code()
    model.recompile()
    return model
