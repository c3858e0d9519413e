"""The JSON API's request and response models, and how its errors are declared and raised.

Every route names a response model, so ``/openapi.json`` describes each answer exactly and a
client (or schemathesis) can check them. Free text that reaches PostgreSQL is declared without
NUL characters, which PostgreSQL text cannot hold; ids that become procrastinate queue names
(``device:<id>``, ``pool:<rule>``, at most 128 characters there) are capped so the queue
never refuses them after the lab's own row was written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from fastapi import HTTPException, Path, Query
from pydantic import BaseModel, Field, StringConstraints, create_model

from benchlab.errors import UsageError
from benchlab.lab.devices import Device, DeviceEvent, DeviceState
from benchlab.lab.jobs import LabJob, QueueRow
from benchlab.lab.run_state import ShownStatus
from benchlab.lab.run_view import RunDetail
from benchlab.lab.tokens import Scope, TokenInfo
from benchlab.lab.views import Comparison
from benchlab.schema.result import JobIdentity, Result, Summary
from benchlab.store import RunRecord, RunStatus

__all__ = [
    "MAX_ID", "MAX_INT", "ComparisonOut", "DeviceDetailOut", "DeviceEventOut", "DeviceId",
    "DeviceIn", "DeviceListOut", "DeviceOut", "ErrorOut", "HealthIn", "HeartbeatIn",
    "IdentityOut", "JobOut", "JobSubmitIn", "OkOut", "PoolIn", "PoolOut", "QuarantineIn",
    "QueueRowOut", "ResultOut", "RowId", "RunDetailOut", "RunFinishIn", "RunOut", "ShortId",
    "SummaryOut", "Text", "TokenCreatedOut", "TokenIn", "TokenOut", "errors", "finite",
    "response_model", "usage_errors",
]

_NO_NUL = r"^[^\x00]*$"
MAX_ID = 120
"""Longest device id or pool rule: ``device:``/``pool:`` plus it must fit procrastinate's
128-character ``queue_name``."""
MAX_INT = 2**31 - 1
"""The lab's ids are PostgreSQL ``integer``s."""

Text = Annotated[str, StringConstraints(pattern=_NO_NUL)]
"""Text PostgreSQL can store (no NUL)."""
QueryText = Annotated[str, Query(pattern=_NO_NUL)]
"""A query-string filter PostgreSQL can compare with (no NUL)."""
"""A run in a URL: its id, a UUID prefix or ``latest``."""
ShortId = Annotated[str, StringConstraints(pattern=_NO_NUL, min_length=1, max_length=MAX_ID)]
DeviceId = Annotated[str, Path(pattern=_NO_NUL, min_length=1, max_length=MAX_ID,
                               description="The device's id, e.g. host:build-01 or adb:SERIAL")]
RowId = Annotated[int, Path(ge=1, le=MAX_INT)]


class ErrorOut(BaseModel):
    """Every error the API raises on purpose: ``{"detail": "what went wrong"}``."""

    detail: str


