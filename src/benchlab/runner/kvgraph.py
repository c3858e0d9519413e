"""A generative backend over one exported decoder graph whose key/value cache is an explicit
input and output: ``(input_ids [1, T], past_keys [L, 1, H, S, d], past_values) → (logits
[1, T, V], keys [L, 1, H, S+T, d], values)``, as the zoo's ``decoder_onnx`` file is
(:class:`benchlab.zoo.archs.llama.KVDecoder`).

The runtime-specific part is one call (:meth:`CacheGraphDecoder.run_graph`); the cache
lives here as numpy arrays and goes back in on every call, so each token pays for copying the
cache in and out of the runtime. That is the cost of this kind of export on any runtime that
is handed arrays (growing with the context), and what a runtime with its own in-place cache
(llama.cpp, a stateful OpenVINO model) avoids: docs/generative.md says so beside the figures.
numpy only: the adapters' backends subclass it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlab.runner.config import RunnerConfig

__all__ = ["CacheGraphDecoder", "GRAPH_INPUTS", "GRAPH_OUTPUTS"]

#: The graph's input and output names, in order.
GRAPH_INPUTS = ("input_ids", "past_keys", "past_values")
GRAPH_OUTPUTS = ("logits", "keys", "values")


class CacheGraphDecoder:
    """:class:`benchlab.runner.generate.GenerativeBackend` over a cache-in, cache-out graph.

    Subclasses open the graph in :meth:`open_graph` (returning the cache's layer count, key/
    value heads, head width and the vocabulary size, read from the graph) and run it in
    :meth:`run_graph`.
    """

    def __init__(self, config: RunnerConfig) -> None:
        self.config = config
        self.model_path = config.model_file("a generative graph backend needs the decoder file")
        self._cache_shape: tuple[int, int, int] = (0, 0, 0)
        self._vocab = 0
        self._keys = self._values = np.zeros(0, dtype=np.float32)

    def open_graph(self) -> tuple[int, int, int, int]:
        """Load the graph; its ``(layers, kv_heads, head_dim, vocab)``."""
        raise NotImplementedError

    def run_graph(self, input_ids: np.ndarray, keys: np.ndarray,
                  values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One call of the graph: logits, and the cache grown by the new tokens."""
        raise NotImplementedError

    def load(self) -> None:
        """Open the graph and start with an empty cache."""
        layers, heads, width, self._vocab = self.open_graph()
        self._cache_shape = (layers, heads, width)
        self.reset()

    def vocab_size(self) -> int:
        """The logits' width."""
        return self._vocab

    def reset(self) -> None:
        """An empty cache: the next call starts at position 0."""
        layers, heads, width = self._cache_shape
        self._keys = np.zeros((layers, 1, heads, 0, width), dtype=np.float32)
        self._values = self._keys.copy()

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Run ``tokens`` after the cached positions; the last or every position's logits."""
        logits, self._keys, self._values = self.run_graph(
            np.ascontiguousarray(tokens, dtype=np.int64)[None, :], self._keys, self._values)
        return logits[0] if all_logits else logits[0, -1]

    def cached_positions(self) -> int:
        """How many positions the cache holds."""
        return int(self._keys.shape[3])

    def info(self) -> dict[str, Any]:
        """What every cache-graph decoder reports; subclasses add the runtime's facts."""
        layers, heads, width = self._cache_shape
        return {"kv_cache": f"explicit graph input/output, {layers} layers x {heads} heads x "
                f"{width}, float32", "vocab": self._vocab}
