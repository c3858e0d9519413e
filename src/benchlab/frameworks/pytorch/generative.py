"""Runner-side generative PyTorch backend: the model built from ``model.entry`` (the zoo's
``transformers`` ``LlamaForCausalLM``) run eagerly with ``transformers``' own key/value cache
(``DynamicCache``): the reference every other runtime's tokens are checked against."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from benchlab.frameworks.pytorch.backend import build_from_entry
from benchlab.runner.config import RunnerConfig
from benchlab.schema.result import DetailKey

__all__ = ["TorchDecoder"]


class TorchDecoder:
    """Options: the test's ``threads`` (``torch.set_num_threads``). fp32, eager, no grad."""

    def __init__(self, config: RunnerConfig) -> None:
        if not config.entry:
            raise ValueError("the generative pytorch backend builds model.entry; the spec has none")
        mode = str(config.options.get("mode", "eager"))
        if mode != "eager":
            raise ValueError(f"generation runs in pytorch's eager mode only, not {mode!r}")
        self._config = config
        if config.threads:
            torch.set_num_threads(int(config.threads))
        self._model: Any = None
        self._cache: Any = None
        self._position = 0

    def load(self) -> None:
        """Build the model from its entry (seeded weights)."""
        self._model = build_from_entry(str(self._config.entry))
        self._model.eval()

    def vocab_size(self) -> int:
        return int(self._model.config.vocab_size)

    def reset(self) -> None:
        from transformers import DynamicCache

        self._cache = DynamicCache()
        self._position = 0

    @torch.inference_mode()
    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        ids = torch.from_numpy(np.ascontiguousarray(tokens, dtype=np.int64))[None, :]
        positions = torch.arange(self._position, self._position + ids.shape[1])[None, :]
        out = self._model(input_ids=ids, past_key_values=self._cache, use_cache=True,
                          position_ids=positions,
                          logits_to_keep=0 if all_logits else 1)
        self._cache = out.past_key_values
        self._position += ids.shape[1]
        logits = out.logits[0]
        return (logits if all_logits else logits[-1]).float().numpy()

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        """The weights' size, since an eager model has no file."""
        size = sum(p.numel() * p.element_size() for p in self._model.parameters())
        return {"model_size": (size / 2**20, "MiB")}

    def info(self) -> dict[str, Any]:
        import transformers

        return {DetailKey.RUNTIME_VERSION: torch.__version__, DetailKey.PRECISION: "fp32",
                DetailKey.THREADS: torch.get_num_threads(), "mode": "eager",
                "transformers": transformers.__version__, "kv_cache": "transformers DynamicCache"}
