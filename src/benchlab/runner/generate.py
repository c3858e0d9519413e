"""The generative runner: time whole generations, token by token, on any generative backend.

benchlab owns the clock and the definitions; a backend only runs the model. Each generation:
the cache is emptied, filled to the test's depth (untimed), then the clock starts as the
prompt is handed to the model. The first new token is chosen greedily from the prefill's last
logits (TTFT ends there), then each further token is fed back and the next chosen, one clock
reading per token. From those readings, per generation:

* ``ttft``: prompt handed over → first token chosen (load and warm-up are never inside);
* ``inter_token_latency``: every gap between two consecutive tokens;
* ``tpot``: (last token − first token) / (new tokens − 1), the mean of those gaps;
* ``prefill_rate`` = P / TTFT and ``decode_rate`` = (G − 1) / (last − first token), tokens/s;
* ``latency``: prompt handed over → last token chosen (end to end, one generation).

Greedy choice and the feed-back are inside the clock, as in every real generator; the choice is
one ``argmax`` over the vocabulary (``bench/generative.py`` measures its share of TPOT).

Accuracy, after timing, against a generative reference (:func:`save_generative_reference`,
written by the zoo from the ``transformers`` model): the prefill logits of the reference prompt
(SQNR, KL), greedy token agreement with the reference's continuation under teacher forcing,
the first position where free-running greedy decoding parts from it, and perplexity of the
reference text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

import numpy as np

from benchlab.schema.metrics import METRICS
from benchlab.protocol.lines import format_metric, write_measurement
from benchlab.runner.config import GENERATION_LOOPS, GenerateConfig, RunnerConfig
from benchlab.schema.result import DetailKey, Metric
from benchlab.stats.summary import AdaptiveStop

__all__ = [
    "BatchingBackend",
    "GenerationTimes",
    "GenerativeBackend",
    "GenerativeReference",
    "ReferenceAnswers",
    "accuracy_metrics",
    "answer_reference",
    "compared_tokens",
    "forced_tokens",
    "generation_values",
    "library_loop",
    "load_generative_reference",
    "measure_generation",
    "positions_needed",
    "save_generative_reference",
    "score_answers",
    "sequences",
    "synthetic_tokens",
    "time_generation",
]

_NS_PER_MS = 1e6
# One process generates for at most this long when the test sets no max_time.
_MAX_TIME_S = 60.0


class GenerativeBackend(Protocol):
    """The runner side of a generative runtime: a model with a key/value cache.

    The constructor imports the runtime; :meth:`load` loads the model (timed as load time).
    """

    def __init__(self, config: RunnerConfig) -> None: ...

    def load(self) -> None:
        """Load the model (or build the eager one)."""

    def vocab_size(self) -> int:
        """Size of the logits' last axis."""

    def reset(self) -> None:
        """Forget every cached position: the next :meth:`forward` starts at position 0."""

    def forward(self, tokens: np.ndarray, all_logits: bool = False) -> np.ndarray:
        """Run ``tokens`` (int64, 1-D) after the cached positions and cache them.

        Returns the logits of the last position (``[V]``), or of every position given
        (``[T, V]``) with ``all_logits``, as float32.
        """

    def info(self) -> dict[str, Any]:
        """Runtime version and the effective configuration actually used."""


class BatchingBackend(GenerativeBackend, Protocol):
    """A generative backend that decodes several sequences in one call (llama.cpp's parallel
    sequences): what a load scenario's server batches its queries on."""

    def sequences(self) -> int:
        """How many sequences one :meth:`forward_batch` may carry."""

    def batch_tokens(self) -> int:
        """The most tokens one :meth:`forward_batch` may carry."""

    def reset_sequence(self, sequence: int) -> None:
        """Forget one sequence's cached positions."""

    def forward_batch(self, feeds: Sequence[tuple[int, np.ndarray]]) -> list[np.ndarray]:
        """Run each ``(sequence, tokens)`` after that sequence's cached positions, all in one
        step; the last position's logits of each, in order."""


def sequences(backend: GenerativeBackend) -> int:
    """How many sequences ``backend`` decodes at once (1 unless it batches)."""
    count = getattr(backend, "sequences", None)
    return int(count()) if callable(count) else 1


def library_loop(config: RunnerConfig) -> bool:
    """Whether an LLM library's backend runs its own loop (option ``loop``, ``library`` by
    default) rather than benchlab's; a clear error for an unknown loop."""
    loop = str(config.options.get("loop", GENERATION_LOOPS[0]))
    if loop not in GENERATION_LOOPS:
        raise ValueError(f"loop must be one of {', '.join(GENERATION_LOOPS)}, not {loop!r}")
    return loop == "library"


