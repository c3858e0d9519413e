"""Every layer's output of a PyTorch model, for the per-layer error table.

Imported by the runner-side backend only when a test asks for the table (``layer_errors``).

The matching points are the nodes of a ``torch.export`` graph: every ATen operator call, named
as the exporter names it (``conv2d_3``, ``relu_1``) and shown with its operator and the module
it sits in (``conv2d (features.1.0)``). That is finer than a module's output (residual adds,
attention's matmuls and softmax are rows too), and the same on both sides, since both are export
graphs: an :class:`torch.fx.Interpreter` runs each graph op by op and keeps every floating-point
tensor a node returns.

* The reference is the model's fp32 eager factory (``entry``), exported at the test's inputs:
  the model as written, before any file was made from it. A ``layer_reference`` ``.pt2`` file
  replaces it (a quantized program against its fp32 one, say).
* ``export`` mode tests its loaded ``ExportedProgram``. Exported by the same torch from the same
  code, its nodes carry the very names of the reference's; a program from another torch
  version or another model lists the names that found no partner.
* ``eager`` mode tests the eager model by replaying its export graph under the mode's autocast
  (``bf16``), which reproduces eager's numerics operator by operator; at fp32 it is the
  reference itself, every row at the ceiling.
* ``torchscript``, ``aoti`` and ``compile`` have no table (:class:`LayersUnavailable`): a
  compiled model's intermediate tensors never exist, fused into generated kernels.

The description says how far the replayed model's outputs are from the timed model's when they
differ beyond fp32 rounding, so a replay that does not reproduce the timed numbers is visible.
"""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from benchlab.runner.accuracy import SQNR_CEILING_DB
from benchlab.runner.layers import layer_error
from benchlab.runner.backend import LayersUnavailable

__all__ = [
    "LayerCapture",
    "capture_layers",
    "export_graph",
    "moved",
    "op_label",
    "run_layers",
    "unavailable_reason",
]

# Outputs this close to the timed model's differ by fp32 rounding only; below it the description
# says how far the replay moved them.
_MOVED_DB = 100.0

#: ``(values by node name, (node name, op label) in graph order, the graph's outputs)``.
LayerCapture = tuple[dict[str, np.ndarray], list[tuple[str, str]], list[np.ndarray]]


def unavailable_reason(mode: str) -> str | None:
    """Why ``mode`` has no layer table, or ``None`` when it has one."""
    if mode in ("aoti", "compile"):
        return (f"{mode} mode runs generated kernels that fuse the layers: their intermediate "
                "tensors never exist, so there is no layer table (the eager and export modes' "
                "tables show the model's layers)")
    if mode == "torchscript":
        return ("benchlab does not instrument TorchScript graphs, so there is no layer table "
                "(the eager and export modes' tables show the model's layers)")
    return None


def export_graph(model: Any, args: Sequence[torch.Tensor], what: str) -> torch.fx.GraphModule:
    """``model`` exported at ``args``, as a runnable graph; ``what`` names it in the error."""
    try:
        return torch.export.export(model, tuple(args)).module()
    except Exception as exc:  # export refuses many eager models: say why, measure the rest
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LayersUnavailable(f"torch.export cannot trace {what} to expose its layers: "
                                f"{first[:300]}") from exc


def op_label(node: torch.fx.Node) -> str:
    """``conv2d (features.1.0)``: the node's operator and the module it sits in."""
    target = node.target
    if target is operator.getitem and node.args and isinstance(node.args[0], torch.fx.Node):
        op = f"{op_label(node.args[0]).split(' ')[0]}[{node.args[1]}]"
    else:
        packet = getattr(target, "overloadpacket", None)
        op = getattr(packet, "__name__", None) or getattr(target, "__name__", str(target))
    stack = node.meta.get("nn_module_stack") or {}
    where = next(reversed(stack.values()), ("", None))[0] if stack else ""
    return f"{op} ({where})" if where else op


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    """A float copy numpy can hold (bfloat16 widened), detached from the graph's buffers."""
    wide = tensor.detach().float() if tensor.dtype == torch.bfloat16 else tensor.detach()
    return wide.cpu().numpy().copy()


