"""A generative backend for the A/B tests: sleeps 2 ms per prompt token and ``tpot_ms`` (an
option, default 4) per new token, so a change of TPOT is known exactly. Loaded by the runner
process from PYTHONPATH."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

VOCAB = 32


class SleepyDecoder:
    def __init__(self, config: Any) -> None:
        self.per_token_s = float(config.options.get("tpot_ms", 4.0)) / 1e3

    def load(self) -> None:
        pass

    def vocab_size(self) -> int:
        return VOCAB

    def reset(self) -> None:
        pass

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        time.sleep(self.per_token_s if len(tokens) == 1 else 0.002 * len(tokens))
        logits = np.zeros((len(tokens), VOCAB), dtype=np.float32)
        logits[:, 1] = 1.0
        return logits if all_logits else logits[-1]

    def info(self) -> dict[str, Any]:
        return {}