def positions_needed(config: RunnerConfig) -> int:
    """The positions a generative test fills in one generation: depth + prompt + new tokens,
    or the accuracy check's reference prompt and text where they are longer (what a backend
    with a fixed-size cache must hold)."""
    need = 1
    work = config.generate
    if work is not None:
        need = work.depth + work.prompt_tokens + work.new_tokens
    if config.reference:
        with np.load(config.reference) as data:
            if "generative" in data.files:
                prompt, text = len(data["prompt"]), len(data["text"])
                compare = work.compare_tokens if work is not None else len(data["tokens"])
                need = max(need, prompt + compare, text)
    return need


@dataclass(frozen=True, slots=True)
class GenerationTimes:
    """The clock readings of one generation, in ns: start, then one per new token."""

    start: int
    tokens: tuple[int, ...]

    def metrics(self, prompt_tokens: int) -> dict[Metric, float]:
        """This generation's per-generation metrics (not the inter-token gaps)."""
        first, last = self.tokens[0], self.tokens[-1]
        ttft = (first - self.start) / _NS_PER_MS
        decode_ms = (last - first) / _NS_PER_MS
        decoded = len(self.tokens) - 1
        return {
            Metric.TTFT: ttft,
            Metric.TPOT: decode_ms / decoded,
            Metric.LATENCY: (last - self.start) / _NS_PER_MS,
            Metric.PREFILL_RATE: prompt_tokens / (ttft / 1e3),
            Metric.DECODE_RATE: decoded / (decode_ms / 1e3),
        }

    def gaps_ms(self) -> list[float]:
        """Every inter-token latency, in ms."""
        return [(b - a) / _NS_PER_MS for a, b in zip(self.tokens, self.tokens[1:])]


def time_generation(backend: GenerativeBackend, prompt: np.ndarray, new_tokens: int,
                    depth_tokens: np.ndarray | None = None,
                    on_first: Callable[[int], None] | None = None
                    ) -> tuple[GenerationTimes, list[int]]:
    """One timed greedy generation; its clock readings and the tokens it chose.
    ``on_first`` gets the first token as soon as it is chosen and its clock read (a load
    scenario reports it to LoadGen then, as a server streams it).

    benchlab's loop: the backend's :meth:`~GenerativeBackend.forward` per step, the next token
    the ``argmax`` of its logits, the clock read as each token is chosen. A backend whose
    library ships its own generation loop (search included) may run that instead: with
    ``owns_loop`` true, its ``timed_generation(prompt, new_tokens, depth_tokens)`` does the
    same job by the same definitions, the clock read as the library hands each token out.
    """
    if getattr(backend, "owns_loop", False):
        own: tuple[GenerationTimes, list[int]] = backend.timed_generation(  # type: ignore[attr-defined]
            prompt, new_tokens, depth_tokens, on_first)
        return own
    clock = time.perf_counter_ns
    backend.reset()
    if depth_tokens is not None and len(depth_tokens):
        backend.forward(depth_tokens)
    chosen: list[int] = []
    readings: list[int] = []
    start = clock()
    logits = backend.forward(prompt)
    token = int(np.argmax(logits))
    readings.append(clock())
    chosen.append(token)
    if on_first is not None:
        on_first(token)
    step = np.empty(1, dtype=np.int64)
    for _ in range(new_tokens - 1):
        step[0] = token
        logits = backend.forward(step)
        token = int(np.argmax(logits))
        readings.append(clock())
        chosen.append(token)
    return GenerationTimes(start, tuple(readings)), chosen


@dataclass(frozen=True, slots=True)
class GenerativeReference:
    """What a generative model's reference run produced (the ``transformers`` model).

    ``prompt``: token ids; ``logits``: the prefill logits of every prompt position;
    ``tokens``: its greedy continuation; ``text``: the token ids perplexity is measured on.
    """

    prompt: np.ndarray
    logits: np.ndarray
    tokens: np.ndarray
    text: np.ndarray


def save_generative_reference(path: Any, reference: GenerativeReference) -> None:
    """Write ``reference`` as an ``.npz`` (the runner's accuracy check reads it)."""
    np.savez(path, generative=np.array(1), prompt=reference.prompt.astype(np.int64),
             logits=reference.logits.astype(np.float32),
             tokens=reference.tokens.astype(np.int64), text=reference.text.astype(np.int64))


