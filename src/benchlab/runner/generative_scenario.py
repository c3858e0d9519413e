"""Load scenarios of a text generator in the runner process: MLPerf LoadGen issues whole
generations as queries and times their tokens.

A query is one greedy generation of the test's G tokens after a prompt of P (after a cache
filled to depth D): the prompts are seeded synthetic ones, :data:`PROMPTS` of them, one per
query sample. LoadGen runs with ``use_token_latencies``: the system under test
(:class:`_TokenServer`) reports each query's first token the moment it is chosen
(``FirstTokenComplete``, as a server streams it) and the query when its last token is, with
the number of tokens. LoadGen then measures the time to first token from the query's arrival
(queueing included) and the time per output token, and a server run is valid only when
their 99th percentiles meet the scenario's bounds (``ttft_bound_ms``, ``tpot_bound_ms``:
MLPerf Inference's LLM rules); the server search (:func:`benchlab.runner.loadgen.search_peak`)
finds the highest rate meeting both.

How queries share the model depends on the backend:

* **Queueing** (:class:`_TokenServer`): a backend that runs one sequence at a time gets one
  worker thread running the queries in arrival order; a query that arrives while another is
  generated waits in the queue, and queueing is what load adds to TTFT.
* **Continuous batching** (:class:`_BatchingServer`): a
  :class:`~benchlab.runner.generate.BatchingBackend` of N sequences (llama.cpp's
  ``parallel``) gets one worker that, step after step, decodes every running query's next
  token and the prompts of queries just admitted in one call, as llama-server does. A query
  waits only while all N sequences are busy; in exchange every step carries the others.

benchlab times every query too (arrival to first token, per output token, arrival to last
token) for the result's samples and for goodput: the queries/s that met every bound (vLLM
``bench serve``'s definition).
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from benchlab.protocol.lines import format_metric, write_measurement
from benchlab.runner.config import GenerateConfig, RunnerConfig
from benchlab.runner.generate import GenerationTimes, sequences, synthetic_tokens, time_generation
from benchlab.runner.loadgen import (
    NS_PER_MS,
    LoadGenRun,
    QueuedServer,
    figure_lines,
    loadgen_details,
    run_loadgen,
    run_scenario,
)
from benchlab.schema.scenario import Scenario
from benchlab.schema.result import DetailKey, Metric

__all__ = ["PROMPTS", "QueryTimes", "measure_generative_scenario"]

#: Distinct prompts a scenario's queries draw from (LoadGen's query sample library).
PROMPTS = 16
# Generations before LoadGen starts; their median tells it what a query costs.
_WARM_GENERATIONS = 3


class QueryTimes:
    """One query under load: when it arrived and its generation's clock readings (ns)."""

    __slots__ = ("arrived", "times")

    def __init__(self, arrived: int, times: GenerationTimes) -> None:
        self.arrived, self.times = arrived, times

    @property
    def ttft_ms(self) -> float:
        """Arrival to first token (queueing included)."""
        return (self.times.tokens[0] - self.arrived) / NS_PER_MS

    @property
    def tpot_ms(self) -> float:
        """The query's time per output token after its first."""
        tokens = self.times.tokens
        return (tokens[-1] - tokens[0]) / NS_PER_MS / max(len(tokens) - 1, 1)

    @property
    def latency_ms(self) -> float:
        """Arrival to last token."""
        return (self.times.tokens[-1] - self.arrived) / NS_PER_MS

    def meets(self, scenario: Scenario) -> bool:
        """Whether this query met every bound the scenario sets."""
        return ((scenario.ttft_bound_ms is None or self.ttft_ms <= scenario.ttft_bound_ms)
                and (scenario.tpot_bound_ms is None or self.tpot_ms <= scenario.tpot_bound_ms))


