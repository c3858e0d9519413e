"""Load scenarios in the runner process: MLPerf LoadGen drives the loaded backend.

LoadGen (the ``mlcommons-loadgen`` wheel) issues queries to a system under test (SUT) built
here over the backend, from a query sample library (QSL) of input sets: the reference's when
the model has one (so accuracy mode can be checked), else synthetic ones. LoadGen keeps the
clock and judges the run; benchlab reads its verdict and figures from its detail log
(``mlperf_log_detail.txt``, one ``:::MLLOG`` JSON entry per line) and keeps its summary and
detail logs in the result. Each query is run by one worker thread, sample by sample: LoadGen's
issuing thread only queues it, so Poisson arrivals in the server scenario are never held up by
inference. Every sample's own time is kept too as ``latency``: each sample's own inference (preparing its inputs and the call), the
same definition as benchlab's loop, now under the scenario's load (at most
:data:`MAX_LATENCY_SAMPLES`, evenly spaced, so an offline run of a tiny model stays small).

Before LoadGen starts, the warm-up calls are timed (the test's, and more for a quarter of a
second): their median tells LoadGen what latency to expect (how many samples an offline query needs to last the duration) and where the server
search starts. The server search (:func:`search_peak`) runs LoadGen once per rate tried.
"""

from __future__ import annotations

import json
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from benchlab.metrics import METRICS
from benchlab.protocol import format_detail, format_metric
from benchlab.scenario import PERCENTILES, Scenario
from benchlab.schema import DetailKey, Metric

__all__ = ["MAX_LATENCY_SAMPLES", "LoadGenRun", "measure_scenario", "read_detail_log",
           "run_loadgen", "search_peak"]

_NS_PER_MS = 1e6
# LoadGen makes as many queries as the expected rate fills the minimum duration with, and
# runs them all; a model faster than expected runs out before the duration and LoadGen
# judges the run invalid. So it is told a rate this much above the warm-up's (the run may
# last up to that much longer than the duration instead).
_HEADROOM = 1.5
# The server search stops when its bracket is this narrow (relative).
_SEARCH_PRECISION = 0.05
_SEARCH_MAX_RUNS = 12
# Warm-up before LoadGen: the test's calls, then more while under this time and count.
_WARM_NS = 250_000_000
_WARM_MAX_CALLS = 2000
#: The most per-sample latencies a scenario result keeps.
MAX_LATENCY_SAMPLES = 20_000


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

    @property
    def valid(self) -> bool:
        """LoadGen judged the run valid (durations, query counts, early stopping, bound)."""
        return self.log.get("result_validity") == "VALID"

    def ns(self, key: str) -> float | None:
        value = self.log.get(key)
        return None if value is None else float(value) / _NS_PER_MS

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
    def why_invalid(self) -> str:
        """LoadGen's reasons, in words (empty for a valid run)."""
        if self.valid:
            return ""
        reasons = []
        checks = {"result_min_duration_met": "the minimum duration was not reached",
                  "result_min_queries_met": "too few queries were issued",
                  "early_stopping_met": "early stopping could not state the percentile "
                                        "(too few queries, or too many over the bound)",
                  "result_perf_constraints_met": "the latency bound was not met"}
        for key, why in checks.items():
            if self.log.get(key) is False:
                reasons.append(why)
        extra = str(self.log.get("result_invalid_reason") or "").strip()
        if extra:
            reasons.append(extra)
        return "; ".join(reasons) or str(self.log.get("result_validity"))

    def figures(self) -> dict[str, Any]:
        """What the result keeps of this run (its details)."""
        return {"target_qps": self.target_qps, "valid": self.valid,
                "why_invalid": self.why_invalid, "percentile_ms": self.percentile_ms,
                "early_stopping_ms": self.early_stopping_ms,
                "queries": self.log.get("result_query_count"),
                "samples_per_second": _throughput(self)}


def _throughput(run: LoadGenRun) -> float | None:
    """Samples per second as LoadGen counts them for the scenario."""
    for key in ("result_samples_per_second", "result_completed_samples_per_sec",
                "result_qps_with_loadgen_overhead"):
        if run.log.get(key) is not None:
            return float(run.log[key])  # LoadGen logs none of these for multi-stream
    return None