_ERROR_TEXT = {
    400: "The request is well-formed but cannot be done (the message says why)",
    401: "No token, or an unknown or revoked one",
    403: "The token lacks the scope, or a worker token wrote for another host's device",
    404: "No such device, job, run or token",
    409: "The thing is not in a state that allows this (e.g. a job that already started)",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entries declaring these error statuses with :class:`ErrorOut`."""
    return {code: {"model": ErrorOut, "description": _ERROR_TEXT[code]} for code in codes}


@contextlib.contextmanager
def usage_errors(status: int = 400) -> Iterator[None]:
    """Turn a :class:`UsageError` (bad input, unknown id) into an HTTP error with its message."""
    try:
        yield
    except UsageError as exc:
        raise HTTPException(status, str(exc)) from None


def finite(value: Any) -> Any:
    """``value`` with inf and NaN floats as None: JSON has no such numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


class OkOut(BaseModel):
    """The server is up."""

    ok: bool



def response_model(name: str, shape: type, doc: str, *, drop: tuple[str, ...] = (),
                   added: Mapping[str, Any] | None = None, finite: bool = False,
                   types: Mapping[str, Any] | None = None) -> type[BaseModel]:
    """The response model of a frozen dataclass's ``to_json()``: the dataclass's own fields and
    types, less those ``drop`` names, plus the ``added`` fields (name: type) that it computes.
    With ``finite``, every float (alone, in a tuple or a mapping) may be null: JSON has no
    infinity or NaN, and :func:`finite` writes them as null. ``types`` replaces a field's
    type (a nested dataclass by its own response model).

    One definition of the shape: a field added to the dataclass appears in the API's schema,
    and a test checks that ``to_json()`` gives exactly these keys.
    """
    hints = get_type_hints(shape)
    fields: dict[str, Any] = {f.name: (_nullable(hints[f.name]) if finite else hints[f.name], ...)
                              for f in dataclasses.fields(shape) if f.name not in drop}
    fields.update({key: (kind, ...) for key, kind in {**(types or {}),
                                                     **(added or {})}.items()})
    return create_model(name, __doc__=doc, **fields)


def _nullable(hint: Any) -> Any:
    """``hint`` with its floats nullable, tuples as lists and mappings as dicts."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is float:
        return float | None
    if origin is tuple and args:
        return list[_nullable(args[0])]  # type: ignore[misc]
    if origin in (Mapping, dict) and args:
        return dict[args[0], _nullable(args[1])]  # type: ignore[misc,valid-type]
    return hint


# Devices


DeviceOut = response_model(
    "DeviceOut", Device,
    "A registered device; ``state`` is ``offline`` once its heartbeat is stale.",
    drop=("device_state", "now"),
    added={"reported_state": DeviceState, "heartbeat_age_s": float, "temperatures_c": Any,
           "battery": Any})


DeviceEventOut = response_model("DeviceEventOut", DeviceEvent,
                                "One change in a device's history.")


class DeviceListOut(BaseModel):
    """The devices of one count tab, and how many each tab holds."""

    tab: str
    counts: dict[str, int]
    devices: list[DeviceOut]


JobOut = response_model(
    "JobOut", LabJob, "A lab job: where it may run and what became of it.",
    drop=("request", "queue_job_id"),
    added={"label": str, "kind": str, "waiting_s": float, "stuck": bool})


class DeviceDetailOut(BaseModel):
    """A device, its history (newest first) and its latest jobs."""

    device: DeviceOut
    events: list[DeviceEventOut]
    jobs: list[JobOut]


class DeviceIn(BaseModel):
    """A worker registering (or refreshing) one of its host's devices."""

    host: Annotated[str, StringConstraints(pattern=_NO_NUL, min_length=1)]
    kind: Annotated[str, StringConstraints(pattern=_NO_NUL, min_length=1, max_length=16)]
    target: Text
    properties: dict[str, Any] = Field(default_factory=dict)
    pools: list[str] = Field(default_factory=list)
    device_state: dict[str, Any] | None = None


class HeartbeatIn(BaseModel):
    """A heartbeat, optionally with fresh temperatures, battery and the like."""

    device_state: dict[str, Any] | None = None


class HealthIn(BaseModel):
    """A health check's verdict."""

    health: Literal["good", "bad", "unknown"]
    reason: Text = ""


class QuarantineIn(BaseModel):
    """Why a device leaves rotation."""

    reason: Annotated[str, StringConstraints(pattern=_NO_NUL, min_length=1)]


# Jobs, queues, pools


class JobSubmitIn(BaseModel):
    """What to run and where: one device or one pool.

    ``sweep`` is the request in its wire form (:meth:`benchlab.harness.sweep.Sweep.to_wire`: what
    ``benchlab run --lab --dry-run`` prints), ``kind`` a run, a compare or a track, and
    ``options`` a compare's sides and settings or a track's settings. Without ``sweep``,
    ``specs``, ``models``, ``frameworks`` and ``overrides`` make a plain one (the form before
    the wire form; kept for the clients written against it).
    """

    sweep: dict[str, Any] | None = Field(None, description="Sweep.to_wire(): the whole request")
    kind: Literal["run", "compare", "track"] = "run"
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="compare: control, treatment, settings; "
                                                "track: its settings")
    specs: dict[str, str] = Field(default_factory=dict,
                                  description="Spec file name → its YAML text")
    models: list[str] = Field(default_factory=list)
    frameworks: list[str] = Field(default_factory=list)
    overrides: dict[str, Any] = Field(default_factory=dict)
    device: ShortId | None = None
    pool: ShortId | None = Field(None, description="A pool rule, e.g. abi=arm64-v8a,cores>=4")
    fan_out: bool = True


