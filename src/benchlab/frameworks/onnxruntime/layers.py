"""Every layer's output of an ONNX model in ONNX Runtime, for the per-layer error table.

Imported by the runner-side backend only when a test asks for the table (``layer_errors``).

Every tensor a node computes from the model's inputs becomes a graph output, given by name only:
ONNX Runtime works out its type and shape, so no shape inference is needed and graphs with
operators the onnx package does not know (ORT's contrib ops) work too. The model under test runs
once with its session's own options and providers; the reference model (another file, say the
fp32 model of an int8 one, or the same file) runs on the CPU provider with graph optimisations
off, so that its tensors keep the graph's own names and nothing is fused.

Rows follow the model under test's graph, whose nodes ONNX keeps in topological order. Tensors
computed from constants alone (weights being dequantized, shapes) are not layers and are left
out. In a QDQ graph a float tensor consumed only by QuantizeLinear→DequantizeLinear is read as
the dequantized value, on both sides: that is what the next layer receives and what ORT's fused
int8 kernel writes. The float tensor before it does not exist in the fused kernel, and it can
differ from the fp32 tensor of the same name for no real reason: ORT's quantizer drops a
Relu/Clip whose range the quantization clamps to anyway, giving the Conv its output's name. A
graph input quantized that way is a row of its own (op ``input``): the input's quantization.

Exposing a tensor stops ORT fusing across it, so the instrumented model may compute slightly
other numbers than the timed session; the description says how far its final outputs moved when
they did. The graph is read without its external data, changed, and handed to ORT as bytes with
the model's folder as the place of its external data, so a model over protobuf's 2 GB limit
works as well (only its graph travels).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnxruntime as ort

from benchlab.runner.accuracy import SQNR_CEILING_DB
from benchlab.runner.layers import layer_error

__all__ = ["INPUT_OP", "capture_layers", "layer_rows", "read_as"]

#: The op shown for a row that is a graph input as the model's first layer receives it.
INPUT_OP = "input"
_REFERENCE_PROVIDER = "CPUExecutionProvider"
# Where ORT looks for the external data of a model handed over as bytes.
_EXTERNAL_DATA_FOLDER = "session.model_external_initializers_file_folder_path"
# Final outputs this close to the timed session's differ by fp32 rounding only (fusions add in
# another order: 120-140 dB on mobilenet_v2); below it the description says how far they moved.
_MOVED_DB = 100.0

_Layers = tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[tuple[str, str]], str]


def _constants(graph: onnx.GraphProto) -> set[str]:
    """Tensors that do not depend on the model's inputs: initializers, Constant nodes, and
    what nodes compute from those alone."""
    known = {t.name for t in graph.initializer} | {t.name for t in graph.sparse_initializer}
    for node in graph.node:
        # A node with a subgraph (If, Loop) may read the inputs inside it, unlisted.
        nested = any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                     for a in node.attribute)
        if not nested and all(not name or name in known for name in node.input):
            known.update(name for name in node.output if name)
    return known


def read_as(graph: onnx.GraphProto) -> dict[str, str]:
    """``{tensor: DequantizeLinear output}`` for each tensor that reaches its consumers only
    through a QuantizeLinear→DequantizeLinear pair (see the module docstring)."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}
    found: dict[str, str] = {}
    for name, users in consumers.items():
        if name in outputs or not users or any(u.op_type != "QuantizeLinear" for u in users):
            continue
        dequantized = [d for q in users for d in consumers.get(q.output[0], [])
                       if d.op_type == "DequantizeLinear"]
        if dequantized:
            found[name] = dequantized[0].output[0]
    return found


def layer_rows(graph: onnx.GraphProto) -> list[tuple[str, str]]:
    """``(tensor, op type)`` of every layer output, in graph order: quantized graph inputs
    first, then each node's outputs that depend on the inputs, less the DequantizeLinear outputs
    that stand for a tensor already listed."""
    constants = _constants(graph)
    requantized = read_as(graph)
    stand_ins = set(requantized.values())
    rows = [(i.name, INPUT_OP) for i in graph.input
            if i.name in requantized and i.name not in constants]
    for node in graph.node:
        rows += [(name, node.op_type) for name in node.output
                 if name and name not in constants and name not in stand_ins]
    return rows


def _session(model: onnx.ModelProto, path: str, options: ort.SessionOptions,
             providers: Sequence[str]) -> ort.InferenceSession:
    options.add_session_config_entry(_EXTERNAL_DATA_FOLDER,
                                     os.path.dirname(os.path.abspath(path)))
    return ort.InferenceSession(model.SerializeToString(), options, providers=list(providers))


