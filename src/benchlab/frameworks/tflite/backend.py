"""Runner-side LiteRT backend: the only module of the ``tflite`` adapter that imports LiteRT.

What one timed iteration costs: ``set_tensor`` for every input (a copy into the interpreter's
input buffers) followed by ``invoke()``. That is what an application pays per inference with
this API; the alternative of writing the inputs once and timing ``invoke()`` alone would make
LiteRT look cheaper than the runtimes whose timed call takes the inputs (ONNX Runtime,
ExecuTorch). Reading the outputs is not timed, as for the other backends.

Delegation coverage (:func:`node_coverage`): applying a delegate in ``allocate_tensors``
appends one ``DELEGATE`` node per partition to the subgraph and leaves the nodes it replaced
in the node list (they no longer run). The nodes a ``DELEGATE`` node replaced are those
between its input and its output tensors, which the interpreter's node list gives.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ai_edge_litert
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from benchlab.schema.diagnosis import Coverage
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.runner.backend import ProfilingUnavailable
from benchlab.schema.result import DetailKey

__all__ = ["BUILTIN", "XNNPACK", "TfliteBackend", "from_output", "node_coverage", "to_input"]

_QUANTIZED = (np.int8, np.uint8, np.int16)
XNNPACK = "XNNPACK"
BUILTIN = "builtin"
_DELEGATE_OP = "DELEGATE"
_COVERAGE_METHOD = ("the interpreter's nodes after allocate_tensors: each DELEGATE node "
                    "replaces the nodes between its input and output tensors")


def _natural(name: str) -> list[Any]:
    """Sort key that puts ``output_2`` before ``output_10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def to_input(detail: dict[str, Any], array: np.ndarray) -> np.ndarray:
    """``array`` as the input tensor ``detail`` takes it: its dtype, quantized if need be.

    Float data for a quantized integer input (a fully int8 model) is quantized with the
    tensor's own scale and zero point; anything else is cast.
    """
    dtype = np.dtype(detail["dtype"])
    scale, zero_point = detail["quantization"]
    if dtype.type in _QUANTIZED and scale and np.issubdtype(array.dtype, np.floating):
        info = np.iinfo(dtype)
        array = np.clip(np.round(array / scale + zero_point), info.min, info.max)
    return np.ascontiguousarray(array, dtype=dtype)


def from_output(detail: dict[str, Any], array: np.ndarray) -> np.ndarray:
    """An output tensor's values; quantized integers come back dequantized to float32.

    Dequantizing makes a fully int8 model's outputs comparable with an fp32 reference.
    """
    scale, zero_point = detail["quantization"]
    if np.dtype(detail["dtype"]).type in _QUANTIZED and scale:
        return ((array.astype(np.float32) - zero_point) * scale).astype(np.float32)
    return array


def _replaced(delegate: Mapping[str, Any], producers: Mapping[int, Mapping[str, Any]]
              ) -> set[int]:
    """The nodes one ``DELEGATE`` node replaced: from its outputs back to its inputs.

    The interpreter gives a delegate kernel's node exactly the input and output tensors of
    the partition it replaces (constants included), so walking producers back from its
    outputs, stopping at its inputs, visits that partition's nodes and no other.
    """
    boundary = {int(t) for t in delegate["inputs"]}
    pending = [int(t) for t in delegate["outputs"]]
    seen: set[int] = set()
    nodes: set[int] = set()
    while pending:
        tensor = pending.pop()
        if tensor in seen or tensor in boundary or tensor not in producers:
            continue  # a partition input, a constant or a model input: outside
        seen.add(tensor)
        node = producers[tensor]
        if int(node["index"]) not in nodes:
            nodes.add(int(node["index"]))
            pending.extend(int(t) for t in node["inputs"] if t >= 0)  # -1: optional, absent
    return nodes


