"""``POST /api/v1/results``: results that ``benchlab run --report-to`` sends to a lab.

Each post carries one result and the run it belongs to, under the UUID the run has where it
ran. The lab creates that run if it lacks it and stores the result there; the store keeps one
result per (run, job key), so posting a result again, or from a resumed run, is a no-op the
reply marks ``duplicate``. That is what lets the reporter retry and re-send its spool freely.

Who may post: a ``report`` token, for any result; or a ``worker`` token, only for results
measured on a device its own host registered. "Its device" means a registered device whose
``host`` is the token's host, whose ``kind`` is the result's target (``adb``, ``ssh``,
``host``), and whose id is the result's device label (``host:box1``) or whose ``hostname``
property is the result's device. An ``admin`` token may post anything.

``POST /api/v1/runs/<uuid>/finish``: the reporter says how the run ended once it has, so the
lab stops showing it as running. The same callers may: a ``report`` token for any run, a
``worker`` token for a run whose every result it could have posted itself.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, TypeAdapter, ValidationError
from sqlalchemy.exc import DataError, IntegrityError

from benchlab.errors import StoreError, UsageError
from benchlab.lab.devices import list_devices
from benchlab.lab.reporter import ReportedRun
from benchlab.lab.run_state import finish_reported_run
from benchlab.lab.server.api_models import RunFinishIn, RunOut, errors, usage_errors
from benchlab.lab.server.auth import Caller, get_lab, require
from benchlab.lab.tokens import Scope
from benchlab.schema.result import SCHEMA_VERSION, JobIdentity, Result

__all__ = ["IngestReply", "PostedResult", "router"]

router = APIRouter(prefix="/api/v1", tags=["results"])

_RESULT = TypeAdapter(Result)

# A second scheme object of the same kind auth.py uses: tokens only ever come in the header.
_bearer = HTTPBearer(auto_error=False, description="A benchlab lab token (bl_...).")


class PostedResult(BaseModel):
    """One result (``Result.to_dict()``) and its run."""

    run: ReportedRun
    result: dict[str, Any]


class IngestReply(BaseModel):
    """Where the result is now; ``duplicate`` when the run already held a result of its job
    (kept as it was, unless the new one is ok and the stored one had failed: a retry)."""

    result_id: int
    run_uuid: str
    duplicate: bool


def _poster(request: Request,
            credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Caller:
    """A caller with the ``report`` scope, else one with ``worker`` (checked per result)."""
    try:
        return require(Scope.REPORT)(request, credentials)
    except HTTPException as exc:
        if exc.status_code != 403:
            raise  # no token or an unknown one: 401 as auth.py words it
    try:
        return require(Scope.WORKER)(request, credentials)
    except HTTPException as exc:
        raise HTTPException(403, "posting results needs a token with the 'report' or "
                                 "'worker' scope") from exc


def _parse(payload: dict[str, Any]) -> Result:
    """The posted result, typed field by field, or 422 saying what is wrong with it.

    Validating against the dataclasses (not just ``Result.from_dict``) matters: a sample whose
    value is not a number would otherwise get as far as the database and fail there.
    """
    try:
        result = _RESULT.validate_python(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'result'}: {error['msg']}"
            for error in exc.errors()[:5])
        raise HTTPException(422, f"the result is malformed: {problems}") from None
    if result.schema_version > SCHEMA_VERSION:
        raise HTTPException(422, f"the result has schema_version {result.schema_version}; "
                                 f"this lab reads up to {SCHEMA_VERSION}")
    claimed = payload.get("job_key")
    if claimed is not None and claimed != result.identity.key:
        # The key is derived from the identity; a mismatch means the payload was altered or
        # made by a benchlab that hashes identities differently: storing it would break
        # resume and history, so say so instead.
        raise HTTPException(422, f"the result's job_key {claimed!r} does not match its "
                                 f"identity (expected {result.identity.key!r})")
    return result


def _check_device(caller: Caller, identity: JobIdentity, request: Request) -> None:
    """A worker-only token may post only for a device its host registered."""
    token = caller.token
    assert token is not None
    if token.allows(Scope.REPORT):
        return  # report (or admin) tokens may post any result
    for device in list_devices(get_lab(request).store):
        if device.host != token.host or device.kind != identity.target:
            continue
        if device.id == identity.device_label or (
                identity.device and identity.device == device.properties.get("hostname")):
            return
    raise HTTPException(403, f"the worker token {token.name!r} serves host {token.host!r}, "
                             f"which registered no device {identity.device_label!r}")


@router.post("/results", response_model=IngestReply,
             responses={400: {"description": "the body is not JSON"},
                        401: {"description": "no token, or an unknown one"},
                        403: {"description": "the token may not post this result"},
                        422: {"description": "the result or run is malformed"},
                        503: {"description": "the lab's database failed; retry later"}})
def post_result(body: PostedResult, request: Request,
                caller: Caller = Depends(_poster)) -> IngestReply:
    """Store one result under its run (created with the given UUID if new); idempotent."""
    result = _parse(body.result)
    _check_device(caller, result.identity, request)
    store = get_lab(request).store
    try:
        run = store.ensure_run(run_uuid=body.run.uuid, fingerprint=body.run.fingerprint,
                               description=body.run.description, host=body.run.host,
                               created_at=body.run.created_at)
        known = store.finished_job_keys(run.id)
        result_id = store.add_result(run.id, result)
    except UsageError as exc:
        raise HTTPException(422, str(exc)) from None
    except StoreError as exc:
        if isinstance(exc.__cause__, (DataError, IntegrityError)):
            # The database refused these values (a NUL byte in a name, say): sending them
            # again would fail the same way.
            raise HTTPException(422, f"the lab cannot store this result: {exc}") from None
        # Anything else (the database unreachable) is transient for the poster: it keeps
        # the result and sends it again later.
        raise HTTPException(503, f"the lab could not store the result: {exc}") from None
    return IngestReply(result_id=result_id, run_uuid=run.uuid,
                       duplicate=result.identity.key in known)


@router.post("/runs/{run_uuid}/finish", response_model=RunOut,
             responses={**errors(400, 401, 403, 404),
                        503: {"description": "the lab's database failed; retry later"}})
def post_finish(run_uuid: uuid.UUID, request: Request,
                body: Annotated[RunFinishIn | None, Body()] = None,
                caller: Caller = Depends(_poster)) -> dict[str, Any]:
    """Record how a reported run ended (``finished`` unless the body says ``interrupted``).

    Until then the lab shows the run as running, and as abandoned once it has had no new
    result for six hours. Finishing again overwrites (a run resumed where it ran may end
    differently the second time).
    """
    store = get_lab(request).store
    with usage_errors(404):
        record = store.get_run(str(run_uuid))
    token = caller.token
    assert token is not None
    if not token.allows(Scope.REPORT):
        # A worker token: only a run whose results all came from its own host's devices.
        stored = store.results(record.id, with_samples=False)
        if not stored:
            raise HTTPException(403, f"the worker token {token.name!r} may finish only runs "
                                     "holding results from its own host's devices")
        for result in stored:
            _check_device(caller, result.identity, request)
    with usage_errors():
        info = finish_reported_run(store, record.uuid,
                                   "finished" if body is None else body.status)
    return info.to_json()