def load_generative_reference(path: str) -> GenerativeReference:
    """Read a file written by :func:`save_generative_reference`; ``ValueError`` for another."""
    with np.load(path) as data:
        if "generative" not in data.files:
            raise ValueError(f"{path} is not a generative reference (a forward-pass one?)")
        return GenerativeReference(prompt=data["prompt"], logits=data["logits"],
                                   tokens=data["tokens"], text=data["text"])


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@dataclass(frozen=True, slots=True)
class ReferenceAnswers:
    """What a backend answered to a generative reference, before any scoring.

    ``forced_logits``: the logits of every position of the reference prompt followed by the
    reference's continuation (teacher forcing), ``[P + C - 1, V]``; ``free_tokens``: the
    backend's own greedy continuation of the prompt, ``[C]``; ``text_logprobs``: the
    log-probability it gives each next token of the reference text, ``[T - 1]``. A device
    without Python writes these three as raw tensors; the host scores them.
    """

    forced_logits: np.ndarray
    free_tokens: np.ndarray
    text_logprobs: np.ndarray


def compared_tokens(reference: GenerativeReference, compare_tokens: int) -> int:
    """How many continuation tokens are judged: the test's count, at most the reference's."""
    return min(compare_tokens, len(reference.tokens))


def forced_tokens(reference: GenerativeReference, compare_tokens: int) -> np.ndarray:
    """The tokens fed under teacher forcing: the prompt, then the reference's continuation but
    its last token (int64)."""
    want = reference.tokens[:compared_tokens(reference, compare_tokens)]
    return np.concatenate([reference.prompt, want[:-1]]).astype(np.int64)


def answer_reference(backend: GenerativeBackend, reference: GenerativeReference,
                     compare_tokens: int) -> ReferenceAnswers:
    """Run ``backend`` on the reference's prompt and texts (see :class:`ReferenceAnswers`)."""
    count = compared_tokens(reference, compare_tokens)
    # Teacher forcing: the reference's own continuation is fed, so every position is judged
    # in the context the reference saw, even after a first disagreement.
    backend.reset()
    forced = backend.forward(forced_tokens(reference, compare_tokens), all_logits=True)
    # Free running: the backend's own greedy text, to find where it parts from the reference's.
    backend.reset()
    token = int(np.argmax(backend.forward(reference.prompt.astype(np.int64))))
    free = [token]
    step = np.empty(1, dtype=np.int64)
    while len(free) < count:
        step[0] = token
        token = int(np.argmax(backend.forward(step)))
        free.append(token)
    backend.reset()
    text_logits = backend.forward(reference.text.astype(np.int64), all_logits=True)
    text_log = _log_softmax(text_logits[:-1])
    logprobs = text_log[np.arange(len(reference.text) - 1), reference.text[1:]]
    return ReferenceAnswers(forced, np.asarray(free, dtype=np.int64), logprobs)


def score_answers(reference: GenerativeReference, answers: ReferenceAnswers,
                  compare_tokens: int) -> dict[Metric, float]:
    """The answers against the reference: prefill logits (SQNR, largest error, KL), token
    agreement under teacher forcing, first divergence, perplexity (the module's docstring)."""
    count = compared_tokens(reference, compare_tokens)
    want = reference.tokens[:count]
    prompt_len = len(reference.prompt)
    prefill = answers.forced_logits[:prompt_len]
    chosen_forced = answers.forced_logits[prompt_len - 1:].argmax(axis=-1)
    noise = float(np.sum((prefill.astype(np.float64) - reference.logits) ** 2))
    signal = float(np.sum(reference.logits.astype(np.float64) ** 2))
    ref_log, own_log = _log_softmax(reference.logits), _log_softmax(prefill)
    kl = float(np.mean(np.sum(np.exp(ref_log) * (ref_log - own_log), axis=-1)))
    free = answers.free_tokens[:count]
    parted = [i for i, (a, b) in enumerate(zip(free, want)) if a != b]
    nll = -answers.text_logprobs.astype(np.float64)
    return {
        Metric.SQNR: 10 * np.log10(signal / noise) if noise > 0 else float("inf"),
        Metric.ERROR_MAX_ABS: float(np.max(np.abs(prefill - reference.logits))),
        Metric.KL_DIVERGENCE: max(kl, 0.0),
        Metric.TOKEN_AGREEMENT: float(np.mean(chosen_forced == want)),
        Metric.FIRST_DIVERGENCE: float(parted[0] if parted else count),
        Metric.PERPLEXITY: float(np.exp(np.mean(nll))),
    }


