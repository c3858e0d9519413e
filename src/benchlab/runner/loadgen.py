"""MLPerf LoadGen's runs in the runner process: one test over a system under test (SUT), its
verdict and figures read from LoadGen's detail log (``mlperf_log_detail.txt``, one ``:::MLLOG``
JSON entry per line), and the server scenario's search for the highest rate meeting its
bound. The SUTs are :mod:`benchlab.runner.scenario`'s (forward passes) and
:mod:`benchlab.runner.generative_scenario`'s (generations, their tokens timed).
"""

from __future__ import annotations

import json
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchlab.protocol.lines import format_metric
from benchlab.schema.metrics import METRICS
from benchlab.schema.scenario import PERCENTILES, Scenario
from benchlab.schema.result import DetailKey, Metric

__all__ = ["LoadGenRun", "NS_PER_MS", "QueuedServer", "figure_lines", "loadgen_details",
           "over_capacity", "read_detail_log", "run_loadgen", "run_scenario", "scenario_details",
           "search_peak", "throughput"]

NS_PER_MS = 1e6
# LoadGen makes as many queries as the expected rate fills the minimum duration with, and
# runs them all; a model faster than expected runs out before the duration and LoadGen
# judges the run invalid. So it is told a rate this much above the warm-up's (the run may
# last up to that much longer than the duration instead).
_HEADROOM = 1.5
# The server search stops when its bracket is this narrow (relative).
_SEARCH_PRECISION = 0.05
_SEARCH_MAX_RUNS = 12
# A bound LoadGen needs but the scenario does not set (an hour: never the limit).
_UNBOUNDED_MS = 3_600_000.0


def read_detail_log(text: str) -> dict[str, Any]:
    """Every ``:::MLLOG`` entry of a LoadGen detail log, key → value (a key logged several
    times: its last value; ``generic_message`` entries: all of them, as a list)."""
    found: dict[str, Any] = {"generic_message": []}
    for line in text.splitlines():
        _, sep, payload = line.partition(":::MLLOG ")
        if not sep:
            continue
        try:
            entry = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if entry.get("key") == "generic_message":
            found["generic_message"].append(entry.get("value"))
        elif "key" in entry:
            found[entry["key"]] = entry.get("value")
    return found