def node_coverage(ops: Sequence[Mapping[str, Any]], *, xnnpack: bool) -> Coverage:
    """XNNPACK's coverage from the interpreter's node list (``_get_ops_details()``).

    ``ops`` is the first subgraph's node list after ``allocate_tensors``: the model's own
    nodes, then one ``DELEGATE`` node per partition the delegate took. ``nodes`` counts the
    model's own, ``delegated`` those some ``DELEGATE`` node replaced, ``fallback`` the types
    of the rest, which run on LiteRT's built-in kernels. XNNPACK is ``asked`` when the
    ``xnnpack`` option is on (its default): benchlab applies it on purpose. Without it the
    engine is the built-in kernels, which run every node.
    """
    own = [op for op in ops if op["op_name"] != _DELEGATE_OP]
    if not xnnpack:
        return Coverage(engine=BUILTIN, method=_COVERAGE_METHOD, nodes=len(own),
                        delegated=len(own), by_engine={BUILTIN: len(own)})
    producers = {int(t): op for op in own for t in op["outputs"] if t >= 0}
    partitions = [op for op in ops if op["op_name"] == _DELEGATE_OP]
    taken: set[int] = set()
    for partition in partitions:
        taken |= _replaced(partition, producers)
    fallback = Counter(str(op["op_name"]) for op in own if int(op["index"]) not in taken)
    return Coverage(
        engine=XNNPACK, method=_COVERAGE_METHOD, asked=True, nodes=len(own),
        delegated=len(taken), partitions=len(partitions), fallback=dict(fallback),
        by_engine={XNNPACK: len(taken), BUILTIN: len(own) - len(taken)},
    )


