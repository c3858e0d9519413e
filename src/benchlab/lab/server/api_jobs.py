"""``/api/v1/jobs``, ``/queue`` and ``/pools``: submitting and cancelling work, and the queues."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query

from benchlab.errors import UsageError
from benchlab.lab.ab_options import read_compare_options, read_track_options
from benchlab.lab.devices import add_pool, list_pools
from benchlab.lab.jobs import LabRequest, flat_request_wire, get_job, list_jobs, queue_summary
from benchlab.lab.pools import PoolRule, pool_queue
from benchlab.lab.queue import Lab, cancel_job, submit
from benchlab.lab.server.api_models import (
    MAX_ID,
    JobOut,
    JobSubmitIn,
    PoolIn,
    PoolOut,
    QueueRowOut,
    RowId,
    Text,
    errors,
    usage_errors,
)
from benchlab.lab.server.auth import Caller, get_lab, require, require_read
from benchlab.lab.tokens import Scope
from benchlab.harness.sweep import Sweep

__all__ = ["router"]

router = APIRouter()

Status = Literal["waiting", "running", "finished", "failed", "cancelled"]


def _job(lab: Lab, job_id: int) -> dict[str, Any]:
    """The job as JSON, or 404."""
    try:
        return get_job(lab.store, job_id).to_json()
    except UsageError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/jobs", response_model=list[JobOut], responses=errors(401), tags=["jobs"])
def get_jobs(status: Status | None = None,
             device: Annotated[Text | None, Query(max_length=MAX_ID)] = None,
             submission: Annotated[Text | None, Query(max_length=36)] = None,
             limit: Annotated[int, Query(ge=1, le=1000)] = 200,
             lab: Lab = Depends(get_lab),
             _: Caller = Depends(require_read)) -> list[dict[str, Any]]:
    """Jobs, newest first, optionally of one status, device (route or assigned) or submission."""
    jobs = list_jobs(lab.store, status=status, device=device, submission=submission,
                     limit=limit)
    return [job.to_json() for job in jobs]


@router.get("/jobs/{job_id}", response_model=JobOut, responses=errors(401, 404), tags=["jobs"])
def get_one_job(job_id: RowId, lab: Lab = Depends(get_lab),
                _: Caller = Depends(require_read)) -> dict[str, Any]:
    """One job."""
    return _job(lab, job_id)


@router.post("/jobs", response_model=list[JobOut], status_code=201,
             responses=errors(400, 401, 403), tags=["jobs"])
def post_jobs(body: JobSubmitIn, lab: Lab = Depends(get_lab),
              caller: Caller = Depends(require(Scope.SUBMIT))) -> list[dict[str, Any]]:
    """Submit a benchmark to one device or one pool; one job per matching device with fan_out.

    A pool no device matches yet still takes the job: it waits, its reason saying so.
    """
    with usage_errors():
        request = _request(body)
        jobs = submit(lab, request, device=body.device, pool=body.pool, fan_out=body.fan_out,
                      submitted_by=caller.name)
    return [job.to_json() for job in jobs]


def _request(body: JobSubmitIn) -> LabRequest:
    """The request a submission describes, checked as the worker will read it: a sweep or
    options that cannot be read are a 400 naming the field, not a job that fails later."""
    if body.sweep is None:
        wire = flat_request_wire(body.specs, body.models, body.frameworks, body.overrides)
    else:
        if body.specs or body.models or body.frameworks or body.overrides:
            raise UsageError("give the sweep, or specs/models/frameworks/overrides, not both")
        wire = body.sweep
    with tempfile.TemporaryDirectory() as folder:
        Sweep.from_wire(wire, Path(folder))  # raises UsageError naming the field
    if body.kind == "compare":
        read_compare_options(body.options)
    elif body.kind == "track":
        read_track_options(body.options, Path(tempfile.gettempdir()))
    return LabRequest(sweep=wire, kind=body.kind, options=body.options)


@router.post("/jobs/{job_id}/cancel", response_model=JobOut,
             responses=errors(401, 403, 404, 409), tags=["jobs"])
def post_cancel(job_id: RowId, lab: Lab = Depends(get_lab),
                caller: Caller = Depends(require(Scope.ADMIN))) -> dict[str, Any]:
    """Cancel a waiting job; one that started (or ended) already is a 409."""
    _job(lab, job_id)
    if not cancel_job(lab, job_id, who=caller.name):
        job = get_job(lab.store, job_id)
        raise HTTPException(409, f"lab job {job_id} is {job.status}, not waiting: "
                                 "only waiting jobs can be cancelled")
    return _job(lab, job_id)


@router.get("/queue", response_model=list[QueueRowOut], responses=errors(401), tags=["jobs"])
def get_queue(lab: Lab = Depends(get_lab),
              _: Caller = Depends(require_read)) -> list[dict[str, Any]]:
    """Per queue (device or pool): jobs per status, oldest waiting age, what blocks it."""
    return [row.to_json() for row in queue_summary(lab.store)]


def _pool(rule: PoolRule) -> dict[str, Any]:
    return {"name": rule.name, "conditions": [c.text() for c in rule.conditions],
            "queue": pool_queue(rule)}


@router.get("/pools", response_model=list[PoolOut], responses=errors(401), tags=["pools"])
def get_pools(lab: Lab = Depends(get_lab),
              _: Caller = Depends(require_read)) -> list[dict[str, Any]]:
    """Every known pool."""
    return [_pool(rule) for rule in list_pools(lab.store)]


@router.post("/pools", response_model=PoolOut, responses=errors(400, 401, 403), tags=["pools"])
def post_pool(body: PoolIn, lab: Lab = Depends(get_lab),
              _: Caller = Depends(require(Scope.ADMIN))) -> dict[str, Any]:
    """Make a pool known (idempotent), so workers whose devices match listen on its queue."""
    with usage_errors():
        return _pool(add_pool(lab.store, body.rule))
