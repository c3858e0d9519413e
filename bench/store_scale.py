"""Store at scale: ingesting 1,000,000 samples, and the queries a history view and a report make.

A synthetic but realistic workload is built once, outside every timed region: 20 runs, each
holding one result per model (5) and framework (2), 200 results of 5,000 samples each (5
fresh processes × 1,000 values: import, load and memory figures, then latency iterations),
with summaries from :func:`benchlab.stats.summary.summarize` and the environment/details a real job
records. Each repeat starts from an empty database and measures, on SQLite and PostgreSQL:

* ``ingest``: every run written the way the harness writes it (``start_run``,
  ``finished_job_keys``, one ``add_result`` per result, each its own committed transaction,
  ``finish_run``); reported as total seconds and samples per second;
* ``history``: ``store.history(model, framework)`` for one model × framework (its p50 over
  time) from the store holding all samples;
* ``results (summaries)`` / ``results (+samples)``: ``store.results(run)`` of one run, without
  and with its raw samples.

The queries take a few milliseconds at most, so each repeat's figure for them is the median of
several calls. PostgreSQL runs on a throwaway local server (``tests/pg_server.py``) with its
default durability settings; without server binaries it is reported as unavailable.

    python bench/store_scale.py --repeats 5
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _common import parse_args, spread, write_result

from benchlab.harness.jobrun import summarize_samples
from benchlab.lab.localpg import PostgresServer, PostgresUnavailable, find_pg_bin
from benchlab.schema.result import JobIdentity, Result, Sample, Status
from benchlab.store import ResultStore, open_store

MODELS = ("resnet18", "mobilenet_v3", "bert_tiny", "mlp", "squeezenet")
FRAMEWORKS = ("pytorch", "onnxruntime")
PROCESSES = 5
# Per-process figures a runner prints once, before its timed iterations.
ONCE_METRICS = (
    ("import_time", "ms"),
    ("load_time", "ms"),
    ("memory_load", "KB"),
    ("memory_peak", "KB"),
)
QUERY_CALLS = 5


@dataclass(frozen=True)
class Workload:
    """The shape of the synthetic store and the results that fill it, grouped by run."""

    runs: list[list[Result]]
    samples_per_result: int

    @property
    def results(self) -> int:
        """Results over all runs."""
        return sum(len(run) for run in self.runs)

    @property
    def samples(self) -> int:
        """Samples over all results."""
        return self.results * self.samples_per_result


def build_workload(
    n_runs: int, models: tuple[str, ...], frameworks: tuple[str, ...], samples_per_result: int
) -> Workload:
    """Deterministic results for ``n_runs`` runs of every model on every framework."""
    rng = np.random.default_rng(20240601)
    per_process = samples_per_result // PROCESSES
    iterations = per_process - len(ONCE_METRICS)
    if iterations < 1 or per_process * PROCESSES != samples_per_result:
        raise ValueError(
            f"samples_per_result must be a multiple of {PROCESSES} with room for latency iterations"
        )
    base = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)
    runs: list[list[Result]] = []
    for run_index in range(n_runs):
        run_results = []
        clock = base + timedelta(days=run_index)
        for model in models:
            for framework in frameworks:
                centre = 1.0 + 4.0 * rng.random()  # each job has its own typical latency
                values = centre * rng.lognormal(0.0, 0.05, size=(PROCESSES, iterations))
                samples: list[Sample] = []
                for rep in range(PROCESSES):
                    for metric, unit in ONCE_METRICS:
                        samples.append(
                            Sample(metric, float(rng.uniform(10, 5000)), unit, repetition=rep)
                        )
                    samples.extend(
                        Sample("latency", float(v), "ms", repetition=rep, index=i)
                        for i, v in enumerate(values[rep])
                    )
                identity = JobIdentity(
                    spec=f"specs/{model}.yaml",
                    model_name=model,
                    model_hash=hashlib.sha256(model.encode()).hexdigest(),
                    test_identifier="batch1_224",
                    framework=framework,
                    framework_config={"threads": 2},
                    target="host",
                    device="cpu",
                )
                finished = clock + timedelta(seconds=30)
                run_results.append(
                    Result(
                        identity=identity,
                        status=Status.OK,
                        samples=tuple(samples),
                        summaries=summarize_samples(samples),
                        environment=_environment(),
                        details={
                            "runtime_version": "2.3.1",
                            "processes": PROCESSES,
                            "job_stop_reason": "iterations reached",
                        },
                        started_at=clock.isoformat(timespec="microseconds"),
                        finished_at=finished.isoformat(timespec="microseconds"),
                    )
                )
                clock = finished
        runs.append(run_results)
    return Workload(runs=runs, samples_per_result=samples_per_result)


def _environment() -> dict[str, Any]:
    # About the size of what targets/environment.py records for a host target.
    return {
        "host": "bench-host",
        "os": "Linux-6.1.0-x86_64",
        "python": "3.11.9",
        "cpu": {
            "model": "Intel(R) Xeon(R) CPU @ 2.20GHz",
            "cores": 2,
            "threads": 2,
            "governor": "performance",
            "frequency_mhz": 2200.0,
        },
        "load_before": [0.12, 0.2, 0.18],
        "load_after": [0.9, 0.4, 0.22],
        "memory_total_kb": 24_000_000,
        "temperatures_c": {"package": 48.0},
        "versions": {"benchlab": "0.1.0", "numpy": "1.26.4", "torch": "2.3.1"},
    }


def ingest(store: ResultStore, workload: Workload) -> float:
    """Write every run as the harness does; return the wall time in seconds."""
    started = time.perf_counter()
    for index, run_results in enumerate(workload.runs):
        run = store.start_run(
            fingerprint=f"sweep-{index:04d}", description="store_scale", host="bench-host"
        )
        store.finished_job_keys(run.id)
        for result in run_results:
            store.add_result(run.id, result)
        store.finish_run(run.id)
    return time.perf_counter() - started


def timed_median(call: Callable[[], Any]) -> tuple[float, Any]:
    """Median seconds over ``QUERY_CALLS`` calls, and the last call's answer."""
    times = []
    answer = None
    for _ in range(QUERY_CALLS):
        started = time.perf_counter()
        answer = call()
        times.append(time.perf_counter() - started)
    return statistics.median(times), answer