class TfliteBackend:
    """A LiteRT ``Interpreter`` with the requested thread count, with or without XNNPACK."""

    def __init__(self, config: RunnerConfig) -> None:
        config.model_file("tflite needs a .tflite model file")
        self._config, self._options = config, config.options
        xnnpack = self._options.get("xnnpack", True)
        if not isinstance(xnnpack, bool):
            raise ValueError(f"xnnpack must be true or false, not {xnnpack!r}")
        self._xnnpack = xnnpack
        self._interpreter: Interpreter | None = None
        self._inputs: list[dict[str, Any]] = []
        self._outputs: list[dict[str, Any]] = []
        self._aliases: dict[int, str] = {}
        self._feeds: list[tuple[int, np.ndarray]] = []

    def load(self) -> None:
        """Build the interpreter and allocate its tensors (delegate preparation happens here)."""
        resolver = (OpResolverType.AUTO if self._xnnpack
                    else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        self._interpreter = Interpreter(
            model_path=self._config.model_path,
            num_threads=self._config.threads,
            experimental_op_resolver_type=resolver,
        )
        self._interpreter.allocate_tensors()
        self._inputs, self._outputs = self._ordered_details()

    def _ordered_details(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Input and output tensors in the model's signature order when it has one.

        ``get_input_details``/``get_output_details`` follow the subgraph's tensor lists, which
        nothing obliges a converter to keep in the source model's argument order. The
        signature names them after the source positions (``args_0``..., ``output_0``... from
        litert_torch), but keeps them in a string-sorted map, so ``output_10`` would come
        before ``output_2``: they are sorted naturally here. That order is used with a single
        signature whose tensors are exactly the interpreter's inputs and outputs; otherwise
        (no signature, several) the subgraph order stays.
        """
        assert self._interpreter is not None
        interp = self._interpreter
        inputs, outputs = interp.get_input_details(), interp.get_output_details()
        signatures = interp.get_signature_list()
        if len(signatures) != 1:
            return inputs, outputs
        runner = interp.get_signature_runner(next(iter(signatures)))
        sig_in = runner.get_input_details()
        sig_out = runner.get_output_details()
        by_index_in = {d["index"]: d for d in inputs}
        by_index_out = {d["index"]: d for d in outputs}
        if ({d["index"] for d in sig_in.values()} != set(by_index_in)
                or {d["index"] for d in sig_out.values()} != set(by_index_out)):
            return inputs, outputs
        self._aliases = {d["index"]: name for name, d in sig_in.items()}
        return (
            [by_index_in[sig_in[name]["index"]] for name in sorted(sig_in, key=_natural)],
            [by_index_out[sig_out[name]["index"]] for name in sorted(sig_out, key=_natural)],
        )

    def input_specs(self) -> list[InputConfig]:
        """Inputs from the model, named as its signature names them (``args_0``...)."""
        return [
            InputConfig(
                name=self._aliases.get(d["index"], d["name"]),
                shape=[int(s) for s in d["shape"]],
                dtype=np.dtype(d["dtype"]).name,
            )
            for d in self._inputs
        ]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Bind inputs by name (signature or tensor name) when all match, else by order.

        An input whose shape differs from the model's is resized (and the tensors
        re-allocated) here, so that the timed call never reallocates.
        """
        assert self._interpreter is not None
        interp = self._interpreter
        if len(inputs) != len(self._inputs):
            raise ValueError(f"the model takes {len(self._inputs)} inputs; got {len(inputs)} "
                             f"({', '.join(inputs)})")
        names = [(self._aliases.get(d["index"]), d["name"]) for d in self._inputs]
        if all(alias in inputs or name in inputs for alias, name in names):
            arrays = [inputs[alias] if alias in inputs else inputs[name] for alias, name in names]
        else:
            arrays = list(inputs.values())
        resized = False
        for detail, array in zip(self._inputs, arrays, strict=True):
            if tuple(detail["shape"]) != array.shape:
                interp.resize_tensor_input(detail["index"], list(array.shape))
                resized = True
        if resized:
            interp.allocate_tensors()
            self._inputs, self._outputs = self._ordered_details()
        self._feeds = [(d["index"], to_input(d, a))
                       for d, a in zip(self._inputs, arrays, strict=True)]
        feeds, set_tensor, invoke = self._feeds, interp.set_tensor, interp.invoke

        def call() -> None:
            for index, array in feeds:
                set_tensor(index, array)
            invoke()

        return call

    def outputs(self) -> list[np.ndarray]:
        """One more inference; outputs in signature order, quantized ones dequantized."""
        assert self._interpreter is not None
        for index, array in self._feeds:
            self._interpreter.set_tensor(index, array)
        self._interpreter.invoke()
        return [from_output(d, self._interpreter.get_tensor(d["index"])) for d in self._outputs]

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Not available: LiteRT's Python API exposes no per-operator profiler."""
        raise ProfilingUnavailable(
            f"ai-edge-litert {ai_edge_litert.__version__}: the Python Interpreter has no "
            "per-operator profiler (libLiteRt's profiler has no Python binding); run LiteRT's "
            "benchmark_model --enable_op_profiling=true on the target for per-op times"
        )

    def delegation(self) -> Coverage:
        """What XNNPACK took of the model (:func:`node_coverage`); a note if LiteRT cannot say.

        The node list comes from the interpreter's private ``_get_ops_details``, the only
        place LiteRT's Python API shows delegate nodes.
        """
        assert self._interpreter is not None
        engine = XNNPACK if self._xnnpack else BUILTIN
        try:
            ops = self._interpreter._get_ops_details()  # noqa: SLF001 - no public equivalent
            return node_coverage(ops, xnnpack=self._xnnpack)
        except Exception as error:  # noqa: BLE001 - a private API; say so, never fail the run
            return Coverage(engine=engine, method=_COVERAGE_METHOD, asked=self._xnnpack,
                            note=f"ai-edge-litert {ai_edge_litert.__version__} gives no usable "
                                 f"node list to Python ({error}), so the coverage is unknown")

    def _delegated(self) -> bool | None:
        """Whether a delegate (XNNPACK here) took over any nodes; ``None`` if unknowable."""
        assert self._interpreter is not None
        try:
            ops = self._interpreter._get_ops_details()  # noqa: SLF001 - no public equivalent
        except Exception:  # noqa: BLE001 - a private API; its absence must not fail the run
            return None
        return any(op.get("op_name") == "DELEGATE" for op in ops)

    def info(self) -> dict[str, Any]:
        """LiteRT version, threads, whether XNNPACK was asked for and applied, and the file."""
        assert self._interpreter is not None
        return {
            "runtime": "litert",
            DetailKey.RUNTIME_VERSION: ai_edge_litert.__version__,
            # None: LiteRT's default (-1), under which XNNPACK runs on the calling thread only.
            DetailKey.THREADS: self._config.threads,
            "xnnpack": self._xnnpack,
            "xnnpack_applied": self._delegated() if self._xnnpack else False,
            DetailKey.PRECISION: str(self._options.get("precision", "fp32")),
            "model_file": os.path.basename(str(self._config.model_path)),
        }