def _feeds(session: ort.InferenceSession, inputs: Mapping[str, np.ndarray]
           ) -> dict[str, np.ndarray]:
    """The inputs by the graph's names, or in its order when the names differ (as the backend
    binds them for the timed session)."""
    names = [arg.name for arg in session.get_inputs()]
    if set(names) <= set(inputs):
        return {n: inputs[n] for n in names}
    return dict(zip(names, inputs.values(), strict=False))


def _run_exposed(model: onnx.ModelProto, path: str, wanted: Sequence[str],
                 inputs: Mapping[str, np.ndarray], options: ort.SessionOptions,
                 providers: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Every tensor in ``wanted`` (graph inputs included) after one run with them exposed, and
    the names of the model's own outputs."""
    graph = model.graph
    finals = [o.name for o in graph.output]
    inputs_by_name = {i.name for i in graph.input}
    extra = [n for n in dict.fromkeys(wanted) if n not in finals and n not in inputs_by_name]
    graph.output.extend(onnx.ValueInfoProto(name=n) for n in extra)
    session = _session(model, path, options, providers)
    feeds = _feeds(session, inputs)
    names = [o.name for o in session.get_outputs()]
    values = dict(zip(names, session.run(names, feeds), strict=True))
    values.update(feeds)
    return values, finals


def _moved(got: Sequence[np.ndarray], timed: Sequence[np.ndarray]) -> str:
    """What the description says when exposing the layers changed the final outputs."""
    worst = min((layer_error("", "", g, t).sqnr for g, t in zip(got, timed, strict=True)
                 if np.issubdtype(np.asarray(t).dtype, np.floating)),
                default=SQNR_CEILING_DB)
    if worst >= _MOVED_DB:
        return ""
    return (f"; with its layers exposed the model's outputs sit at {worst:.1f} dB SQNR of the "
            "timed session's (ORT cannot fuse across an exposed tensor)")


def capture_layers(model_path: str, reference_path: str | None,
                   inputs: Mapping[str, np.ndarray], options: ort.SessionOptions,
                   providers: Sequence[str], timed: ort.InferenceSession) -> _Layers:
    """The backend's ``layer_outputs``: both models' layer outputs by the tested model's row
    names, its rows in graph order, and what the reference was.

    ``options`` and ``providers`` are the timed session's (a fresh options object, which this
    changes); ``timed`` is that session, run once more to see whether exposing the layers moved
    the final outputs. ``reference_path`` defaults to ``model_path``.
    """
    model = onnx.load(model_path, load_external_data=False)
    reference_path = reference_path or model_path
    reference = onnx.load(reference_path, load_external_data=False)
    present = ({o for node in reference.graph.node for o in node.output}
               | {i.name for i in reference.graph.input})
    own_reads = read_as(model.graph)
    # Each row's tensor in this model. A quantized tensor's row takes its DequantizeLinear
    # output's name where only that one is in the reference: ORT's quantizer renames so that
    # a graph output keeps its name (Gemm -> "y_QuantizeLinear_Input" -> Q -> DQ -> "y").
    rows: list[tuple[str, str]] = []
    reads: dict[str, str] = {}
    for name, op in layer_rows(model.graph):
        read = own_reads.get(name, name)
        shown = read if name not in present and read in present else name
        rows.append((shown, op))
        reads[shown] = read
    own_values, finals = _run_exposed(model, model_path, list(reads.values()), inputs, options,
                                      providers)
    own = {name: own_values[read] for name, read in reads.items() if read in own_values}

    theirs_reads = read_as(reference.graph)
    sources = {name: theirs_reads.get(name, name) for name, _ in rows if name in present}
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    their_values, _ = _run_exposed(reference, reference_path, list(sources.values()), inputs,
                                   plain, [_REFERENCE_PROVIDER])
    theirs = {name: their_values[src] for name, src in sources.items() if src in their_values}

    same = os.path.abspath(reference_path) == os.path.abspath(model_path)
    described = (f"{'this model' if same else os.path.basename(reference_path)} on "
                 f"{_REFERENCE_PROVIDER}, graph optimisations off")
    timed_outputs = timed.run(None, _feeds(timed, inputs))
    described += _moved([own_values[n] for n in finals], timed_outputs)
    return own, theirs, rows, described