QueueRowOut = response_model(
    "QueueRowOut", QueueRow,
    "One queue's jobs per status, its oldest waiting job's age and why nothing takes it.",
    drop=("oldest_waiting_at",), added={"oldest_waiting_s": float | None, "stuck": bool})


class PoolIn(BaseModel):
    """A pool rule to make known."""

    rule: ShortId = Field(description="e.g. abi=arm64-v8a,cores>=4")


class PoolOut(BaseModel):
    """A known pool: its canonical rule, its conditions and its queue."""

    name: str
    conditions: list[str]
    queue: str


# Runs and results


SummaryOut = response_model(
    "SummaryOut", Summary,
    "Summary statistics of one metric (non-finite numbers are null); ``processes`` and "
    "``process_p50s`` (each process's median) are what the interval rests on.",
    finite=True)


IdentityOut = response_model("IdentityOut", JobIdentity,
                             "What was measured, where and how.")


ResultOut = response_model(
    "ResultOut", Result, "One result without its raw samples.", drop=("samples",),
    types={"identity": IdentityOut, "summaries": dict[str, SummaryOut],
           "status": Literal["ok", "failed", "timeout", "user_error"],
           "environment": dict[str, Any], "details": dict[str, Any]},
    added={"job_key": str})


class RunFinishIn(BaseModel):
    """How a reported run ended: ``finished`` (failed jobs included) or ``interrupted``."""

    status: Literal["finished", "interrupted"] = "finished"


RunOut = response_model(
    "RunOut", RunRecord,
    "A stored run. ``status`` is ``abandoned`` for a run the store still calls running "
    "(``stored_status``) that has had no new result for six hours; derived when read, never "
    "stored.",
    types={"status": ShownStatus},
    added={"stored_status": RunStatus, "result_count": int, "last_result_at": str | None})


RunDetailOut = response_model(
    "RunDetailOut", RunDetail,
    "A run: what the run page shows (its environment, each result's metrics) and every "
    "result's summaries, raw samples left out (they can be very many).",
    types={"run": RunOut, "environment": dict[str, Any], "results": list[ResultOut]})


ComparisonOut = response_model(
    "ComparisonOut", Comparison,
    "Run B against run A, metric by metric per matched job (unpaired: two stored runs are not "
    "paired measurements); ``runs`` are the recent runs the pickers offer.",
    types={"run_a": RunOut | None, "run_b": RunOut | None, "runs": list[RunOut]})


# Tokens


TokenOut = response_model(
    "TokenOut", TokenInfo,
    "A token's stored facts; the token itself is never shown again after creation.",
    types={"scopes": list[Scope]})


class TokenIn(BaseModel):
    """A token to make; a ``worker`` token names the host whose devices it serves."""

    name: Annotated[str, StringConstraints(pattern=_NO_NUL, min_length=1)]
    scopes: list[Scope] = Field(min_length=1)
    host: Text = ""


class TokenCreatedOut(TokenOut):
    """A new token: ``token`` appears in this answer and nowhere else, ever."""

    token: str