class _TokenServer(QueuedServer):
    """The system under test: the worker generates each queued query, reporting its first
    token as soon as it is chosen."""

    def __init__(self, lg: Any, backend: Any, prompts: Sequence[np.ndarray], new_tokens: int,
                 depth: np.ndarray | None) -> None:
        self._prompts, self._new, self._depth = prompts, new_tokens, depth
        self.queries: list[QueryTimes] = []
        super().__init__(lg, backend, "benchlab-llm-sut")

    def own_times(self) -> dict[str, list[float]]:
        """Each query's own time to first token (from its start, no queueing) and time per
        output token."""
        return {"ttft": [(q.times.tokens[0] - q.times.start) / NS_PER_MS
                         for q in self.queries],
                "tpot": [q.tpot_ms for q in self.queries]}

    def goodput(self, run: LoadGenRun) -> float | None:
        """Queries/s that met every bound, over the run (first arrival to last token);
        ``None`` without bounds (offline)."""
        if not self.queries or not run.scenario.token_bounds:
            return None
        span = (max(q.times.tokens[-1] for q in self.queries)
                - min(q.arrived for q in self.queries)) / 1e9
        good = sum(1 for q in self.queries if q.meets(run.scenario))
        return good / span if span > 0 else None

    def _prompt(self, sample: Any) -> np.ndarray:
        return self._prompts[sample.index % len(self._prompts)]

    def _answer(self, sample: Any, arrived: int) -> None:
        times, chosen = time_generation(self._backend, self._prompt(sample), self._new,
                                        self._depth,
                                        on_first=lambda token: self._first(sample, token))
        self._complete(sample, QueryTimes(arrived, times), chosen)

    def _answer_empty(self, sample: Any) -> None:
        self._lg.QuerySamplesComplete([self._lg.QuerySampleResponse(sample.id, 0, 0, 0)])

    def _first(self, sample: Any, token: int) -> None:
        """Report a query's first token to LoadGen as it is chosen."""
        lg = self._lg
        data = np.array([token], dtype=np.int32)
        lg.FirstTokenComplete([lg.QuerySampleResponse(sample.id, data.ctypes.data,
                                                      data.nbytes, 1)])

    def _complete(self, sample: Any, query: QueryTimes, chosen: list[int]) -> None:
        """Complete a query with its tokens and keep its times."""
        lg = self._lg
        data = np.asarray(chosen, dtype=np.int32)
        lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, data.ctypes.data,
                                                        data.nbytes, len(chosen))])
        self.queries.append(query)
        self.sample_ms.append(query.latency_ms)


class _Stream:
    """One query being generated on one of a batching backend's sequences."""

    __slots__ = ("alone", "arrived", "chosen", "readings", "sample", "start")

    def __init__(self, sample: Any, arrived: int, start: int) -> None:
        self.sample, self.arrived, self.start = sample, arrived, start
        self.chosen: list[int] = []
        self.readings: list[int] = []
        self.alone = True  # no step of it carried another sequence


class _BatchingServer(_TokenServer):
    """The system under test on a batching backend: one worker decodes every running query's
    next token and the prompts of newly admitted ones in one step (continuous batching), up
    to the backend's sequences at once; the others wait in arrival order."""

    def __init__(self, *args: Any) -> None:
        self._alone: list[QueryTimes] = []
        super().__init__(*args)

    def own_times(self) -> dict[str, list[float]]:
        """The own times of the queries that ran alone: with batching, a query's steps also
        carry the others', so only those are the model's time that no lower rate beats
        (none at a high rate: then the search judges nothing by them)."""
        return {"ttft": [(q.times.tokens[0] - q.times.start) / NS_PER_MS for q in self._alone],
                "tpot": [q.tpot_ms for q in self._alone]}

    def _work(self) -> None:
        backend = self._backend
        waiting: deque[tuple[Any, int]] = deque()
        running: dict[int, _Stream] = {}
        free = list(range(sequences(backend)))[::-1]
        closing = False
        while True:
            block = not running and not waiting
            while not closing:  # take every arrival; wait for one only when idle
                try:
                    arrivals = self._queue.get(block=block)
                except queue.Empty:
                    break
                block = False
                if arrivals is None:
                    closing = True
                else:
                    waiting.extend(arrivals)
            if not running and not waiting:
                return
            if self.error is not None:  # answer everything left, empty, and stop working
                for sample in [s.sample for s in running.values()] + [w[0] for w in waiting]:
                    self._answer_empty(sample)
                running.clear()
                waiting.clear()
                continue
            try:
                self._step(waiting, running, free)
            except BaseException as exc:  # noqa: BLE001 - reported after the run
                self.error = exc

    def _step(self, waiting: deque[tuple[Any, int]], running: dict[int, _Stream],
              free: list[int]) -> None:
        """One ``forward_batch``: each running query's last token, then as many waiting
        prompts as there are free sequences and batch room; every token chosen is timed."""
        backend, clock = self._backend, time.perf_counter_ns
        feeds: list[tuple[int, np.ndarray]] = [
            (sequence, np.array(stream.chosen[-1:], dtype=np.int64))
            for sequence, stream in running.items()]
        room = backend.batch_tokens() - len(feeds)
        while waiting and free and len(self._prompt(waiting[0][0])) <= room:
            sample, arrived = waiting.popleft()
            sequence = free.pop()
            backend.reset_sequence(sequence)
            prompt = self._prompt(sample)
            running[sequence] = _Stream(sample, arrived, clock())
            feeds.append((sequence, prompt))
            room -= len(prompt)
        shared = len(feeds) > 1
        for (sequence, _), logits in zip(feeds, backend.forward_batch(feeds), strict=True):
            stream = running[sequence]
            stream.alone = stream.alone and not shared
            token = int(np.argmax(logits))
            stream.readings.append(clock())
            stream.chosen.append(token)
            if len(stream.chosen) == 1:
                self._first(stream.sample, token)
            if len(stream.chosen) == self._new:
                query = QueryTimes(stream.arrived,
                                   GenerationTimes(stream.start, tuple(stream.readings)))
                self._complete(stream.sample, query, stream.chosen)
                if stream.alone:
                    self._alone.append(query)
                del running[sequence]
                free.append(sequence)


