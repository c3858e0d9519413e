"""Helpers shared by the generative backends' tests: greedy decoding by hand and SQNR (and the
runner's metric lines read back, from tests/runner_lines.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from runner_lines import runner_values

__all__ = ["greedy", "runner_values", "sqnr"]


def sqnr(got: np.ndarray, want: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio of ``got`` against ``want``, in dB."""
    noise = np.sum((got.astype(np.float64) - want) ** 2)
    return float(10 * np.log10(np.sum(want.astype(np.float64) ** 2) / noise))


def greedy(backend: Any, prompt: np.ndarray, count: int) -> tuple[list[int], list[np.ndarray]]:
    """Free-running greedy decoding from a reset cache: the tokens and each step's logits."""
    backend.reset()
    logits = backend.forward(prompt.astype(np.int64))
    tokens, seen = [int(np.argmax(logits))], [logits]
    while len(tokens) < count:
        logits = backend.forward(np.array([tokens[-1]], dtype=np.int64))
        tokens.append(int(np.argmax(logits)))
        seen.append(logits)
    return tokens, seen
