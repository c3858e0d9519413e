"""Load scenarios of forward passes in the runner process: MLPerf LoadGen drives the loaded
backend.

LoadGen (the ``mlcommons-loadgen`` wheel) issues queries to a system under test (SUT) built
here over the backend, from a query sample library (QSL) of input sets: the reference's when
the model has one (so accuracy mode can be checked), else synthetic ones. LoadGen keeps the
clock and judges the run (:mod:`benchlab.runner.loadgen` reads its verdict and figures); the
result keeps its summary and detail logs. Each query is run by one worker thread, sample by
sample: LoadGen's issuing thread only queues it, so Poisson arrivals in the server scenario
are never held up by inference. Every sample's own time is kept too as ``latency``: each
sample's own inference (preparing its inputs and the call), the same definition as
benchlab's loop, now under the scenario's load (at most :data:`MAX_LATENCY_SAMPLES`, evenly
spaced, so an offline run of a tiny model stays small).

Before LoadGen starts, the warm-up calls are timed (the test's, and more for a quarter of a
second): their median tells LoadGen what latency to expect (how many samples an offline
query needs to last the duration) and where the server search starts
(:func:`benchlab.runner.loadgen.search_peak`, a LoadGen run per rate tried).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import numpy as np

from benchlab.protocol.lines import format_metric, write_measurement
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
from benchlab.schema.result import Metric

__all__ = ["MAX_LATENCY_SAMPLES", "WARM_MAX_CALLS", "WARM_NS", "measure_scenario"]

# Warm-up before LoadGen: the test's calls, then more while under this time and count.
WARM_NS = 250_000_000
WARM_MAX_CALLS = 2000
#: The most per-sample latencies a scenario result keeps.
MAX_LATENCY_SAMPLES = 20_000


class _Server(QueuedServer):
    """The system under test: the worker runs each queued query, sample by sample."""

    def __init__(self, lg: Any, backend: Any, sets: Sequence[dict[str, np.ndarray]],
                 keep_outputs: bool) -> None:
        self._sets, self._keep = sets, keep_outputs
        super().__init__(lg, backend, "benchlab-sut")

    def own_times(self) -> dict[str, list[float]]:
        """Each inference's time, queueing left out."""
        return {"latency": list(self.sample_ms)}

    def _answer(self, sample: Any, arrived: int) -> None:
        lg, clock = self._lg, time.perf_counter_ns
        started = clock()
        call = self._backend.prepare(self._sets[sample.index])
        call()
        self.sample_ms.append((clock() - started) / NS_PER_MS)
        if self._keep:
            data = np.concatenate([np.asarray(o, dtype=np.float32).ravel()
                                   for o in self._backend.outputs()])
            response = lg.QuerySampleResponse(sample.id, data.ctypes.data, data.nbytes)
            lg.QuerySamplesComplete([response])  # copies the bytes
        else:
            self._answer_empty(sample)

    def _answer_empty(self, sample: Any) -> None:
        self._lg.QuerySamplesComplete([self._lg.QuerySampleResponse(sample.id, 0, 0)])


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
           or (clock() - began < WARM_NS and len(warm_ms) < WARM_MAX_CALLS)):
        call = backend.prepare(sets[len(warm_ms) % len(sets)])
        started = clock()
        call()
        warm_ms.append((clock() - started) / NS_PER_MS)
    # The first call may compile; the median of the rest is what LoadGen is told to expect.
    expected_ms = float(np.median(warm_ms[1:]))
    def run_at(rate: float | None) -> LoadGenRun:
        return run_loadgen(lambda lg: _Server(lg, backend, sets, scenario.accuracy),
                           len(sets), scenario, expected_ms, rate)

    runs, reported = run_scenario(run_at, scenario, expected_ms)
    lines = list(head)
    lines.append(format_metric("NET", Metric.FIRST_INFERENCE, warm_ms[0], "ms"))
    kept = reported.sample_ms
    if len(kept) > MAX_LATENCY_SAMPLES:
        kept = [kept[int(i)] for i in np.linspace(0, len(kept) - 1, MAX_LATENCY_SAMPLES)]
    lines += [format_metric("NET", Metric.LATENCY, ms, "ms") for ms in kept]
    if not scenario.accuracy:
        lines += figure_lines(scenario, reported, {
            Metric.SCENARIO_LATENCY: reported.percentile_ms,
            Metric.EARLY_STOPPING_LATENCY: reported.early_stopping_ms,
        })
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
    details.update(loadgen_details(scenario, runs, reported, expected_ms,
                                   sample_sets=len(sets), samples_run=len(reported.sample_ms),
                                   latency_samples_kept=len(kept)))
    details.update(backend.info())
    write_measurement(out, lines, details)


