"""Submitting to a lab from Python: ``submit_to_lab(url, specs, pool=...)`` and waiting."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Unpack

from benchlab.errors import StoreUnavailable, UsageError
from benchlab.lab.jobs import LabJob, LabRequest, get_job
from benchlab.lab.pools import PoolRule
from benchlab.lab.queue import open_lab, submit
from benchlab.harness.sweep import SpecsArg, Sweep, SweepFields

__all__ = ["JobOutcome", "job_outcomes", "request_for", "submit_to_lab", "wait_for"]

_ENDED = ("finished", "failed", "cancelled")


def request_for(specs: SpecsArg | Sweep = (), *, kind: str = "run",
                options: Mapping[str, Any] | None = None,
                **fields: Unpack[SweepFields]) -> LabRequest:
    """A lab request for a :class:`~benchlab.harness.sweep.Sweep` (or the spec files and sweep fields
    that make one). Each spec is checked here first, so a bad spec fails before queueing,
    and whatever the lab cannot honour is refused, naming the option and why."""
    from benchlab.spec import load

    sweep = specs if isinstance(specs, Sweep) else Sweep.of(specs, **fields)
    if isinstance(specs, Sweep) and fields:
        raise UsageError("give a Sweep or its fields, not both")
    request = LabRequest.of(sweep, kind=kind, options=options)  # reads each spec's text
    for path in sweep.specs:
        load(path)  # raises SpecError naming the file and the field
    return request


def wait_for(url: str, job_ids: Sequence[int], *, timeout: float = 3600.0,
             poll: float = 1.0) -> list[LabJob]:
    """Poll until every job has ended (finished, failed, cancelled) or ``timeout`` passes.

    A database restart meanwhile is waited out (the jobs go on without us); only a database
    still away at the deadline raises :class:`~benchlab.errors.StoreUnavailable`.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open_lab(url) as lab:
                while True:
                    jobs = [get_job(lab.store, job_id) for job_id in job_ids]
                    if all(j.status in _ENDED for j in jobs) or time.monotonic() > deadline:
                        return jobs
                    time.sleep(poll)
        except StoreUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(poll)


def submit_to_lab(url: str, specs: SpecsArg | Sweep = (), *, device: str | None = None,
                  pool: str | None = None, fan_out: bool = True, submitted_by: str = "",
                  wait: bool = False, timeout: float = 3600.0, kind: str = "run",
                  options: Mapping[str, Any] | None = None,
                  **fields: Unpack[SweepFields]) -> list[LabJob]:
    """Queue a sweep (a :class:`~benchlab.harness.sweep.Sweep`, or spec files and the sweep's fields
    as ``benchlab.run`` takes them) for a device or a pool; with ``wait``, return their ends.

    ``kind`` ``compare`` (``options``: :func:`benchlab.lab.ab_options.compare_options`) or
    ``track`` (:func:`benchlab.lab.ab_options.track_options`, paths on the device's host)
    runs ``benchlab compare``/``track`` on the device: both sides on the same device; the
    job's ``report`` holds the result.
    """
    if pool is not None:
        PoolRule.parse(pool)  # a malformed rule fails before the lab is even opened
    request = request_for(specs, kind=kind, options=options, **fields)
    with open_lab(url) as lab:
        jobs = submit(lab, request, device=device, pool=pool, fan_out=fan_out,
                      submitted_by=submitted_by)
    if wait:
        return wait_for(url, [j.id for j in jobs], timeout=timeout)
    return jobs


@dataclass(frozen=True)
class JobOutcome:
    """Whether one lab job did what ``benchlab run`` would call a success, and if not, why.

    A job's status alone does not say: a run job whose process measured every cell ends
    ``finished`` even when some of its results failed (its reason counts them), just as
    ``benchlab run`` completes but exits 1. ``results`` are the results its run stored.
    """

    job: LabJob
    ok: bool
    why: str
    """One line for a job that did not succeed ("" for one that did)."""
    failed_results: tuple[tuple[str, str], ...] = ()
    """(label, error) of each failed result of the job's run."""
    results: tuple[Any, ...] = ()

    @property
    def where(self) -> str:
        """The device that ran the job, or the route it was waiting on."""
        job = self.job
        return job.device_id or (job.route if job.route_kind == "device"
                                 else f"pool {job.route}")

    def lines(self) -> list[str]:
        """The failure for people: the job, its device and why, then each failed result."""
        if self.ok:
            return []
        head = f"lab job {self.job.id} on {self.where}: {self.why}"
        return [head, *(f"  {label}: {error}" for label, error in self.failed_results)]


def job_outcomes(url: str, jobs: Sequence[LabJob], *,
                 with_samples: bool = False) -> list[JobOutcome]:
    """Judge ended (or waited-for) jobs the way ``benchlab run`` judges its results.

    A job fails when it is ``failed`` or ``cancelled``, when it had not ended when the wait
    gave up, when its run stored a result that is not ok, or when its compare or track
    report carries a non-zero exit code. The failed results are read from the lab's store
    through the job's run, so each is named with its own error, not just counted.
    """
    from benchlab.lab.queue import store_url
    from benchlab.store import open_store

    outcomes = []
    with open_store(store_url(url)) as store:
        for job in jobs:
            results = (tuple(store.results(job.run_uuid, with_samples=with_samples))
                       if job.run_uuid else ())
            failed = tuple((r.identity.label, r.error or r.status.value)
                           for r in results if not r.ok)
            exit_code = (job.report or {}).get("exit_code") or 0
            if job.status not in _ENDED:
                why = f"still {job.status} when the wait ended ({job.reason})"
            elif job.status != "finished":
                why = f"{job.status}: {job.reason}"
            elif failed:
                why = f"{len(failed)} of {len(results)} results failed"
            elif exit_code:
                why = f"{job.request.kind} exited with code {exit_code} ({job.reason})"
            else:
                why = ""
            outcomes.append(JobOutcome(job, ok=not why, why=why, failed_results=failed,
                                       results=results))
    return outcomes