def _leaves(value: Any) -> list[np.ndarray]:
    if isinstance(value, torch.Tensor):
        return [_numpy(value)]
    if isinstance(value, dict):
        return [a for item in value.values() for a in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [a for item in value for a in _leaves(item)]
    return []


class _Recorder(torch.fx.Interpreter):
    """Runs a graph and keeps what every operator node returns, when it is a float tensor."""

    def __init__(self, module: torch.fx.GraphModule) -> None:
        super().__init__(module)
        self.values: dict[str, np.ndarray] = {}
        self.order: list[tuple[str, str]] = []

    def run_node(self, n: torch.fx.Node) -> Any:
        """One node, as the interpreter runs it; its output kept when it is a layer's."""
        out = super().run_node(n)
        if n.op == "call_function" and isinstance(out, torch.Tensor) and out.is_floating_point():
            self.values[n.name] = _numpy(out)
            self.order.append((n.name, op_label(n)))
        return out


def run_layers(module: torch.fx.GraphModule, args: Sequence[torch.Tensor],
               autocast: torch.dtype | None = None) -> LayerCapture:
    """Every node's float output of one run of ``module`` (under CPU autocast to ``autocast``
    when given), the nodes in graph order, and the graph's outputs."""
    recorder = _Recorder(module)
    cast = (torch.autocast("cpu", dtype=autocast) if autocast is not None
            else contextlib.nullcontext())
    with torch.no_grad(), cast:
        result = recorder.run(*args)
    return recorder.values, recorder.order, _leaves(result)


def moved(replayed: Sequence[np.ndarray], timed: Sequence[np.ndarray]) -> str:
    """What the description adds when the replay's outputs are not the timed model's."""
    if len(replayed) != len(timed):
        return (f"; the replayed graph returns {len(replayed)} outputs, the timed model "
                f"{len(timed)}")
    worst = min((layer_error("", "", r, t).sqnr for r, t in zip(replayed, timed, strict=True)
                 if np.issubdtype(np.asarray(t).dtype, np.floating)
                 and np.asarray(r).size == np.asarray(t).size), default=SQNR_CEILING_DB)
    if worst >= _MOVED_DB:
        return ""
    return f"; the replayed graph's outputs sit at {worst:.1f} dB SQNR of the timed model's"


def capture_layers(
    mode: str, autocast: torch.dtype | None, model: Any, inputs: dict[str, np.ndarray],
    reference_path: str | None, entry_model: Callable[[], Any] | None,
    timed: Callable[[], Sequence[np.ndarray]],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[tuple[str, str]], str]:
    """The backend's ``layer_outputs`` (see the module docstring for what is compared).

    ``model`` is the loaded model: the exported program's module in export mode, the eager
    module in eager mode. ``entry_model`` builds the fp32 eager model (``None`` without an entry);
    ``timed`` returns the timed model's outputs for ``inputs``.
    """
    why = unavailable_reason(mode)
    if why:
        raise LayersUnavailable(why)
    args = [torch.from_numpy(array) for array in inputs.values()]
    graph = model if mode == "export" else export_graph(model, args, "the eager model")
    own, order, outputs = run_layers(graph, args, autocast)
    if reference_path:
        reference = torch.export.load(reference_path).module()
        described = f"{os.path.basename(reference_path)} (torch.export graph, fp32)"
    elif mode == "eager":
        # The eager model is the entry's: its fp32 run is the reference.
        reference = graph
        described = "the same eager model at fp32 (its torch.export graph)"
    elif entry_model is not None:
        reference = export_graph(entry_model(), args, "the entry's fp32 model")
        described = "the entry's fp32 eager model (its torch.export graph)"
    else:
        raise LayersUnavailable("no reference to compare the layers with: the model has no "
                                "entry (its fp32 factory) and no layer reference file")
    theirs = own if reference is graph and autocast is None else run_layers(reference, args)[0]
    return own, theirs, order, described + moved(outputs, timed())
