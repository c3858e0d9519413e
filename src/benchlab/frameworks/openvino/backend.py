"""Runner-side OpenVINO backend: the only module of the adapter that imports openvino.

Where the time goes: ``load_time`` is ``read_model`` (for an ``.onnx`` file that includes the
conversion to OpenVINO's graph) plus ``compile_model`` for the CPU. Inputs are bound to the
infer request(s) once, sharing the numpy buffers, so a timed call is the inference itself plus
a few microseconds of Python binding; outputs stay in the request's own tensors (no copy).

Delegation coverage (:func:`query_coverage`) is OpenVINO's own answer to which operations a
device supports (``Core.query_model``), asked once after timing.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import numpy as np
import openvino as ov

from benchlab.schema.diagnosis import Coverage
from benchlab.frameworks.openvino.options import HINTS, canonical_precision
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.schema.result import DetailKey

__all__ = ["NOT_COUNTED", "OpenVinoBackend", "query_coverage"]

_DEVICE = "CPU"
_MICROSECOND = timedelta(microseconds=1)
#: Operation types that carry data rather than compute: a model's inputs, outputs and weights.
#: They are left out of the coverage's operator count (every device "supports" them).
NOT_COUNTED = frozenset({"Parameter", "Result", "Constant"})
_COVERAGE_METHOD = "Core.query_model: the device that supports each operation"


def _runs_on(device: str) -> Callable[[str | None], bool]:
    """Whether a device named by ``query_model`` is the engine ``device`` asks for.

    ``HETERO:A,B`` asks for ``A`` first and falls back to the rest, so only ``A`` counts; any
    other device string answers with the device itself (``CPU``), or with its own name
    (``AUTO``, ``MULTI``) for what it can place: any answer counts.
    """
    head, _, rest = device.partition(":")
    if head.upper() == "HETERO" and rest:
        preferred = rest.split(",")[0].strip()
        return lambda assigned: assigned == preferred
    return lambda assigned: assigned is not None


def query_coverage(core: ov.Core, model: ov.Model, device: str,
                   config: Mapping[str, Any] | None = None) -> Coverage:
    """How much of ``model`` ``device`` supports, by OpenVINO's ``Core.query_model``.

    ``nodes`` counts the model's operations except :data:`NOT_COUNTED` (Parameter, Result,
    Constant), those of the top-level graph (an If or Loop counts once, its bodies not
    apart); ``delegated`` those the query assigns to the device, ``fallback`` the types of
    the rest. Plain ``CPU`` is what the backend always compiles for, not a choice: it is
    not ``asked``, so a CPU-only run is never flagged; any other device string is.
    """
    assigned: dict[str, str] = dict(core.query_model(model, device, dict(config or {})))
    counted = [op for op in model.get_ordered_ops() if op.get_type_name() not in NOT_COUNTED]
    runs_on = _runs_on(device)
    by_engine = Counter(assigned[op.get_friendly_name()] for op in counted
                        if op.get_friendly_name() in assigned)
    fallback = Counter(op.get_type_name() for op in counted
                       if not runs_on(assigned.get(op.get_friendly_name())))
    unplaced = sum(1 for op in counted if op.get_friendly_name() not in assigned)
    note = (f"no device of {device} supports {unplaced} of the model's operations: the "
            "model cannot be compiled for it") if unplaced else ""
    return Coverage(
        engine=device, method=_COVERAGE_METHOD, asked=device.upper() != "CPU",
        nodes=len(counted), delegated=len(counted) - sum(fallback.values()), partitions=None,
        fallback=dict(fallback), by_engine=dict(by_engine), note=note,
    )


def _node_averages(request: ov.InferRequest) -> dict[str, tuple[str, int]]:
    """Node name → (node type, average real time in µs) of every executed node."""
    executed = ov.ProfilingInfo.Status.EXECUTED
    return {
        node.node_name: (node.node_type, node.real_time // _MICROSECOND)
        for node in request.profiling_info
        if node.status == executed
    }


class OpenVinoBackend:
    """A model compiled for OpenVINO's CPU plugin with an explicit inference precision."""

    def __init__(self, config: RunnerConfig) -> None:
        config.model_file("openvino needs a model file (.xml IR or .onnx)")
        self._config = config
        options = config.options
        precision = canonical_precision(options.get("precision", "f32"))
        if precision is None:
            raise ValueError(f"openvino precision {options.get('precision')!r} is not one of "
                             "f32, bf16, f16")
        self._precision = precision
        self._hint = str(options.get("hint", "latency")).lower()
        if self._hint not in HINTS:
            raise ValueError(f"openvino hint must be one of {', '.join(HINTS)}")
        self._source_format = "onnx" if config.model_path.lower().endswith(".onnx") else "ir"
        self._core = ov.Core()
        self._model: ov.Model | None = None
        self._compiled: ov.CompiledModel | None = None
        self._request: ov.InferRequest | None = None
        self._queue: ov.AsyncInferQueue | None = None
        self._requests_per_call = 1
        # Tensors bound with shared memory point into these arrays: keep them alive.
        self._arrays: list[np.ndarray] = []

    def _compile_config(self, *, profiling: bool = False) -> dict[str, Any]:
        config: dict[str, Any] = {
            "PERFORMANCE_HINT": self._hint.upper(),
            # Always explicit: the CPU plugin's default is bf16 wherever the CPU has bf16.
            "INFERENCE_PRECISION_HINT": self._precision,
            "PERF_COUNT": "YES" if profiling else "NO",
        }
        if self._config.threads:
            config["INFERENCE_NUM_THREADS"] = int(self._config.threads)
        streams = self._config.options.get("streams")
        if streams is not None:
            config["NUM_STREAMS"] = "AUTO" if str(streams).lower() == "auto" else int(streams)
        return config

    def load(self) -> None:
        """Read the IR (or convert the ONNX file) and compile it for the CPU."""
        weights = self._config.extra_files.get("weights")
        path = self._config.model_path
        assert path is not None
        # The zoo's .xml and .bin live in different cache directories, so the weights are
        # always named rather than found next to the .xml.
        self._model = self._core.read_model(path, weights) if weights else self._core.read_model(
            path
        )
        self._compiled = self._core.compile_model(self._model, _DEVICE, self._compile_config())

    def input_specs(self) -> list[InputConfig]:
        """Inputs from the compiled model; dynamic dimensions take their lower bound (≥ 1)."""
        assert self._compiled is not None
        specs = []
        for index, port in enumerate(self._compiled.inputs):
            shape = [
                dim.get_length() if dim.is_static else max(dim.get_min_length(), 1)
                for dim in port.get_partial_shape()
            ]
            name = port.get_any_name() if port.get_names() else f"input{index}"
            dtype = np.dtype(port.get_element_type().to_dtype()).name
            specs.append(InputConfig(name=name, shape=shape, dtype=dtype))
        return specs

    def _bind(self, request: ov.InferRequest) -> None:
        for index, array in enumerate(self._arrays):
            request.set_input_tensor(index, ov.Tensor(array, shared_memory=True))

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Bind inputs (by name, else by order) and return one request's or one batch's run."""
        assert self._compiled is not None
        ports = self._compiled.inputs
        by_name = [sorted(port.get_names() & set(inputs)) for port in ports]
        if all(by_name):
            arrays = [inputs[names[0]] for names in by_name]
        else:
            arrays = list(inputs.values())[: len(ports)]
        self._arrays = [np.ascontiguousarray(a) for a in arrays]
        if self._hint == "latency":
            request = self._compiled.create_infer_request()
            self._bind(request)
            self._request = request
            return lambda: request.infer(share_outputs=True)
        # Throughput: keep OpenVINO's recommended number of requests in flight; one timed call
        # is all of them started and finished, so throughput = batch × requests / latency.
        count = max(1, int(self._compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        queue = ov.AsyncInferQueue(self._compiled, count)
        for index in range(len(queue)):
            self._bind(queue[index])
        self._queue, self._requests_per_call = queue, count

        def run_all() -> None:
            for _ in range(count):
                queue.start_async()
            queue.wait_all()

        return run_all

    def _last_request(self) -> ov.InferRequest:
        if self._request is not None:
            return self._request
        assert self._queue is not None
        return self._queue[0]

    def outputs(self) -> list[np.ndarray]:
        """One more run; copies of the first request's output tensors, in output order."""
        assert self._compiled is not None
        if self._request is not None:
            self._request.infer(share_outputs=True)
        else:
            assert self._queue is not None
            self._queue[0].infer(share_outputs=True)
        request = self._last_request()
        return [
            np.array(request.get_output_tensor(i).data, copy=True)
            for i in range(len(self._compiled.outputs))
        ]

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Per-iteration ``real_time`` per node type (executed nodes only), from one request.

        A second model is compiled with ``PERF_COUNT`` so that the timed model never pays for
        the counters. The CPU plugin reports each node's *running average* since compilation,
        in whole microseconds, so one iteration's time is recovered as ``n·avg(n) −
        (n−1)·avg(n−1)``: exact up to the truncation (under ``n`` µs per node, clamped at 0).
        Counters live per stream, so a multi-stream model (the throughput hint) is profiled as
        one stream with the threads one stream of the timed model gets.
        """
        assert self._compiled is not None
        overrides: dict[str, Any] = {}
        streams = int(self._compiled.get_property("NUM_STREAMS"))
        if streams > 1:
            threads = int(self._compiled.get_property("INFERENCE_NUM_THREADS"))
            overrides = {"NUM_STREAMS": 1, "INFERENCE_NUM_THREADS": max(1, threads // streams)}
        assert self._model is not None
        compiled = self._core.compile_model(
            self._model, _DEVICE, {**self._compile_config(profiling=True), **overrides}
        )
        request = compiled.create_infer_request()
        self._bind(request)
        # The first inference creates shape-specific kernels; differencing removes it.
        request.infer(share_outputs=True)
        previous, runs = _node_averages(request), 1
        per_iteration: list[dict[str, float]] = []
        for _ in range(iterations):
            request.infer(share_outputs=True)
            runs += 1
            current = _node_averages(request)
            ops: dict[str, float] = {}
            for name, (node_type, average) in current.items():
                before = previous.get(name, (node_type, 0))[1]
                micros = max(0, runs * average - (runs - 1) * before)
                ops[node_type] = ops.get(node_type, 0.0) + micros / 1000.0
            per_iteration.append(ops)
            previous = current
        return per_iteration

    def delegation(self) -> Coverage:
        """What the CPU plugin supports of the model, for the configuration compiled.

        A query that fails gives a coverage whose note says why: the diagnosis never fails
        the measured job.
        """
        assert self._model is not None
        try:
            return query_coverage(self._core, self._model, _DEVICE, self._compile_config())
        except Exception as error:  # noqa: BLE001 - any failure: say so, keep the measurement
            return Coverage(engine=_DEVICE, method=_COVERAGE_METHOD,
                            note=f"Core.query_model failed: {error}")

    def info(self) -> dict[str, Any]:
        """The configuration the compiled model actually uses, read back from it."""
        assert self._compiled is not None
        compiled = self._compiled
        actual = compiled.get_property("INFERENCE_PRECISION_HINT")
        type_name = actual.get_type_name() if hasattr(actual, "get_type_name") else str(actual)
        return {
            "runtime": "openvino",
            # ov.__version__ is "2026.4.1-22982-<commit>-releases/..."; the part before the
            # first "-" is the distribution's version, comparable with other reports.
            DetailKey.RUNTIME_VERSION: ov.__version__.split("-")[0],
            "runtime_build": ov.__version__,
            "device": _DEVICE,
            "device_name": self._core.get_property(_DEVICE, "FULL_DEVICE_NAME"),
            DetailKey.PRECISION: canonical_precision(type_name) or type_name,
            "requested_precision": self._precision,
            DetailKey.HINT: str(compiled.get_property("PERFORMANCE_HINT")).lower(),
            DetailKey.NSTREAMS: int(compiled.get_property("NUM_STREAMS")),
            DetailKey.THREADS: int(compiled.get_property("INFERENCE_NUM_THREADS")),
            DetailKey.REQUESTS_PER_CALL: self._requests_per_call,
            "source_format": self._source_format,
            "model_file": os.path.basename(self._config.model_path or ""),
        }
