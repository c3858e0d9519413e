"""Runner-side generative OpenVINO backend: the zoo's ``decoder_onnx`` graph (the key/value
cache as graph inputs and outputs), read and compiled for the CPU by OpenVINO itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import openvino as ov

from benchlab.runner.config import RunnerConfig
from benchlab.runner.kvgraph import GRAPH_INPUTS, CacheGraphDecoder
from benchlab.schema.result import DetailKey

__all__ = ["OpenVinoDecoder"]

# The int8 decoder graph carries its own int8 weights; OpenVINO computes around them in f32.
_PRECISIONS = {"fp32": "f32", "f32": "f32", "bf16": "bf16", "fp16": "f16", "f16": "f16",
               "int8": "f32"}


class OpenVinoDecoder(CacheGraphDecoder):
    """Options: ``precision`` (``fp32``, the default, or ``bf16``/``fp16`` where the CPU has
    them; always set, since the CPU plugin's own default is bf16 wherever the CPU has it;
    ``int8``: the adapter hands over the int8 graph, computed around in f32),
    the test's ``threads``. One synchronous request, latency hint."""

    def __init__(self, config: RunnerConfig) -> None:
        super().__init__(config)
        precision = str(config.options.get("precision", "fp32")).lower()
        if precision not in _PRECISIONS:
            raise ValueError(f"openvino precision must be one of {sorted(_PRECISIONS)}")
        self._precision = _PRECISIONS[precision]
        self._int8 = precision == "int8"
        self._core = ov.Core()
        self._compiled: ov.CompiledModel | None = None
        self._request: ov.InferRequest | None = None

    def open_graph(self) -> tuple[int, int, int, int]:
        model = self._core.read_model(self.model_path)
        config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY",
                                  "INFERENCE_PRECISION_HINT": self._precision}
        if self.config.threads:
            config["INFERENCE_NUM_THREADS"] = int(self.config.threads)
        self._compiled = self._core.compile_model(model, "CPU", config)
        self._request = self._compiled.create_infer_request()
        cache = model.input(GRAPH_INPUTS[1]).get_partial_shape()
        logits = model.output(0).get_partial_shape()
        return (cache[0].get_length(), cache[2].get_length(), cache[4].get_length(),
                logits[2].get_length())

    def run_graph(self, input_ids: np.ndarray, keys: np.ndarray,
                  values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        assert self._request is not None
        result = self._request.infer(dict(zip(GRAPH_INPUTS, (input_ids, keys, values))))
        # The request's output tensors are reused by its next call: copy what is kept.
        logits, keys, values = (np.array(result[i], copy=True) for i in range(3))
        return logits, keys, values

    def info(self) -> dict[str, Any]:
        assert self._compiled is not None
        hint = self._compiled.get_property("INFERENCE_PRECISION_HINT")
        actual = str(getattr(hint, "get_type_name", lambda: hint)())
        return {**super().info(), DetailKey.RUNTIME_VERSION: ov.__version__,
                DetailKey.PRECISION: "int8" if self._int8 else {
                    "f32": "fp32", "bf16": "bf16", "f16": "fp16"}.get(actual.lower(), actual),
                DetailKey.THREADS: int(self._compiled.get_property("INFERENCE_NUM_THREADS"))}