def accuracy_metrics(backend: GenerativeBackend, reference: GenerativeReference,
                     compare_tokens: int) -> dict[Metric, float]:
    """The backend against the reference: :func:`answer_reference`, then
    :func:`score_answers`."""
    return score_answers(reference, answer_reference(backend, reference, compare_tokens),
                         compare_tokens)


def synthetic_tokens(vocab: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` random token ids other than the first two (begin and end of text), as
    llama-bench's prompts are."""
    return rng.integers(2, vocab, size=count, dtype=np.int64)


def generation_values(cold: GenerationTimes, generations: Sequence[GenerationTimes],
                      prompt_tokens: int) -> list[tuple[Metric, float, str]]:
    """The samples of a process's generations, as ``(metric, value, unit)`` in print order:
    the cold generation's TTFT as ``first_inference``, then each measured generation's
    TTFT, TPOT, latency, prefill and decode rates, then every inter-token gap. benchlab's
    runner and the host reading a device's clock readings both use it."""
    values: list[tuple[Metric, float, str]] = [
        (Metric.FIRST_INFERENCE, cold.metrics(prompt_tokens)[Metric.TTFT], "ms")]
    per_generation = [g.metrics(prompt_tokens) for g in generations]
    for metric in (Metric.TTFT, Metric.TPOT, Metric.LATENCY, Metric.PREFILL_RATE,
                   Metric.DECODE_RATE):
        values += [(metric, m[metric], METRICS[metric].unit) for m in per_generation]
    values += [(Metric.INTER_TOKEN_LATENCY, gap, "ms") for g in generations
               for gap in g.gaps_ms()]
    return values


def measure_generation(backend: GenerativeBackend, config: RunnerConfig, out: TextIO, *,
                       head: Sequence[str], memory_peak: Callable[[], float | None]) -> None:
    """Time generations of ``config.generate`` on the loaded ``backend`` and print the metric
    lines, ``head`` (import and load lines) first; ``memory_peak()`` reads the peak RSS."""
    work: GenerateConfig = config.generate  # type: ignore[assignment]
    if sequences(backend) > 1:
        raise ValueError(f"{sequences(backend)} parallel sequences serve overlapping queries, "
                         "and one stream of generations has none: give a load scenario "
                         "(server or offline) or leave parallel at 1")
    rng = np.random.default_rng(config.seed)
    vocab = backend.vocab_size()
    prompt = synthetic_tokens(vocab, work.prompt_tokens, rng)
    depth = synthetic_tokens(vocab, work.depth, rng) if work.depth else None
    cold, _ = time_generation(backend, prompt, work.new_tokens, depth)
    for _ in range(config.warmup):
        time_generation(backend, prompt, work.new_tokens, depth)
    stopper = AdaptiveStop(target_rel_halfwidth=config.target_ci, min_iters=config.iterations,
                           min_time=config.min_time,
                           max_time=config.max_time or (_MAX_TIME_S if config.target_ci else None))
    window_start = time.monotonic()
    started = time.perf_counter_ns()
    generations: list[GenerationTimes] = []
    tpots: list[float] = []
    while True:
        times, _ = time_generation(backend, prompt, work.new_tokens, depth)
        generations.append(times)
        tpots.append(times.metrics(work.prompt_tokens)[Metric.TPOT])
        decision = stopper.should_stop(tpots, (time.perf_counter_ns() - started) / 1e9)
        if decision is not None:
            break
    window = {"clock": "monotonic", "start": window_start, "end": time.monotonic(),
              "iterations": len(generations)}
    lines = list(head)
    lines += [format_metric("NET", metric, value, unit) for metric, value, unit
              in generation_values(cold, generations, work.prompt_tokens)]
    peak = memory_peak()
    if peak is not None:
        lines.append(format_metric("NET", Metric.MEMORY_PEAK, peak, "MiB"))
    details: dict[str, Any] = {}
    if config.reference:
        reference = load_generative_reference(config.reference)
        found = accuracy_metrics(backend, reference, work.compare_tokens)
        lines += [format_metric("NET", k, v, METRICS[Metric(k)].unit) for k, v in found.items()
                  if np.isfinite(v)]
        details["reference_prompt_tokens"] = len(reference.prompt)
        details["reference_text_tokens"] = len(reference.text)
    details.update(backend.info())
    details.update(decision.to_detail())
    details[DetailKey.GENERATION] = work.model_dump()
    details[DetailKey.MEASURE_WINDOW] = window
    write_measurement(out, lines, details)
