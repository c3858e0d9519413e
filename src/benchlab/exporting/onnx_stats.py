"""Parameter and FLOP counts read off an ONNX graph, for models the zoo has no torch code for.

The convention is the one of ``torch.utils.flop_counter.FlopCounterMode``, so ONNX-only and
torch models of the zoo compare: FLOPs are 2 × the multiply-adds of the convolutions and
matrix products only (Conv, ConvTranspose, Gemm, MatMul and their integer/QLinear forms); bias
additions, activations, normalisation, pooling and every other op count 0, as in torch.
Ops inside control-flow subgraphs (If, Loop, Scan) are not counted.

Parameters are the elements of the floating-point tensors the graph stores: initializers,
``Constant`` nodes and ``ConstantOfShape`` outputs of constant shape (ONNX's light model-zoo
graphs build their weights that way). Scalars (one element) are left out since exporters
emit them for literals such as GELU's 0.5. Unlike ``sum(p.numel() for p in m.parameters())``
this includes stored buffers (batch-norm running statistics) unless the exporter folded them.

This module imports onnx and numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

__all__ = ["onnx_params_and_flops"]

_FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16 (onnx.TensorProto)


def _dims(type_proto: object) -> list[int] | None:
    """Static dims of a tensor type, or None when any dim is symbolic or the rank unknown."""
    tensor = getattr(type_proto, "tensor_type", None)
    if tensor is None or not tensor.HasField("shape"):
        return None
    dims = []
    for dim in tensor.shape.dim:
        if not dim.HasField("dim_value"):
            return None
        dims.append(int(dim.dim_value))
    return dims


def _fix_input_shapes(model: object, input_shapes: Sequence[Sequence[int]]) -> None:
    """Overwrite the graph inputs' dims so that symbolic dims (batch) become concrete."""
    graph = model.graph  # type: ignore[attr-defined]
    initializers = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    for value, shape in zip(inputs, input_shapes, strict=False):
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for size in shape:
            dims.add().dim_value = int(size)


def _constant_params(model: object) -> int:
    """Elements of the floating-point tensors stored in the graph (see the module docstring)."""
    from onnx import numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    count = sum(
        math.prod(t.dims) for t in graph.initializer
        if t.data_type in _FLOAT_TYPES and math.prod(t.dims) > 1
    )
    constants = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.t.data_type in _FLOAT_TYPES:
                    size = math.prod(attr.t.dims)
                    count += size if size > 1 else 0
                if attr.name == "value":
                    constants[node.output[0]] = attr.t
        elif node.op_type == "ConstantOfShape" and node.input[0] in constants:
            dtype = next(
                (a.t.data_type for a in node.attribute if a.name == "value"), 1  # default float
            )
            if dtype in _FLOAT_TYPES:
                size = int(math.prod(numpy_helper.to_array(constants[node.input[0]]).tolist()))
                count += size if size > 1 else 0
    return int(count)


def _node_flops(node: object, shapes: dict[str, list[int]]) -> int:
    """2 × multiply-adds of one node, 0 for ops outside the convention or of unknown shape."""
    op = node.op_type  # type: ignore[attr-defined]
    ins = list(node.input)  # type: ignore[attr-defined]
    out = shapes.get(node.output[0]) if node.output else None  # type: ignore[attr-defined]
    if out is None:
        return 0
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        weight = shapes.get(ins[3] if op == "QLinearConv" else ins[1])
        # Out elements × (Cin/groups × kernel) multiply-adds each; the weight's dims after
        # the first are exactly Cin/groups × kH × kW, so groups need no special case.
        return 2 * math.prod(out) * math.prod(weight[1:]) if weight else 0
    if op == "ConvTranspose":
        x, weight = shapes.get(ins[0]), shapes.get(ins[1])
        # Each input element scatters into Cout/groups × kernel outputs (torch's convention).
        return 2 * math.prod(x) * math.prod(weight[1:]) if x and weight else 0
    if op == "Gemm":
        a = shapes.get(ins[0])
        if not a or len(a) != 2:
            return 0
        attributes = node.attribute  # type: ignore[attr-defined]
        trans_a = any(at.name == "transA" and at.i for at in attributes)
        return 2 * math.prod(out) * (a[0] if trans_a else a[1])
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        a = shapes.get(ins[0])
        return 2 * math.prod(out) * a[-1] if a else 0
    return 0


def onnx_params_and_flops(
    path: str | Path, input_shapes: Sequence[Sequence[int]] | None = None
) -> tuple[int, int]:
    """Parameter count and FLOPs of one forward pass of the ONNX model at ``path``.

    ``input_shapes`` fixes the graph inputs' dims (one shape per non-initializer input, in
    order), needed when the graph has symbolic dims. Shapes come from ONNX shape inference
    with data propagation; a Conv or MatMul whose shapes it cannot infer counts 0. External
    data is never loaded: only the dims of the tensors are read.
    """
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    if input_shapes is not None:
        _fix_input_shapes(model, input_shapes)
    params = _constant_params(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # a graph shape inference rejects still has params
        inferred = model
    graph = inferred.graph
    shapes: dict[str, list[int]] = {t.name: list(t.dims) for t in graph.initializer}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        dims = _dims(value.type)
        if dims is not None:
            shapes[value.name] = dims
    flops = sum(_node_flops(node, shapes) for node in graph.node)
    return params, int(flops)