@dataclass
class LoadGenRun:
    """One LoadGen test: its verdict and figures as LoadGen logged them, benchlab's own
    per-sample times, and the two logs."""

    scenario: Scenario
    target_qps: float | None
    log: dict[str, Any]
    sample_ms: list[float]
    summary: str
    detail: str
    accuracy: list[dict[str, Any]] = field(default_factory=list)
    #: A generative run's queries/s that met every token bound (benchlab's timing of each).
    goodput: float | None = None
    #: What the model itself took per query, queueing left out, as benchlab timed it (ms):
    #: ``latency`` (a forward pass), or ``ttft`` (start to first token) and ``tpot`` (a
    #: generation).
    own_times: dict[str, list[float]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """LoadGen judged the run valid (durations, query counts, early stopping, bound)."""
        return self.log.get("result_validity") == "VALID"

    def ns(self, key: str) -> float | None:
        value = self.log.get(key)
        return None if value is None else float(value) / NS_PER_MS

    @property
    def percentile_ms(self) -> float | None:
        """The scenario's percentile latency in ms (p90 single-stream; p99 per query
        multi-stream; p99 server); ``None`` offline."""
        percentile = PERCENTILES.get(self.scenario.name)
        if percentile is None:
            return None
        key = "per_query_" if self.scenario.name == "multi_stream" else ""
        return self.ns(f"result_{percentile:.2f}_percentile_{key}latency_ns")

    @property
    def early_stopping_ms(self) -> float | None:
        """LoadGen's early-stopping estimate of that percentile, in ms (``None`` when it
        could not make one)."""
        key = {"single_stream": "early_stopping_latency_ss",
               "multi_stream": "early_stopping_latency_ms"}.get(self.scenario.name)
        value = self.ns(key) if key else None
        return value if value else None

    @property
    def ttft_p99_ms(self) -> float | None:
        """A generative run's p99 time to first token, arrival to first token (LoadGen's)."""
        return self.ns("result_first_token_99.00_percentile_latency_ns")

    @property
    def tpot_p99_ms(self) -> float | None:
        """A generative run's p99 time per output token (LoadGen's)."""
        return self.ns("result_time_per_output_token_99.00_percentile_ns")

    def own_over_bound(self, percentile: float) -> bool:
        """Whether the model alone, queueing left out, is over a bound at ``percentile`` of
        its queries: queueing only adds to that, so no lower rate brings it under."""
        scenario = self.scenario
        bounds = {"ttft": scenario.ttft_bound_ms, "tpot": scenario.tpot_bound_ms,
                  "latency": scenario.latency_bound_ms}
        return any(bounds.get(kind) is not None and len(times) > 0
                   and float(np.percentile(times, percentile)) > bounds[kind]
                   for kind, times in self.own_times.items())

    @property
    def why_invalid(self) -> str:
        """LoadGen's reasons, in words (empty for a valid run)."""
        if self.valid:
            return ""
        reasons = []
        tokens = self.scenario.token_bounds
        checks = {"result_min_duration_met": "the minimum duration was not reached",
                  "result_min_queries_met": "too few queries were issued",
                  "early_stopping_met": "early stopping could not state the percentile "
                                        "(too few queries, or too many over the bound)"}
        if not tokens:
            checks["result_perf_constraints_met"] = "the latency bound was not met"
        for key, why in checks.items():
            if self.log.get(key) is False:
                reasons.append(why)
        extra = str(self.log.get("result_invalid_reason") or "").strip()
        if tokens:
            # LoadGen names the token bound that failed ("TTFT constrain not met: ..."); say
            # it with the figures instead of its advice.
            for kind, bound, p99 in (("TTFT", self.scenario.ttft_bound_ms, self.ttft_p99_ms),
                                     ("TPOT", self.scenario.tpot_bound_ms, self.tpot_p99_ms)):
                if f"{kind} constrain" in extra or (bound is not None and p99 is not None
                                                    and p99 > bound):
                    reasons.append(f"the {kind} bound was not met (p99 {p99:.3g} ms, bound "
                                   f"{bound:g} ms)" if p99 is not None and bound else
                                   f"the {kind} bound was not met")
        elif extra:
            reasons.append(extra)
        return "; ".join(reasons) or str(self.log.get("result_validity"))

    def figures(self) -> dict[str, Any]:
        """What the result keeps of this run (its details)."""
        figures = {"target_qps": self.target_qps, "valid": self.valid,
                   "why_invalid": self.why_invalid, "percentile_ms": self.percentile_ms,
                   "early_stopping_ms": self.early_stopping_ms,
                   "queries": self.log.get("result_query_count"),
                   "samples_per_second": throughput(self)}
        if self.log.get("requested_use_token_latencies"):
            figures.update(ttft_p99_ms=self.ttft_p99_ms, tpot_p99_ms=self.tpot_p99_ms,
                           tokens_per_second=self.tokens_per_second, goodput=self.goodput)
        return figures

    @property
    def tokens_per_second(self) -> float | None:
        """Tokens/s LoadGen completed (a generative run)."""
        # Server runs log the completed rate; offline runs their one query's rate.
        for key in ("result_completed_tokens_per_second", "result_tokens_per_second"):
            if self.log.get(key) is not None:
                return float(self.log[key])
        return None


def throughput(run: LoadGenRun) -> float | None:
    """Samples per second as LoadGen counts them for the scenario."""
    for key in ("result_samples_per_second", "result_completed_samples_per_sec",
                "result_qps_with_loadgen_overhead"):
        if run.log.get(key) is not None:
            return float(run.log[key])  # LoadGen logs none of these for multi-stream
    return None


def _settings(lg: Any, scenario: Scenario, expected_ms: float, target_qps: float | None,
              workdir: str, tokens: bool) -> Any:
    settings = lg.TestSettings()
    if scenario.mlperf_durations:
        # LoadGen's own mlperf.conf (conf_type 0): its minimum duration and query counts for
        # the scenario; no model of MLPerf's is named, so only its general rules apply.
        empty = os.path.join(workdir, "user.conf")
        open(empty, "w").close()
        settings.FromConfig(empty, "benchlab", scenario.loadgen_name, 0)
        if scenario.query_count:
            settings.min_query_count = scenario.query_count
    else:
        settings.min_duration_ms = int(scenario.duration_s * 1000)
        settings.min_query_count = scenario.min_queries
    settings.scenario = getattr(lg.TestScenario, scenario.loadgen_name)
    settings.mode = lg.TestMode.AccuracyOnly if scenario.accuracy else lg.TestMode.PerformanceOnly
    expected_ns = max(int(expected_ms * NS_PER_MS / _HEADROOM), 1)
    settings.single_stream_expected_latency_ns = expected_ns
    per_query = scenario.samples_per_query or 8
    settings.multi_stream_samples_per_query = per_query
    settings.multi_stream_expected_latency_ns = expected_ns * per_query
    settings.offline_expected_qps = target_qps or _HEADROOM * 1000.0 / expected_ms
    if scenario.name == "server":
        settings.server_target_qps = target_qps
        # A generative server is bounded on its tokens; its whole queries are not.
        settings.server_target_latency_ns = int((scenario.latency_bound_ms or _UNBOUNDED_MS)
                                                * NS_PER_MS)
    if tokens:
        # The first token reported as produced (FirstTokenComplete), the rest counted.
        settings.use_token_latencies = True
        settings.ttft_latency = int((scenario.ttft_bound_ms or _UNBOUNDED_MS) * NS_PER_MS)
        settings.tpot_latency = int((scenario.tpot_bound_ms or _UNBOUNDED_MS) * NS_PER_MS)
    return settings


class QueuedServer:
    """A system under test whose worker thread answers the queries LoadGen's thread queues.

    LoadGen's thread only stamps each query's arrival and queues it, so arrivals (the server
    scenario's Poisson ones) are never held up by inference. The worker answers each query
    (:meth:`_answer`); after the first failure it answers the rest empty
    (:meth:`_answer_empty`), so LoadGen finishes its test and the run reports ``error``.
    ``sample_ms`` is benchlab's own time of each query. A subclass sets what its worker reads
    before calling ``__init__``, which starts the worker.
    """

    def __init__(self, lg: Any, backend: Any, thread_name: str) -> None:
        self._lg, self._backend = lg, backend
        self._queue: queue.SimpleQueue[list[tuple[Any, int]] | None] = queue.SimpleQueue()
        self.sample_ms: list[float] = []
        self.error: BaseException | None = None
        self._worker = threading.Thread(target=self._work, name=thread_name, daemon=True)
        self._worker.start()

    def issue(self, samples: list[Any]) -> None:
        # LoadGen's thread, at the query's arrival: stamp it, queue it and return.
        arrived = time.perf_counter_ns()
        self._queue.put([(sample, arrived) for sample in samples])

    def flush(self) -> None:
        """Nothing is held back: each query runs as soon as the worker is free."""

    def close(self) -> None:
        self._queue.put(None)
        self._worker.join()

    def own_times(self) -> dict[str, list[float]]:
        """What the model itself took per query, queueing left out (ms), by name."""
        raise NotImplementedError

    def _work(self) -> None:
        while (batch := self._queue.get()) is not None:
            for sample, arrived in batch:
                if self.error is None:
                    try:
                        self._answer(sample, arrived)
                        continue
                    except BaseException as exc:  # noqa: BLE001 - reported after the run
                        self.error = exc
                self._answer_empty(sample)

    def _answer(self, sample: Any, arrived: int) -> None:
        """Run the query of LoadGen's ``sample`` (arrived at ``arrived``, ns) and complete it."""
        raise NotImplementedError

    def _answer_empty(self, sample: Any) -> None:
        """Complete ``sample`` with no data (after a failure: so LoadGen is not kept waiting)."""
        raise NotImplementedError


def run_loadgen(make_server: Callable[[Any], Any], samples: int, scenario: Scenario,
                expected_ms: float, target_qps: float | None = None, *,
                tokens: bool = False) -> LoadGenRun:
    """One LoadGen test of ``scenario`` over ``samples`` query samples; ``make_server(lg)``
    makes the system under test (``issue``/``flush``/``close``, ``error``, ``sample_ms``,
    ``own_times()``: a :class:`QueuedServer`, of forward passes or of generations, which
    report tokens: ``tokens``)."""
    try:
        import mlperf_loadgen as lg
    except ImportError:
        raise RuntimeError("mlcommons-loadgen is not installed where the runner runs, and "
                           "load scenarios need it (pip install 'benchlab[loadgen]')") from None

    with tempfile.TemporaryDirectory(prefix="benchlab-loadgen-") as workdir:
        server = make_server(lg)
        sut = lg.ConstructSUT(server.issue, server.flush)
        # Every set is in memory already: loading and unloading samples is nothing to do.
        qsl = lg.ConstructQSL(samples, samples, lambda _: None, lambda _: None)
        log = lg.LogSettings()
        log.log_output.outdir = workdir
        log.log_output.copy_summary_to_stdout = False
        log.enable_trace = False  # hundreds of KB a second; nothing reads it
        try:
            lg.StartTestWithLogSettings(sut, qsl, _settings(lg, scenario, expected_ms,
                                                            target_qps, workdir, tokens), log)
        finally:
            server.close()
            lg.DestroyQSL(qsl)
            lg.DestroySUT(sut)
        if server.error is not None:
            raise RuntimeError(f"the model failed under LoadGen: {server.error!r}") \
                from server.error

        def read(name: str) -> str:
            path = os.path.join(workdir, name)
            if not os.path.exists(path):
                return ""
            with open(path) as file:
                return file.read()

        summary, detail = read("mlperf_log_summary.txt"), read("mlperf_log_detail.txt")
        accuracy = json.loads(read("mlperf_log_accuracy.json") or "[]") \
            if scenario.accuracy else []
    run = LoadGenRun(scenario, target_qps, read_detail_log(detail), server.sample_ms,
                     summary, detail, accuracy)
    if hasattr(server, "goodput"):
        run.goodput = server.goodput(run)
    run.own_times = server.own_times()
    return run


def search_peak(run_at: Callable[[float], LoadGenRun], scenario: Scenario, expected_ms: float,
                progress: Callable[[LoadGenRun], None] | None = None) -> list[LoadGenRun]:
    """Every server run (``run_at(rate)``) of the search for the highest rate that meets the
    bound (a generative server: both token bounds).

    It starts at half the rate one query at a time could sustain (1000 / ``expected_ms``),
    doubles while runs pass and halves while they fail, then bisects the bracket until it
    is 5% wide. While no rate has passed it stops early when lowering the rate cannot help,
    judged by the model's own times with queueing left out: their median is over a bound,
    or their p99 is over a bound in this run and the previous (higher) rate's. It also
    stops at 1/16 of the starting rate: each run issues a fixed number of queries, so a run
    at 1/16 of the rate lasts 16 times the first, and the halvings down to there 31 first
    runs in all (down to 1/64, as it was, 127: a search under a busy neighbour ran past ten
    minutes).
    """
    runs: list[LoadGenRun] = []
    passed: float | None = None
    failed: float | None = None
    start = rate = 0.5 * 1000.0 / max(expected_ms, 1e-3)
    while len(runs) < _SEARCH_MAX_RUNS:
        run = run_at(rate)
        runs.append(run)
        if progress is not None:
            progress(run)
        if run.valid:
            passed = rate
        else:
            failed = rate
            if passed is None and _hopeless(run, runs[:-1], rate / start):
                break
        if passed is not None and failed is not None:
            if (failed - passed) / passed <= _SEARCH_PRECISION:
                break
            rate = (passed + failed) / 2
        else:
            rate = rate * 2 if failed is None else rate / 2
    return runs


def _hopeless(run: LoadGenRun, before: Sequence[LoadGenRun], fraction_of_start: float) -> bool:
    """Whether a lower rate than ``run``'s (failed, none passed yet) cannot meet the bound."""
    # Judged by the model's own times, never by LoadGen's from arrival: those carry the
    # queueing a lower rate removes, and on a shared machine a neighbour's burst can leave
    # a queue behind at any rate, so "halving did not bring the tail down" misfires. The
    # p99 must be over in two runs in a row for the same reason; the median is firm at once.
    if run.own_over_bound(50):
        return True
    if run.own_over_bound(99) and before and before[-1].own_over_bound(99):
        return True
    return fraction_of_start <= 1 / 16


def run_scenario(run_at: Callable[[float | None], LoadGenRun], scenario: Scenario,
                 expected_ms: float) -> tuple[list[LoadGenRun], LoadGenRun]:
    """Every LoadGen run of ``scenario`` (the server search's, or the one run) and the one
    reported: the highest valid rate of a search, else the last run."""
    if scenario.searches_peak:
        runs = search_peak(run_at, scenario, expected_ms)
        good = [r for r in runs if r.valid]
        return runs, max(good, key=lambda r: r.target_qps or 0.0) if good else runs[-1]
    reported = run_at(scenario.target_qps)
    return [reported], reported


def figure_lines(scenario: Scenario, reported: LoadGenRun,
                 figures: Mapping[Metric, float | None]) -> list[str]:
    """The metric lines of the run a scenario reports: its own ``figures``, then what every
    scenario prints (samples/s, whether LoadGen judged it valid and, for a server search
    that met its bound, the rate); a figure without a value is left out."""
    every = {**figures, Metric.THROUGHPUT: throughput(reported),
             Metric.SCENARIO_VALID: 1.0 if reported.valid else 0.0}
    if scenario.name == "server" and reported.valid:
        every[Metric.SERVER_QPS] = reported.target_qps
    return [format_metric("NET", metric, value, METRICS[metric].unit)
            for metric, value in every.items() if value is not None]


def loadgen_details(scenario: Scenario, runs: Sequence[LoadGenRun], reported: LoadGenRun,
                    expected_ms: float, **more: Any) -> dict[str, Any]:
    """A scenario's detail entries: the scenario's own (:func:`scenario_details` and ``more``)
    and the reported run's LoadGen summary and detail log."""
    return {DetailKey.SCENARIO: {**scenario_details(scenario, runs, reported, expected_ms),
                                 **more},
            DetailKey.LOADGEN_SUMMARY: reported.summary,
            DetailKey.LOADGEN_DETAIL: reported.detail}


def scenario_details(scenario: Scenario, runs: Sequence[LoadGenRun], reported: LoadGenRun,
                     expected_ms: float) -> dict[str, Any]:
    """The scenario's detail entry: its settings, LoadGen's verdict and each run's figures."""
    import mlperf_loadgen

    details = {
        **scenario.to_wire(), "label": scenario.label,
        "loadgen_version": getattr(mlperf_loadgen, "__version__", None)
        or reported.log.get("loadgen_version"),
        "mode": "accuracy" if scenario.accuracy else "performance",
        "valid": reported.valid, "why_invalid": reported.why_invalid,
        "early_stopping": reported.log.get("early_stopping_result"),
        "expected_latency_ms": expected_ms,
        "runs": [r.figures() for r in runs], "over_capacity": over_capacity(reported),
    }
    if scenario.searches_peak and not any(r.valid for r in runs):
        bound = (scenario.label.partition("@")[2] if scenario.token_bounds
                 else f"{scenario.latency_bound_ms:g} ms")
        details["why_invalid"] = (
            f"no rate tried met the {bound} bound (lowest "
            f"{min(r.target_qps or 0 for r in runs):.3g} QPS: {reported.why_invalid})")
    return details


def over_capacity(run: LoadGenRun) -> str | None:
    """Words for a server run offered more than the model completed, else ``None``."""
    scheduled = run.log.get("result_scheduled_samples_per_sec")
    completed = run.log.get("result_completed_samples_per_sec")
    if scheduled is None or completed is None or float(completed) >= 0.9 * float(scheduled):
        return None
    return (f"offered {float(scheduled):.4g} queries/s, completed {float(completed):.4g}/s: "
            "the rate is above what the model sustains, so queries queued and latency grew "
            "with the run")
