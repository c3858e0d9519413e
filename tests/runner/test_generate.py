"""The generative runner's definitions, on decoders whose timing and tokens are known.

``SleepyDecoder`` sleeps a known time to load, per prompt token and per new token; its logits
always name the next token id. ``TableDecoder`` computes logits from a fixed table (numpy), so
a reference made with it is matched exactly, and a copy that changes one choice parts where it
should. The real runtimes are in tests/zoo/test_generative.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runner_lines import runner_values

from benchlab.runner.config import RunnerConfig
from benchlab.runner.generate import (
    GenerativeReference,
    accuracy_metrics,
    load_generative_reference,
    save_generative_reference,
)
from benchlab.schema.result import DetailKey, Metric

VOCAB = 16
LOAD_S = 0.6
PER_PROMPT_TOKEN_S = 0.002
PER_NEW_TOKEN_S = 0.012


class SleepyDecoder:
    """Sleeps LOAD_S to load, PER_PROMPT_TOKEN_S per token of a multi-token call and
    PER_NEW_TOKEN_S for a one-token call; the logits' best token is the next id."""

    def __init__(self, config: RunnerConfig) -> None:
        self.position = 0

    def load(self) -> None:
        time.sleep(LOAD_S)

    def vocab_size(self) -> int:
        return VOCAB

    def reset(self) -> None:
        self.position = 0

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        time.sleep(PER_NEW_TOKEN_S if len(tokens) == 1 else PER_PROMPT_TOKEN_S * len(tokens))
        self.position += len(tokens)
        logits = np.zeros((len(tokens), VOCAB), dtype=np.float32)
        logits[np.arange(len(tokens)), (tokens + 1) % VOCAB] = 1.0
        return logits if all_logits else logits[-1]

    def info(self) -> dict[str, Any]:
        return {DetailKey.RUNTIME_VERSION: "sleepy"}


class TableDecoder:
    """Logits = a seeded table's row of the last token plus a small term of the position, so
    the same model computed twice agrees exactly."""

    flip_at: int | None = None  # a cached position whose best token is changed

    def __init__(self, config: RunnerConfig | None = None) -> None:
        self.table = np.random.default_rng(7).standard_normal((VOCAB, VOCAB)).astype(np.float32)
        self.position = 0

    def load(self) -> None:
        pass

    def vocab_size(self) -> int:
        return VOCAB

    def reset(self) -> None:
        self.position = 0

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        rows = self.table[tokens].copy()
        positions = self.position + np.arange(len(tokens))
        rows += 0.01 * positions[:, None]
        if self.flip_at is not None and self.flip_at in positions:
            row = rows[list(positions).index(self.flip_at)]
            row[np.argsort(row)[-2]] = row.max() + 1.0  # the second best becomes the best
        self.position += len(tokens)
        return rows if all_logits else rows[-1]

    def info(self) -> dict[str, Any]:
        return {}


