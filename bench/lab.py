"""The lab's own speed: queue latency, throughput, and page time on a full store.

Three figures, each on a PostgreSQL 15 server this script starts on loopback:

* **defer-to-start latency**: one worker (a real ``benchlab lab worker`` process) serving one
  device; no-op jobs submitted one at a time (the next after the previous ended); the time from
  the job's row being written to its worker starting it. Median and p99.
* **throughput**: 1,000 no-op jobs queued for a pool, then four worker processes started in it;
  jobs per minute from the first start to the last end (and, apart, submissions per second).
* **page time**: 10,000 results holding 1,000,000 samples (400 model × backend × device cells,
  25 runs each, 100 samples per result); the overview page and a trends page rendered by the
  real app (FastAPI TestClient, templates and SVG included). Median and p90 of the repeats.

Run: ``.venv/bin/python bench/lab.py`` (about 4 minutes); ``--smoke`` for CI (``SMOKE``: a few
jobs, two throughput workers, a small store).
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _common import parse_args, spread, write_result
from lab.agents import Agents, wait_until

from benchlab.harness.jobrun import summarize_samples
from benchlab.lab.jobs import LabRequest, get_job, list_jobs
from benchlab.lab.localpg import PostgresServer, PostgresUnavailable, find_pg_bin
from benchlab.lab.queue import init_lab, open_lab, submit
from benchlab.schema.result import JobIdentity, Result, Sample, Status

FULL = {"latency_jobs": 100, "throughput_jobs": 1000, "throughput_workers": 4, "models": 20,
        "frameworks": 5, "devices": 4, "runs": 25, "samples": 100, "page_calls": 20}
SMOKE = {"latency_jobs": 5, "throughput_jobs": 20, "throughput_workers": 2, "models": 2,
         "frameworks": 2, "devices": 2, "runs": 3, "samples": 10, "page_calls": 2}


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latency(url: str, logs: Path, jobs: int) -> dict[str, float]:
    """Defer-to-start latency of no-op jobs on an idle one-device lab, in ms."""
    agents = Agents(url, logs)
    try:
        agents.start("lat")
        agents.wait_registered("host:lat")
        waits = []
        with open_lab(url) as lab:
            for _ in range(jobs):
                [job] = submit(lab, LabRequest(kind="noop"), device="host:lat")
                wait_until(lambda: get_job(lab.store, job.id).status == "finished", 60,
                           "a no-op job", poll=0.005)
                done = get_job(lab.store, job.id)
                waits.append((done.started_at - done.created_at) * 1e3)
    finally:
        agents.stop()
    return {"median_ms": statistics.median(waits), "p99_ms": _quantile(waits, 0.99),
            "max_ms": max(waits), "jobs": len(waits)}


def throughput(url: str, logs: Path, jobs: int, workers: int = 4) -> dict[str, float]:
    """No-op jobs per minute through ``workers`` workers in one pool (four; the smoke two).

    The jobs are all queued before any worker starts (the pool has no device yet), so the
    figure is the workers' pace, not the submitter's; the submission rate is its own figure.
    """
    agents = Agents(url, logs)
    try:
        with open_lab(url) as lab:
            start = time.time()
            ids = [submit(lab, LabRequest(kind="noop"), pool="pool=tp", fan_out=False)[0].id
                   for _ in range(jobs)]
            submit_s = time.time() - start
            for n in range(workers):
                agents.start(f"tp{n}", "--label", "pool=tp")
            wanted = set(ids)

            def all_done() -> bool:
                rows = list_jobs(lab.store, status="finished", limit=jobs * 2)
                return len(wanted & {j.id for j in rows}) == jobs

            wait_until(all_done, 600, f"{jobs} no-op jobs", poll=0.2)
            rows = [j for j in list_jobs(lab.store, limit=jobs * 2) if j.id in wanted]
    finally:
        agents.stop()
    first = min(j.started_at for j in rows)
    last = max(j.finished_at for j in rows)
    return {"jobs": jobs, "seconds": last - first, "jobs_per_minute": jobs / (last - first) * 60,
            "submitted_per_s": jobs / submit_s, "devices_used": len({j.device_id for j in rows})}


def fill_store(url: str, shape: dict[str, int]) -> dict[str, int]:
    """Results for every model × framework × device in each run, ``samples`` per result."""
    rng = np.random.default_rng(7)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    results = samples = 0
    with open_lab(url) as lab:
        for run_index in range(shape["runs"]):
            run = lab.store.start_run(fingerprint="bench-lab",
                                      description=f"nightly {run_index}", host="lab")
            clock = base + timedelta(days=run_index)
            for m in range(shape["models"]):
                for f in range(shape["frameworks"]):
                    for d in range(shape["devices"]):
                        centre = 1.0 + m + f * 0.5 + d * 0.25
                        values = centre * rng.lognormal(0.0, 0.05, shape["samples"])
                        reps = 5 if shape["samples"] >= 5 else 1
                        rows = tuple(Sample("latency", float(v), "ms", repetition=i % reps,
                                            index=i // reps) for i, v in enumerate(values))
                        identity = JobIdentity(
                            spec=f"specs/model{m}.yaml", model_name=f"model{m}",
                            model_hash=hashlib.sha256(f"model{m}".encode()).hexdigest(),
                            test_identifier="default", framework=f"fw{f}",
                            framework_config={}, target="adb", device=f"phone{d}")
                        stamp = clock.isoformat(timespec="microseconds")
                        lab.store.add_result(run.id, Result(
                            identity, Status.OK, samples=rows,
                            summaries=summarize_samples(rows),
                            details={"runtime_version": "1.0"}, started_at=stamp,
                            finished_at=stamp))
                        results += 1
                        samples += len(rows)
            lab.store.finish_run(run.id)
    return {"results": results, "samples": samples}


def page_times(url: str, calls: int) -> dict[str, dict[str, float]]:
    """Milliseconds to render the overview and one trends page, ``calls`` times each."""
    from fastapi.testclient import TestClient

    from benchlab.lab.server.app import create_app

    pages = {"overview": "/", "trends": "/trends?model=model0&backend=fw0&device=adb:phone0"}
    out = {}
    with TestClient(create_app(url)) as client:
        # The pages must show the store, not an empty state: check through their JSON twins.
        trends = client.get("/api/v1/trends?model=model0&backend=fw0&device=adb:phone0").json()
        assert trends["series"] and trends["series"][0]["points"], "trends page would be empty"
        for name, path in pages.items():
            assert client.get(path).status_code == 200, path  # warm: templates compiled
            times = []
            for _ in range(calls):
                started = time.perf_counter()
                answer = client.get(path)
                times.append((time.perf_counter() - started) * 1e3)
                assert answer.status_code == 200
            out[name] = {"median_ms": statistics.median(times), "p90_ms": _quantile(times, 0.9),
                         **{f"{k}_ms": v for k, v in spread(times).items()}}
    return out


def main() -> None:
    """Measure the three figures and write bench/results/lab.json."""
    args = parse_args(__doc__.splitlines()[0], repeats=1,
                      repeats_help="unused: each figure repeats internally")
    shape = SMOKE if args.smoke else FULL
    bin_dir = find_pg_bin()
    if bin_dir is None:
        print("postgres: unavailable (no initdb/pg_ctl); nothing measured")
        write_result("lab", args, {"available": False, "reason": "no PostgreSQL binaries"})
        return
    try:
        server = PostgresServer(bin_dir)
    except PostgresUnavailable as exc:
        print(f"postgres: unavailable ({exc}); nothing measured")
        write_result("lab", args, {"available": False, "reason": str(exc)})
        return
    server.start()
    logs = Path(server.data_dir).parent / "logs"
    logs.mkdir()
    figures: dict = {"available": True, "shape": shape}
    try:
        def fresh() -> str:
            url = server.create_database().replace("+psycopg2", "")
            init_lab(url)
            return url

        figures["defer_to_start"] = latency(fresh(), logs, shape["latency_jobs"])
        print("defer to start:", figures["defer_to_start"], flush=True)
        figures["throughput"] = throughput(fresh(), logs, shape["throughput_jobs"],
                                           shape["throughput_workers"])
        print("throughput:", figures["throughput"], flush=True)
        url = fresh()
        started = time.perf_counter()
        figures["store"] = fill_store(url, shape)
        figures["store"]["fill_s"] = time.perf_counter() - started
        print("store:", figures["store"], flush=True)
        figures["pages"] = page_times(url, shape["page_calls"])
        print("pages:", figures["pages"], flush=True)
    finally:
        server.stop()
    print(write_result("lab", args, figures))


if __name__ == "__main__":
    main()
