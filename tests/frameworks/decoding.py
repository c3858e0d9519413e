"""Helpers shared by the generative backends' tests: greedy decoding by hand, SQNR, and the
runner's metric lines read back as values per metric."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from benchlab.protocol import parse_output
from benchlab.runner.config import RunnerConfig


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


def runner_values(config: RunnerConfig) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Run the runner's loop on ``config`` in this process: each metric's values, the details."""
    from benchlab.runner.loop import measure

    out = io.StringIO()
    measure(config, out)
    parsed = parse_output(out.getvalue())
    values: dict[str, list[float]] = {}
    for sample in parsed.samples:
        values.setdefault(sample.metric, []).append(sample.value)
    return values, dict(parsed.details)