def _measure(backend: str, **generate: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    return runner_values(RunnerConfig(backend=backend, warmup=1, iterations=3, min_time=0.0,
                                      generate={"prompt_tokens": 8, "new_tokens": 5,
                                                **generate}))


def test_each_metric_is_what_its_definition_says() -> None:
    values, details = _measure(f"{__name__}:SleepyDecoder")
    generations = 3
    for metric in (Metric.TTFT, Metric.TPOT, Metric.LATENCY, Metric.PREFILL_RATE,
                   Metric.DECODE_RATE):
        assert len(values[metric]) == generations, metric
    # Every gap between consecutive tokens of every generation: G − 1 per generation.
    assert len(values[Metric.INTER_TOKEN_LATENCY]) == generations * 4
    # The decoder sleeps at least this long; sleeps only ever overshoot.
    assert min(values[Metric.TTFT]) >= 8 * PER_PROMPT_TOKEN_S * 1e3
    assert min(values[Metric.INTER_TOKEN_LATENCY]) >= PER_NEW_TOKEN_S * 1e3
    # TTFT starts when the prompt is handed over: the 0.6 s load is never inside it.
    assert values[Metric.LOAD_TIME][0] >= LOAD_S * 1e3
    assert max(values[Metric.TTFT]) < LOAD_S * 1e3
    gaps = values[Metric.INTER_TOKEN_LATENCY]
    for k in range(generations):
        ttft, tpot = values[Metric.TTFT][k], values[Metric.TPOT][k]
        # TPOT excludes the first token: it is the mean gap of this generation ...
        assert tpot == pytest.approx(np.mean(gaps[4 * k:4 * k + 4]), rel=1e-9)
        # ... and the end-to-end latency is TTFT plus the G − 1 gaps.
        assert values[Metric.LATENCY][k] == pytest.approx(ttft + 4 * tpot, rel=1e-9)
        assert values[Metric.PREFILL_RATE][k] == pytest.approx(8 / (ttft / 1e3), rel=1e-9)
        assert values[Metric.DECODE_RATE][k] == pytest.approx(1e3 / tpot, rel=1e-9)
    assert details[DetailKey.GENERATION] == {"prompt_tokens": 8, "new_tokens": 5, "depth": 0,
                                             "compare_tokens": 32}
    assert details[DetailKey.MEASURE_WINDOW]["iterations"] == generations


def test_depth_fills_the_cache_outside_the_clock() -> None:
    shallow, _ = _measure(f"{__name__}:SleepyDecoder")
    deep, _ = _measure(f"{__name__}:SleepyDecoder", depth=200)
    # Filling 200 positions sleeps 0.4 s per generation; none of it is in TTFT, whose prompt
    # is the same 8 tokens.
    assert max(deep[Metric.TTFT]) < 200 * PER_PROMPT_TOKEN_S * 1e3
    assert min(deep[Metric.TTFT]) >= 8 * PER_PROMPT_TOKEN_S * 1e3
    assert len(deep[Metric.TTFT]) == len(shallow[Metric.TTFT])


def _reference(decoder: TableDecoder, prompt: np.ndarray, count: int) -> GenerativeReference:
    decoder.reset()
    logits = decoder.forward(prompt, all_logits=True)
    token = int(np.argmax(logits[-1]))
    tokens = [token]
    while len(tokens) < count:
        token = int(np.argmax(decoder.forward(np.array([token]))))
        tokens.append(token)
    text = np.arange(20) % VOCAB
    return GenerativeReference(prompt=prompt, logits=logits, tokens=np.array(tokens), text=text)


def test_a_runtime_that_computes_the_reference_agrees_everywhere(tmp_path: Path) -> None:
    prompt = np.array([3, 1, 4, 1, 5])
    path = tmp_path / "ref.npz"
    save_generative_reference(path, _reference(TableDecoder(), prompt, 10))
    reference = load_generative_reference(str(path))
    found = accuracy_metrics(TableDecoder(), reference, compare_tokens=10)
    assert found[Metric.TOKEN_AGREEMENT] == 1.0
    assert found[Metric.FIRST_DIVERGENCE] == 10
    assert found[Metric.SQNR] == float("inf")
    assert found[Metric.KL_DIVERGENCE] == 0.0
    # Perplexity of the text under the table model, computed here from its definition.
    model = TableDecoder()
    text_logits = model.forward(reference.text, all_logits=True)[:-1].astype(np.float64)
    log_probs = text_logits - np.log(np.exp(text_logits).sum(-1, keepdims=True))
    nll = -log_probs[np.arange(19), reference.text[1:]]
    assert found[Metric.PERPLEXITY] == pytest.approx(np.exp(nll.mean()), rel=1e-6)


def test_one_changed_choice_is_found_where_it_happens() -> None:
    prompt = np.array([3, 1, 4, 1, 5])
    reference = _reference(TableDecoder(), prompt, 10)
    changed = TableDecoder()
    # Position 5 + 3 is where the fourth new token is chosen (prompt positions 0..4).
    changed.flip_at = len(prompt) + 3 - 1
    found = accuracy_metrics(changed, reference, compare_tokens=10)
    assert found[Metric.FIRST_DIVERGENCE] == 3
    # Teacher-forced, only that one choice differs: 9 of 10 agree.
    assert found[Metric.TOKEN_AGREEMENT] == pytest.approx(0.9)
    # The prompt's logits are untouched by a change after the prompt.
    assert found[Metric.SQNR] == float("inf")


def test_a_forward_pass_reference_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    np.savez(path, outputs=np.zeros(3))
    with pytest.raises(ValueError, match="not a generative reference"):
        load_generative_reference(str(path))
