"""Submitting to a lab from Python: ``submit_to_lab(url, specs, pool=...)`` and waiting."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.errors import SpecError, UsageError
from benchlab.lab.jobs import LabJob, LabRequest, get_job
from benchlab.lab.pools import PoolRule
from benchlab.lab.queue import open_lab, submit

__all__ = ["request_for", "submit_to_lab", "wait_for"]


def request_for(specs: Sequence[str | Path] = (), *, models: Sequence[str] = (),
                frameworks: Sequence[str] = (), overrides: dict[str, Any] | None = None,
                kind: str = "run", options: dict[str, Any] | None = None) -> LabRequest:
    """A lab request from spec files (checked here first, so a bad spec fails before queueing)."""
    from benchlab.spec import load

    texts = {}
    for spec in specs:
        path = Path(spec)
        try:
            texts[path.name] = path.read_text()
        except OSError as exc:
            raise SpecError(f"{path}: cannot read the spec: {exc.strerror or exc}") from None
        load(path)  # raises SpecError naming the file and the field
    if len(texts) != len(list(specs)):
        raise UsageError("two spec files share a name; a lab request keys specs by file name")
    return LabRequest(specs=texts, models=tuple(models), frameworks=tuple(frameworks),
                      overrides=dict(overrides or {}), kind=kind, options=dict(options or {}))


def wait_for(url: str, job_ids: Sequence[int], *, timeout: float = 3600.0,
             poll: float = 1.0) -> list[LabJob]:
    """Poll until every job has ended (finished, failed, cancelled) or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    with open_lab(url) as lab:
        while True:
            jobs = [get_job(lab.store, job_id) for job_id in job_ids]
            if all(j.status in ("finished", "failed", "cancelled") for j in jobs):
                return jobs
            if time.monotonic() > deadline:
                return jobs
            time.sleep(poll)


def submit_to_lab(url: str, specs: Sequence[str | Path] = (), *, device: str | None = None,
                 pool: str | None = None, fan_out: bool = True, models: Sequence[str] = (),
                 frameworks: Sequence[str] = (), overrides: dict[str, Any] | None = None,
                 submitted_by: str = "", wait: bool = False, timeout: float = 3600.0,
                 kind: str = "run", options: dict[str, Any] | None = None) -> list[LabJob]:
    """Queue specs (or zoo models) for a device or a pool; with ``wait``, return their ends.

    ``kind`` ``compare`` (``options``: ``control``/``treatment`` as ``program``, ``config`` or
    ``python``, and compare ``settings``) or ``track`` (``options``: the track settings, paths
    on the device's host) runs ``benchlab compare``/``track`` on the device: both sides on
    the same device; the job's ``report`` holds the result.
    """
    if pool is not None:
        PoolRule.parse(pool)  # a malformed rule fails before the lab is even opened
    request = request_for(specs, models=models, frameworks=frameworks, overrides=overrides,
                          kind=kind, options=options)
    with open_lab(url) as lab:
        jobs = submit(lab, request, device=device, pool=pool, fan_out=fan_out,
                      submitted_by=submitted_by)
    if wait:
        return wait_for(url, [j.id for j in jobs], timeout=timeout)
    return jobs