class _Server:
    """The system under test: a worker thread runs each queued query, sample by sample."""

    def __init__(self, lg: Any, backend: Any, sets: Sequence[dict[str, np.ndarray]],
                 keep_outputs: bool) -> None:
        self._lg, self._backend, self._sets = lg, backend, sets
        self._keep = keep_outputs
        self._queue: queue.SimpleQueue[list[Any] | None] = queue.SimpleQueue()
        self.sample_ms: list[float] = []
        self.error: BaseException | None = None
        self._worker = threading.Thread(target=self._work, name="benchlab-sut", daemon=True)
        self._worker.start()

    def issue(self, samples: list[Any]) -> None:
        # LoadGen's thread: queue and return at once.
        self._queue.put(samples)

    def flush(self) -> None:
        """Nothing is held back: every query is run as soon as the worker is free."""

    def close(self) -> None:
        self._queue.put(None)
        self._worker.join()

    def _work(self) -> None:
        lg, clock = self._lg, time.perf_counter_ns
        while (samples := self._queue.get()) is not None:
            for sample in samples:
                if self.error is not None:
                    lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0)])
                    continue
                try:
                    started = clock()
                    call = self._backend.prepare(self._sets[sample.index])
                    call()
                    self.sample_ms.append((clock() - started) / _NS_PER_MS)
                    if self._keep:
                        data = np.concatenate([np.asarray(o, dtype=np.float32).ravel()
                                               for o in self._backend.outputs()])
                        response = lg.QuerySampleResponse(sample.id, data.ctypes.data,
                                                          data.nbytes)
                        lg.QuerySamplesComplete([response])  # copies the bytes
                    else:
                        lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0)])
                except BaseException as exc:  # noqa: BLE001 - reported after the run
                    self.error = exc
                    lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0)])


def _settings(lg: Any, scenario: Scenario, expected_ms: float, target_qps: float | None,
              workdir: str) -> Any:
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
    expected_ns = max(int(expected_ms * _NS_PER_MS / _HEADROOM), 1)
    settings.single_stream_expected_latency_ns = expected_ns
    per_query = scenario.samples_per_query or 8
    settings.multi_stream_samples_per_query = per_query
    settings.multi_stream_expected_latency_ns = expected_ns * per_query
    settings.offline_expected_qps = target_qps or _HEADROOM * 1000.0 / expected_ms
    if scenario.name == "server":
        settings.server_target_qps = target_qps
        settings.server_target_latency_ns = int(scenario.latency_bound_ms * _NS_PER_MS)
    return settings


def run_loadgen(backend: Any, scenario: Scenario, sets: Sequence[dict[str, np.ndarray]],
                expected_ms: float, target_qps: float | None = None) -> LoadGenRun:
    """One LoadGen test of ``scenario`` over ``sets`` on the loaded ``backend``."""
    try:
        import mlperf_loadgen as lg
    except ImportError:
        raise RuntimeError("mlcommons-loadgen is not installed where the runner runs, and "
                           "load scenarios need it (pip install 'benchlab[loadgen]')") from None

    with tempfile.TemporaryDirectory(prefix="benchlab-loadgen-") as workdir:
        server = _Server(lg, backend, sets, keep_outputs=scenario.accuracy)
        sut = lg.ConstructSUT(server.issue, server.flush)
        # Every set is in memory already: loading and unloading samples is nothing to do.
        qsl = lg.ConstructQSL(len(sets), len(sets), lambda _: None, lambda _: None)
        log = lg.LogSettings()
        log.log_output.outdir = workdir
        log.log_output.copy_summary_to_stdout = False
        log.enable_trace = False  # hundreds of KB a second; nothing reads it
        try:
            lg.StartTestWithLogSettings(sut, qsl, _settings(lg, scenario, expected_ms,
                                                            target_qps, workdir), log)
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
    return LoadGenRun(scenario, target_qps, read_detail_log(detail), server.sample_ms,
                      summary, detail, accuracy)


