"""Runner-side ONNX Runtime backend: the only module of the adapter that imports onnxruntime."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import Fail as OrtFail

from benchlab.schema.diagnosis import Coverage
from benchlab.frameworks.onnxruntime.placement import coverage_from_events
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.schema.result import DetailKey

__all__ = ["OnnxRuntimeBackend"]

_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
_ORT_TYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


class OnnxRuntimeBackend:
    """An ``InferenceSession`` with the requested providers, threads and optimisation level."""

    def __init__(self, config: RunnerConfig) -> None:
        config.model_file("onnxruntime needs a model file")
        self._config, self._options = config, config.options
        self._session: ort.InferenceSession | None = None
        self._feeds: dict[str, np.ndarray] = {}

    @property
    def _global_pool(self) -> bool:
        pool = str(self._options.get("thread_pool", "session"))
        if pool not in ("session", "global"):
            raise ValueError(f"thread_pool must be 'session' or 'global', not {pool!r}")
        return pool == "global"

    @property
    def _spinning(self) -> bool:
        return str(self._options.get("spinning", True)).lower() not in ("false", "0", "no")

    def _session_options(self, profile_prefix: str | None = None) -> ort.SessionOptions:
        so = ort.SessionOptions()
        threads = self._options.get("intra_op_threads", self._config.threads)
        inter = int(self._options.get("inter_op_threads", 1))
        if self._global_pool:
            try:
                # Once per process, before the first session; a second session (the other
                # side of an interleaved A/B) finds the pool made and shares it.
                ort.capi._pybind_state.set_global_thread_pool_sizes(int(threads or 0), inter)
            except OrtFail:
                pass
            so.use_per_session_threads = False
        else:
            if threads:
                so.intra_op_num_threads = int(threads)
            so.inter_op_num_threads = inter
        if not self._spinning:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        level = str(self._options.get("graph_optimization_level", "all"))
        if level not in _LEVELS:
            raise ValueError(f"graph_optimization_level must be one of {sorted(_LEVELS)}")
        so.graph_optimization_level = _LEVELS[level]
        if profile_prefix:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        return so

    def _providers(self) -> list[str]:
        requested = self._options.get("providers", ["CPUExecutionProvider"])
        if isinstance(requested, str):  # from the command line: "A+B" lists two in order
            requested = [p.strip() for p in requested.split("+") if p.strip()]
        available = ort.get_available_providers()
        missing = [p for p in requested if p not in available]
        if missing:
            # ORT would fall back to the CPU silently and the result would lie about what ran.
            raise ValueError(
                f"execution provider(s) {', '.join(missing)} not available here; "
                f"available: {', '.join(available)}"
            )
        return list(requested)

    def load(self) -> None:
        """Create the inference session (graph optimisation happens here and is timed)."""
        self._session = ort.InferenceSession(
            self._config.model_path, self._session_options(), providers=self._providers()
        )

    def input_specs(self) -> list[InputConfig]:
        """Inputs from the graph; symbolic dimensions become 1."""
        assert self._session is not None
        specs = []
        for arg in self._session.get_inputs():
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in arg.shape]
            specs.append(
                InputConfig(name=arg.name, shape=shape, dtype=_ORT_TYPES.get(arg.type, "float32"))
            )
        return specs

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Feeds are bound by the graph's input order when the names differ from the spec's."""
        assert self._session is not None
        names = [arg.name for arg in self._session.get_inputs()]
        arrays = list(inputs.values())
        self._feeds = {n: inputs[n] for n in names} if set(names) <= set(inputs) else dict(
            zip(names, arrays, strict=False)
        )
        session, feeds = self._session, self._feeds
        return lambda: session.run(None, feeds)

    def outputs(self) -> list[np.ndarray]:
        """One more run; ONNX Runtime already returns numpy arrays in graph output order."""
        assert self._session is not None
        return list(self._session.run(None, self._feeds))

    def _profiled_events(self, iterations: int) -> list[dict[str, Any]]:
        """The profiler's events of a separate session, configured as the timed one, run
        ``iterations`` times on the prepared feeds."""
        with tempfile.TemporaryDirectory() as tmp:
            session = ort.InferenceSession(
                self._config.model_path,
                self._session_options(os.path.join(tmp, "ort")),
                providers=self._providers(),
            )
            for _ in range(iterations):
                session.run(None, self._feeds)
            with open(session.end_profiling()) as handle:
                events: list[dict[str, Any]] = json.load(handle)
        return events

    def delegation(self) -> Coverage:
        """Which provider ran each node, from one profiled run (see ``placement.py``)."""
        return coverage_from_events(self._profiled_events(1), self._providers())

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Per-iteration kernel times per op type, from a separate profiling session."""
        events = self._profiled_events(iterations)
        runs = sorted(
            (e["ts"], e["ts"] + e["dur"])
            for e in events
            if e.get("cat") == "Session" and e.get("name") == "model_run"
        )
        per_run: list[dict[str, float]] = [{} for _ in runs]
        for event in events:
            if event.get("cat") != "Node" or not event.get("name", "").endswith("_kernel_time"):
                continue
            op = event.get("args", {}).get("op_name", "unknown")
            for index, (start, end) in enumerate(runs):
                if start <= event["ts"] <= end:
                    per_run[index][op] = per_run[index].get(op, 0.0) + event["dur"] / 1000.0
                    break
        return per_run

    def layer_outputs(
        self, inputs: dict[str, np.ndarray], reference: str | None
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[tuple[str, str]], str]:
        """Every layer's output here and in ``reference`` (default: this file) on the CPU
        provider, unoptimised; see :mod:`benchlab.frameworks.onnxruntime.layers`."""
        from benchlab.frameworks.onnxruntime.layers import capture_layers

        assert self._session is not None and self._config.model_path
        return capture_layers(self._config.model_path, reference, inputs,
                              self._session_options(), self._providers(), self._session)

    def info(self) -> dict[str, Any]:
        """onnxruntime version and the session configuration in effect."""
        assert self._session is not None
        return {
            "runtime": "onnxruntime",
            DetailKey.RUNTIME_VERSION: ort.__version__,
            "providers": self._session.get_providers(),
            "graph_optimization_level": str(self._options.get("graph_optimization_level", "all")),
            DetailKey.INTRA_OP_THREADS: self._options.get("intra_op_threads",
                                                          self._config.threads),
            DetailKey.THREAD_POOL: "global" if self._global_pool else "session",
            DetailKey.SPINNING: self._spinning,
            DetailKey.PRECISION: str(self._options.get("precision", "fp32")),
        }