def measure(url: str, workload: Workload) -> dict[str, float]:
    """One repeat on an empty store at ``url``: ingest, then the three queries."""
    model, framework = (
        workload.runs[0][0].identity.model_name,
        workload.runs[0][0].identity.framework,
    )
    with open_store(url) as store:
        ingest_s = ingest(store, workload)
        run_id = store.list_runs(limit=len(workload.runs))[len(workload.runs) // 2].id
        history_s, points = timed_median(lambda: store.history(model, framework))
        bare_s, bare = timed_median(lambda: store.results(run_id, with_samples=False))
        full_s, full = timed_median(lambda: store.results(run_id, with_samples=True))
    # A figure for a query that returned the wrong thing would be meaningless.
    per_run = len(workload.runs[0])
    if len(points) != len(workload.runs) or len(bare) != per_run or len(full) != per_run:
        sys.exit(f"unexpected answer sizes: {len(points)} points, {len(bare)}/{len(full)} results")
    if sum(len(r.samples) for r in full) != per_run * workload.samples_per_result:
        sys.exit("results(with_samples=True) did not return every sample")
    return {
        "ingest_s": ingest_s,
        "ingest_samples_per_s": workload.samples / ingest_s,
        "history_ms": history_s * 1000,
        "results_summaries_ms": bare_s * 1000,
        "results_samples_ms": full_s * 1000,
    }


def run_backend(
    name: str, urls: Callable[[int], str], workload: Workload, repeats: int
) -> dict[str, Any]:
    """``repeats`` measurements, each on a fresh database from ``urls(repeat)``."""
    per_repeat = [measure(urls(repeat), workload) for repeat in range(repeats)]
    figures: dict[str, Any] = {"available": True}
    for key in per_repeat[0]:
        figures[key] = spread([m[key] for m in per_repeat])
    print(f"{name}: done", file=sys.stderr)
    return figures


def sqlite_figures(workload: Workload, repeats: int) -> dict[str, Any]:
    """The figures on SQLite files in a temporary directory (WAL, synchronous=FULL)."""
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        return run_backend("sqlite", lambda r: str(Path(tmp) / f"store-{r}.db"), workload, repeats)


def postgres_figures(workload: Workload, repeats: int) -> dict[str, Any]:
    """The figures on a throwaway PostgreSQL server, or why there are none."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        return {"available": False, "reason": "server binaries (initdb, pg_ctl) not installed"}
    try:
        server = PostgresServer(bin_dir)
        server.start()
    except (PostgresUnavailable, RuntimeError, OSError) as exc:
        return {"available": False, "reason": str(exc).strip().splitlines()[0]}
    try:
        return run_backend("postgresql", lambda r: server.create_database(), workload, repeats)
    finally:
        server.stop()


def print_table(figures: dict[str, Any]) -> None:
    """The human summary: one line per backend and figure, min/median/max."""
    print(
        f"{figures['samples']:,} samples in {figures['results']} results "
        f"({figures['runs']} runs); history of {figures['history_points']} points; "
        f"one run = {figures['run_results']} results"
    )
    rows = (
        ("ingest_s", "ingest (s)", "{:.2f}"),
        ("ingest_samples_per_s", "ingest (samples/s)", "{:,.0f}"),
        ("history_ms", "history (ms)", "{:.2f}"),
        ("results_summaries_ms", "results, summaries (ms)", "{:.2f}"),
        ("results_samples_ms", "results, +samples (ms)", "{:.1f}"),
    )
    print(f"{'backend':11} {'figure':24} {'min':>12} {'median':>12} {'max':>12}")
    for backend in ("sqlite", "postgresql"):
        cell = figures[backend]
        if not cell["available"]:
            print(f"{backend:11} unavailable: {cell['reason']}")
            continue
        for key, label, fmt in rows:
            s = cell[key]
            print(
                f"{backend:11} {label:24} "
                + " ".join(f"{fmt.format(s[k]):>12}" for k in ("min", "median", "max"))
            )


def main() -> None:
    """Build the workload, measure both backends and write the figures."""
    args = parse_args(__doc__.splitlines()[0])
    if args.smoke:
        workload = build_workload(2, MODELS[:1], FRAMEWORKS[:1], 500)
    else:
        workload = build_workload(20, MODELS, FRAMEWORKS, 5000)
    figures: dict[str, Any] = {
        "samples": workload.samples,
        "results": workload.results,
        "runs": len(workload.runs),
        "samples_per_result": workload.samples_per_result,
        "history_points": len(workload.runs),
        "run_results": len(workload.runs[0]),
        "query_calls_per_repeat": QUERY_CALLS,
    }
    figures["sqlite"] = sqlite_figures(workload, args.repeats)
    figures["postgresql"] = postgres_figures(workload, args.repeats)
    if not figures["postgresql"]["available"]:
        print("postgres: unavailable")
    print_table(figures)
    print("written to", write_result("store_scale", args, figures))


if __name__ == "__main__":
    main()