def search_peak(backend: Any, scenario: Scenario, sets: Sequence[dict[str, np.ndarray]],
                expected_ms: float,
                progress: Callable[[LoadGenRun], None] | None = None) -> list[LoadGenRun]:
    """Every server run of the search for the highest rate whose p99 meets the bound.

    It starts at half the rate one sample at a time could sustain (1000 / ``expected_ms``),
    doubles while runs pass and halves while they fail, then bisects the bracket until it
    is 5% wide. While no rate has passed it stops early when lowering the rate cannot help:
    a failed run's median latency is over the bound already, or its p99 is no better than
    the previous (higher) rate's, or the rate is under 1/64 of the start (each run issues a
    fixed number of queries, so a low rate is a long run).
    """
    bound = scenario.latency_bound_ms or 0.0
    runs: list[LoadGenRun] = []
    passed: float | None = None
    failed: float | None = None
    start = rate = 0.5 * 1000.0 / max(expected_ms, 1e-3)
    while len(runs) < _SEARCH_MAX_RUNS:
        run = run_loadgen(backend, scenario, sets, expected_ms, target_qps=rate)
        runs.append(run)
        if progress is not None:
            progress(run)
        if run.valid:
            passed = rate
        else:
            failed = rate
            if passed is None and _hopeless(run, runs[:-1], bound, rate / start):
                break
        if passed is not None and failed is not None:
            if (failed - passed) / passed <= _SEARCH_PRECISION:
                break
            rate = (passed + failed) / 2
        else:
            rate = rate * 2 if failed is None else rate / 2
    return runs


def _hopeless(run: LoadGenRun, before: Sequence[LoadGenRun], bound: float,
              fraction_of_start: float) -> bool:
    """Whether a lower rate than ``run``'s (failed, none passed yet) cannot meet ``bound``."""
    median = run.ns("result_50.00_percentile_latency_ns")
    if median is not None and median > bound:
        return True
    if fraction_of_start <= 1 / 64:
        return True
    if before and run.percentile_ms is not None and before[-1].percentile_ms is not None:
        # Halving the load did not bring the tail down: queueing is not what is slow.
        return run.percentile_ms >= 0.9 * before[-1].percentile_ms
    return False


def _accuracy_outputs(run: LoadGenRun, shapes: Sequence[tuple[int, ...]],
                      count: int) -> list[list[np.ndarray]]:
    """Each set's outputs from LoadGen's accuracy log (float32 bytes, in hex), split back
    into the reference's output shapes."""
    sizes = [int(np.prod(shape)) for shape in shapes]
    by_index: dict[int, list[np.ndarray]] = {}
    for entry in run.accuracy:
        flat = np.frombuffer(bytes.fromhex(entry["data"]), dtype=np.float32)
        if flat.size != sum(sizes):
            raise ValueError(f"sample {entry['qsl_idx']}: {flat.size} values logged, the "
                             f"reference's outputs hold {sum(sizes)}")
        parts = np.split(flat, np.cumsum(sizes)[:-1])
        by_index[int(entry["qsl_idx"])] = [p.reshape(s) for p, s in zip(parts, shapes,
                                                                          strict=True)]
    missing = sorted(set(range(count)) - set(by_index))
    if missing:
        raise ValueError(f"LoadGen's accuracy log lacks samples {missing[:5]}")
    return [by_index[k] for k in range(count)]