def check_batching(backend: Any, work: GenerateConfig) -> None:
    """``ValueError`` when a batching backend cannot serve ``work``'s queries: a depth (each
    query would refill it inside its own timed step) or a prompt the batch cannot hold."""
    if sequences(backend) == 1:
        return
    if work.depth:
        raise ValueError("a depth with parallel sequences: each query would fill its depth "
                         "inside the timed batch; measure depth with parallel=1")
    if work.prompt_tokens + sequences(backend) > backend.batch_tokens():
        raise ValueError(f"a {work.prompt_tokens}-token prompt and {sequences(backend)} "
                         f"sequences' next tokens do not fit one batch of "
                         f"{backend.batch_tokens()} tokens: raise n_batch")


def measure_generative_scenario(backend: Any, config: RunnerConfig, out: TextIO, *,
                                head: Sequence[str],
                                memory_peak: Callable[[], float | None]) -> None:
    """Run ``config.scenario`` under LoadGen with generations of ``config.generate`` as its
    queries and print the metric lines, ``head`` first."""
    scenario: Scenario = config.scenario  # type: ignore[assignment]
    work: GenerateConfig = config.generate  # type: ignore[assignment]
    rng = np.random.default_rng(config.seed)
    vocab = backend.vocab_size()
    prompts = [synthetic_tokens(vocab, work.prompt_tokens, rng) for _ in range(PROMPTS)]
    depth = synthetic_tokens(vocab, work.depth, rng) if work.depth else None
    warm = [time_generation(backend, prompts[i % PROMPTS], work.new_tokens, depth)[0]
            for i in range(max(config.warmup, 0) + _WARM_GENERATIONS)]
    # The first may compile; what a query costs is the median whole generation of the rest.
    expected_ms = float(np.median([(w.tokens[-1] - w.start) / NS_PER_MS for w in warm[1:]]))
    servers: list[_TokenServer] = []

    check_batching(backend, work)
    server_kind = _BatchingServer if sequences(backend) > 1 else _TokenServer

    def make_server(lg: Any) -> _TokenServer:
        servers.append(server_kind(lg, backend, prompts, work.new_tokens, depth))
        return servers[-1]

    def run_at(rate: float | None) -> LoadGenRun:
        return run_loadgen(make_server, PROMPTS, scenario, per_query_ms, rate, tokens=True)

    # Offline's samples are sized by a query's share of the server: optimistic for a batching
    # one (N at once, each as fast as alone), so the run fills its duration. The server
    # search starts from one query at a time and doubles from there.
    per_query_ms = expected_ms / sequences(backend)
    runs, reported = run_scenario(run_at, scenario, expected_ms)
    queries = servers[runs.index(reported)].queries
    lines = list(head)
    lines.append(format_metric("NET", Metric.FIRST_INFERENCE,
                               warm[0].metrics(work.prompt_tokens)[Metric.TTFT], "ms"))
    for metric, value in ((Metric.TTFT, "ttft_ms"), (Metric.TPOT, "tpot_ms"),
                          (Metric.LATENCY, "latency_ms")):
        lines += [format_metric("NET", metric, getattr(q, value), "ms") for q in queries]
    lines += figure_lines(scenario, reported, {
        Metric.SCENARIO_TTFT: reported.ttft_p99_ms,
        Metric.SCENARIO_TPOT: reported.tpot_p99_ms,
        Metric.TOKEN_THROUGHPUT: reported.tokens_per_second,
        Metric.GOODPUT: reported.goodput,
    })
    peak = memory_peak()
    if peak is not None:
        lines.append(format_metric("NET", Metric.MEMORY_PEAK, peak, "MiB"))
    details: dict[str, Any] = {
        **loadgen_details(
            scenario, runs, reported, expected_ms, prompts=PROMPTS, queries_run=len(queries),
            serving=(f"continuous batching, {sequences(backend)} sequences"
                     if server_kind is _BatchingServer else "queueing, one sequence at a time"),
            early_stopping_ttft=reported.log.get("early_stopping_ttft_result"),
            early_stopping_tpot=reported.log.get("early_stopping_tpot_result")),
        DetailKey.GENERATION: work.model_dump(),
    }
    details.update(backend.info())
    write_measurement(out, lines, details)
