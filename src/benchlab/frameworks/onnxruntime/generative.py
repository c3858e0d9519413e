"""Runner-side generative ONNX Runtime backend: the zoo's ``decoder_onnx`` graph (the key/value
cache as graph inputs and outputs) in one ``InferenceSession``."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort

from benchlab.runner.config import RunnerConfig
from benchlab.runner.kvgraph import GRAPH_INPUTS, CacheGraphDecoder
from benchlab.schema.result import DetailKey

__all__ = ["OnnxRuntimeDecoder"]


class OnnxRuntimeDecoder(CacheGraphDecoder):
    """Options: ``intra_op_threads`` (or the test's ``threads``), ``graph_optimization_level``
    (``all``, the default, ``extended``, ``basic``, ``disable``); ``precision`` picks the
    file in the adapter (``int8``: the decoder with int8 matrix products)."""

    _LEVELS = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
               "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
               "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
               "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}

    def __init__(self, config: RunnerConfig) -> None:
        super().__init__(config)
        self._session: ort.InferenceSession | None = None

    def open_graph(self) -> tuple[int, int, int, int]:
        options = ort.SessionOptions()
        threads = self.config.options.get("intra_op_threads", self.config.threads)
        if threads:
            options.intra_op_num_threads = int(threads)
        level = str(self.config.options.get("graph_optimization_level", "all"))
        if level not in self._LEVELS:
            raise ValueError(f"graph_optimization_level must be one of {sorted(self._LEVELS)}")
        options.graph_optimization_level = self._LEVELS[level]
        self._session = ort.InferenceSession(self.model_path, options,
                                             providers=["CPUExecutionProvider"])
        shapes = {i.name: i.shape for i in self._session.get_inputs()}
        layers, _, heads, _, width = shapes[GRAPH_INPUTS[1]]
        vocab = self._session.get_outputs()[0].shape[-1]
        return int(layers), int(heads), int(width), int(vocab)

    def run_graph(self, input_ids: np.ndarray, keys: np.ndarray,
                  values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        assert self._session is not None
        logits, keys, values = self._session.run(
            None, dict(zip(GRAPH_INPUTS, (input_ids, keys, values))))
        return logits, keys, values

    def info(self) -> dict[str, Any]:
        assert self._session is not None
        threads = self.config.options.get("intra_op_threads", self.config.threads)
        return {**super().info(), DetailKey.RUNTIME_VERSION: ort.__version__,
                DetailKey.PRECISION: str(self.config.options.get("precision", "fp32")),
                "providers": self._session.get_providers(),
                "graph_optimization_level": str(
                    self.config.options.get("graph_optimization_level", "all")),
                **({DetailKey.THREADS: int(threads)} if threads else {})}