def measure_scenario(backend: Any, config: Any, out: TextIO, *, head: Sequence[str],
                     sets: Sequence[dict[str, np.ndarray]],
                     reference_outputs: Sequence[Sequence[np.ndarray]] | None,
                     task: str | None, memory_peak: Callable[[], float | None]) -> None:
    """Run ``config.scenario`` under LoadGen on the loaded backend over the input ``sets``
    and print the metric lines, ``head`` first. ``reference_outputs`` (one list per set)
    are what accuracy mode checks LoadGen's logged outputs against."""
    from benchlab.runner.accuracy import ERROR_METRICS, error_stats, stack_sets

    scenario: Scenario = config.scenario
    clock = time.perf_counter_ns
    warm_ms: list[float] = []
    began = clock()
    # The test's warm-up calls, and more while they last under a quarter of a second: a fast
    # model's few calls are too noisy a guide to how many samples fill the duration.
    while (len(warm_ms) < max(config.warmup, 3)
           or (clock() - began < _WARM_NS and len(warm_ms) < _WARM_MAX_CALLS)):
        call = backend.prepare(sets[len(warm_ms) % len(sets)])
        started = clock()
        call()
        warm_ms.append((clock() - started) / _NS_PER_MS)
    # The first call may compile; the median of the rest is what LoadGen is told to expect.
    expected_ms = float(np.median(warm_ms[1:]))
    if scenario.searches_peak:
        runs = search_peak(backend, scenario, sets, expected_ms)
        good = [r for r in runs if r.valid]
        reported = max(good, key=lambda r: r.target_qps or 0.0) if good else runs[-1]
    else:
        reported = run_loadgen(backend, scenario, sets, expected_ms, scenario.target_qps)
        runs = [reported]
    lines = list(head)
    lines.append(format_metric("NET", Metric.FIRST_INFERENCE, warm_ms[0], "ms"))
    kept = reported.sample_ms
    if len(kept) > MAX_LATENCY_SAMPLES:
        kept = [kept[int(i)] for i in np.linspace(0, len(kept) - 1, MAX_LATENCY_SAMPLES)]
    lines += [format_metric("NET", Metric.LATENCY, ms, "ms") for ms in kept]
    figures = {
        Metric.SCENARIO_LATENCY: reported.percentile_ms,
        Metric.EARLY_STOPPING_LATENCY: reported.early_stopping_ms,
        Metric.THROUGHPUT: _throughput(reported),
        Metric.SCENARIO_VALID: 1.0 if reported.valid else 0.0,
    }
    if scenario.name == "server" and reported.valid:
        figures[Metric.SERVER_QPS] = reported.target_qps
    if not scenario.accuracy:
        lines += [format_metric("NET", metric, value, METRICS[metric].unit)
                  for metric, value in figures.items() if value is not None]
    peak = memory_peak()
    if peak is not None:
        lines.append(format_metric("NET", Metric.MEMORY_PEAK, peak, "MiB"))
    details: dict[str, Any] = {}
    if scenario.accuracy:
        if not reference_outputs:
            details["accuracy_skipped"] = "the model has no reference outputs to check against"
        else:
            shapes = [np.asarray(o).shape for o in reference_outputs[0]]
            got = _accuracy_outputs(reported, shapes, len(reference_outputs))
            stats = error_stats(stack_sets(got), stack_sets([list(w) for w in
                                                             reference_outputs]), task)
            lines += [format_metric("NET", k, v, ERROR_METRICS[k]) for k, v in stats.items()]
            details["reference_sets"] = len(got)
    import mlperf_loadgen

    over = _over_capacity(reported)
    details[DetailKey.SCENARIO] = {
        **scenario.to_wire(), "label": scenario.label,
        "loadgen_version": getattr(mlperf_loadgen, "__version__", None)
        or reported.log.get("loadgen_version"),
        "mode": "accuracy" if scenario.accuracy else "performance",
        "valid": reported.valid, "why_invalid": reported.why_invalid,
        "early_stopping": reported.log.get("early_stopping_result"),
        "expected_latency_ms": expected_ms, "sample_sets": len(sets),
        "runs": [r.figures() for r in runs], "over_capacity": over,
        "samples_run": len(reported.sample_ms), "latency_samples_kept": len(kept),
    }
    if scenario.searches_peak and not any(r.valid for r in runs):
        details[DetailKey.SCENARIO]["why_invalid"] = (
            f"no rate tried met the {scenario.latency_bound_ms:g} ms bound (lowest "
            f"{min(r.target_qps or 0 for r in runs):.3g} QPS: {reported.why_invalid})")
    details[DetailKey.LOADGEN_SUMMARY] = reported.summary
    details[DetailKey.LOADGEN_DETAIL] = reported.detail
    details.update(backend.info())
    lines.append(format_detail(**details))
    out.write("\n".join(lines) + "\n")
    out.flush()


def _over_capacity(run: LoadGenRun) -> str | None:
    """Words for a server run offered more than the model completed, else ``None``."""
    scheduled = run.log.get("result_scheduled_samples_per_sec")
    completed = run.log.get("result_completed_samples_per_sec")
    if scheduled is None or completed is None or float(completed) >= 0.9 * float(scheduled):
        return None
    return (f"offered {float(scheduled):.4g} queries/s, completed {float(completed):.4g}/s: "
            "the rate is above what the model sustains, so queries queued and latency grew "
            "with the run")
