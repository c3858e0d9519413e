"""Lab jobs: what was submitted, where it may run, and what became of it.

A lab job is one benchmark request (a sweep in its wire form, with a compare's or a track's
options) bound for one device or one pool. Its row in ``lab_jobs`` is benchlab's record; procrastinate's job
(``queue_job_id``) is only the ticket a device worker claims. Statuses: ``waiting`` (in a
queue; ``reason`` says why it has not started), ``running``, ``finished``, ``failed``,
``cancelled``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from sqlalchemy import func, select, update

from benchlab.errors import UsageError
from benchlab.lab.devices import Device, add_pool, list_devices
from benchlab.lab.pools import PoolRule, device_queue, pool_queue
from benchlab.store import ResultStore
from benchlab.lab.tables import lab_jobs
from benchlab.harness.sweep import WIRE_VERSION, Sweep, parse_framework, wire_digest

__all__ = [
    "JOB_STATUSES",
    "JobStatus",
    "JobSummary",
    "LabJob",
    "LabRequest",
    "QueueRow",
    "REQUEST_KINDS",
    "RouteKind",
    "STUCK_AFTER_S",
    "flat_request_wire",
    "get_job",
    "list_jobs",
    "new_jobs",
    "queue_summary",
    "route_problem",
    "set_job",
]

JobStatus = Literal["waiting", "running", "finished", "failed", "cancelled"]
JOB_STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)
RouteKind = Literal["device", "pool"]
"""A job waits for one device (``device``) or for any device of a pool (``pool``)."""

STUCK_AFTER_S = 300.0
"""A job waiting longer than this is flagged by ``lab status`` and the queue page."""


#: The kinds of lab job: a run, a compare or a track; ``noop`` only sleeps (the lab's own
#: benchmarks and tests of the queue use it).
REQUEST_KINDS = ("run", "compare", "track", "noop")


@dataclass(frozen=True)
class LabRequest:
    """What to run: a :class:`~benchlab.harness.sweep.Sweep` in its wire form (spec files as their
    text), its kind, and a compare's or a track's options.

    Build it with :meth:`of`, which refuses, naming the option and why, whatever the sweep
    sets that cannot travel to another host (:data:`benchlab.harness.sweep.PLACE_FIELDS`). The
    worker writes the spec files into a temporary folder, so model files they name must be
    reachable from the worker: URLs, zoo models or paths on that host. A compare's
    ``options`` are :func:`benchlab.lab.ab_options.compare_options`; a track's,
    :func:`benchlab.lab.ab_options.track_options`.
    """

    sweep: Mapping[str, Any] = field(default_factory=lambda: Sweep().to_wire())
    kind: str = "run"
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in REQUEST_KINDS:
            raise UsageError(f"a lab job is one of {', '.join(REQUEST_KINDS)}, not {self.kind!r}")

    @classmethod
    def of(cls, sweep: Sweep, kind: str = "run",
           options: Mapping[str, Any] | None = None) -> LabRequest:
        """The request that runs ``sweep`` on a lab device (which the route names)."""
        return cls(sweep=sweep.to_wire(), kind=kind, options=dict(options or {}))

    @property
    def digest(self) -> str:
        """The sweep's digest (:meth:`benchlab.harness.sweep.Sweep.digest`): equal to the local
        sweep's when the job carries all of it."""
        return wire_digest(self.sweep)

    def sweep_on(self, spec_dir: Path, target: str) -> Sweep:
        """The sweep to run on the device ``target``, its spec files written to ``spec_dir``."""
        return Sweep.from_wire(self.sweep, spec_dir, target=target)

    def to_json(self) -> str:
        """The request as stored in ``lab_jobs.request_json``."""
        return json.dumps({"sweep": dict(self.sweep), "kind": self.kind,
                           "options": dict(self.options)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LabRequest:
        """The inverse of :meth:`to_json`; a request stored before the sweep's wire form
        (specs, models, frameworks and overrides side by side) is read into one."""
        data = json.loads(text)
        sweep = data["sweep"] if "sweep" in data else flat_request_wire(
            data.get("specs", {}), data.get("models", ()), data.get("frameworks", ()),
            data.get("overrides", {}))
        return cls(sweep=sweep, kind=data.get("kind", "run"), options=data.get("options", {}))

    def describe(self) -> str:
        """A short label: the spec file names and models."""
        names = [*self.sweep.get("specs", {}), *self.sweep.get("models", ())] or ["zoo default"]
        label = ", ".join(names)
        if self.kind == "compare":
            sides = [self.options.get(side, {}) for side in ("control", "treatment")]
            label += " — " + " vs ".join(next((str(v) for v in side.values() if v), "spec")
                                         for side in sides)
        return label if self.kind == "run" else f"{self.kind}: {label}"


def flat_request_wire(specs: Mapping[str, str], models: Sequence[str],
                      frameworks: Sequence[str], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep's wire form of a request in the form before it: spec texts, zoo models,
    framework texts and overrides side by side (jobs stored then, and the HTTP API's older
    body). Empty fields are left out, as :meth:`~benchlab.harness.sweep.Sweep.to_wire` leaves them."""
    wire: dict[str, Any] = {
        "v": WIRE_VERSION, "specs": dict(specs), "models": list(models),
        "frameworks": [[c.name, dict(c.options)] for c in map(parse_framework, frameworks)],
        "overrides": dict(overrides)}
    return {k: v for k, v in wire.items() if v or k in ("v", "specs")}


@dataclass(frozen=True)
class JobSummary:
    """What a job process (``python -m benchlab.lab.execute``) tells its worker: its last line
    on stdout, one JSON object. A run job counts its results (``spooled``: kept in the
    worker's spool while the database was away, then stored); a compare or track job carries
    its ``report``; a job that could not start says why in ``error``."""

    run_uuid: str | None = None
    results: int = 0
    failed: int = 0
    spooled: int = 0
    report: Mapping[str, Any] | None = None
    error: str | None = None
    user_error: bool = False

    def line(self) -> str:
        """The summary as the job process prints it."""
        values = {k: v for k, v in self.__dict__.items() if v is not None and v is not False}
        return json.dumps(values, sort_keys=True, default=dict)

    @classmethod
    def read(cls, stdout: str) -> JobSummary | None:
        """The last summary line in a job process's output (``None``: it printed none, e.g.
        it was killed); lines that are not a summary (a runtime's own output) are skipped."""
        known = set(cls.__dataclass_fields__)
        for text in reversed(stdout.strip().splitlines()):
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict) and value and set(value) <= known:
                return cls(**value)
        return None

    def reason(self, kind: str) -> str:
        """The finished job's reason, as ``lab status`` and the pages show it."""
        if self.report is not None:
            return f"{kind} done, exit code {self.report.get('exit_code')}"
        reason = (f"{self.results} results, {self.failed} failed" if self.failed
                  else f"{self.results} results")
        if self.spooled:
            reason += (f" ({self.spooled} kept in the worker's spool while the database was "
                       "away, then stored)")
        return reason


@dataclass(frozen=True)
class LabJob:
    """One lab job as stored."""

    id: int
    submission: str
    request: LabRequest
    route_kind: RouteKind
    route: str
    device_id: str | None
    queue_job_id: int | None
    status: JobStatus
    reason: str
    run_uuid: str | None
    attempts: int
    submitted_by: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    report: Mapping[str, Any] | None = None
    """A compare or track job's report: ``text`` (Markdown or a table), ``json``, ``exit_code``."""

    @property
    def queue(self) -> str:
        """The procrastinate queue the job waits in."""
        return device_queue(self.route) if self.route_kind == "device" else pool_queue(self.route)

    @property
    def lock(self) -> str | None:
        """The procrastinate lock: the device's, for jobs bound to one device."""
        return device_queue(self.route) if self.route_kind == "device" else None

    def waiting_s(self, now: float | None = None) -> float:
        """How long it has waited (0 once started)."""
        if self.status != "waiting":
            return 0.0
        return max(0.0, (now or time.time()) - self.created_at)

    def stuck(self, now: float | None = None) -> bool:
        """Waiting for longer than :data:`STUCK_AFTER_S`."""
        return self.waiting_s(now) > STUCK_AFTER_S

    def to_json(self) -> dict[str, Any]:
        """The job as the JSON API shows it."""
        return {
            "id": self.id, "submission": self.submission, "label": self.request.describe(),
            "kind": self.request.kind, "route_kind": self.route_kind, "route": self.route,
            "device_id": self.device_id, "status": self.status, "reason": self.reason,
            "run_uuid": self.run_uuid, "attempts": self.attempts,
            "submitted_by": self.submitted_by, "created_at": self.created_at,
            "started_at": self.started_at, "finished_at": self.finished_at,
            "waiting_s": round(self.waiting_s(), 3), "stuck": self.stuck(),
            "report": None if self.report is None else dict(self.report),
        }


def _job(row: Any) -> LabJob:
    return LabJob(
        id=int(row.id), submission=row.submission, request=LabRequest.from_json(row.request_json),
        route_kind=row.route_kind, route=row.route, device_id=row.device_id,
        queue_job_id=row.queue_job_id, status=row.status, reason=row.reason,
        run_uuid=row.run_uuid, attempts=int(row.attempts), submitted_by=row.submitted_by,
        created_at=float(row.created_at),
        started_at=None if row.started_at is None else float(row.started_at),
        finished_at=None if row.finished_at is None else float(row.finished_at),
        report=None if row.report_json is None else json.loads(row.report_json),
    )


def route_problem(route_kind: str, route: str, devices: Sequence[Device]) -> str:
    """Why no device can take a job on this route now ("" when one can)."""
    if route_kind == "device":
        found = [d for d in devices if d.id == route]
        if not found:
            return f"device {route} is not registered"
        device = found[0]
        if device.quarantined:
            return f"device {route} is quarantined: {device.quarantine_reason}"
        if not device.alive:
            return f"device {route} is offline"
        return ""
    rule = PoolRule.parse(route)
    members = [d for d in devices if rule.matches(d.properties)]
    if not members:
        return f"no registered device matches pool {route}"
    usable = [d for d in members if d.alive and not d.quarantined]
    if not usable:
        return f"every device of pool {route} is offline or quarantined"
    return ""


def new_jobs(store: ResultStore, request: LabRequest, *, device: str | None = None,
             pool: str | None = None, fan_out: bool = True,
             submitted_by: str = "") -> list[LabJob]:
    """Record the jobs of one submission (not yet queued: :func:`benchlab.lab.queue.submit`).

    ``device`` binds one job to one device. ``pool`` with ``fan_out`` makes one job per device
    that matches the rule now (a benchmark across every phone of a kind); without ``fan_out``,
    or when no device matches yet, one job waits in the pool's queue for the first free match.
    """
    if (device is None) == (pool is None):
        raise UsageError("submit to exactly one of a device (--device) or a pool (--pool)")
    devices = list_devices(store)
    routes: list[tuple[str, str]]
    if device is not None:
        if not any(d.id == device for d in devices):
            known = ", ".join(d.id for d in devices) or "none"
            raise UsageError(f"no lab device {device!r} is registered (registered: {known})")
        routes = [("device", device)]
    else:
        rule = add_pool(store, pool or "")
        members = [d.id for d in devices if rule.matches(d.properties) and not d.quarantined]
        routes = ([("device", m) for m in members] if fan_out and members
                  else [("pool", rule.name)])
    submission = str(uuid.uuid4())
    now = time.time()
    ids = []
    with store.transaction("record lab jobs") as conn:
        for kind, route in routes:
            reason = route_problem(kind, route, devices) or "queued"
            inserted = conn.execute(lab_jobs.insert().values(
                submission=submission, request_json=request.to_json(), route_kind=kind,
                route=route, status="waiting", reason=reason, attempts=0,
                submitted_by=submitted_by, created_at=now,
            ))
            ids.append(int(inserted.inserted_primary_key[0]))
    return [get_job(store, job_id) for job_id in ids]


def set_job(store: ResultStore, job_id: int, **values: Any) -> None:
    """Update a job's columns (status, reason, device_id, run_uuid, times, attempts)."""
    with store.transaction("update a lab job") as conn:
        conn.execute(update(lab_jobs).where(lab_jobs.c.id == job_id).values(**values))


def get_job(store: ResultStore, job_id: int) -> LabJob:
    """One job; an unknown id is a :class:`UsageError`."""
    with store.connection("read a lab job") as conn:
        row = conn.execute(select(lab_jobs).where(lab_jobs.c.id == job_id)).first()
    if row is None:
        raise UsageError(f"no lab job {job_id}")
    return _job(row)


def list_jobs(store: ResultStore, *, status: str | None = None, device: str | None = None,
              submission: str | None = None, limit: int = 200) -> list[LabJob]:
    """Jobs, newest first, optionally only one status, device (route or assigned) or submission."""
    query = select(lab_jobs).order_by(lab_jobs.c.id.desc()).limit(limit)
    if status is not None:
        query = query.where(lab_jobs.c.status == status)
    if device is not None:
        query = query.where((lab_jobs.c.device_id == device)
                            | ((lab_jobs.c.route_kind == "device") & (lab_jobs.c.route == device)))
    if submission is not None:
        query = query.where(lab_jobs.c.submission == submission)
    with store.connection("list lab jobs") as conn:
        return [_job(row) for row in conn.execute(query)]


@dataclass(frozen=True)
class QueueRow:
    """Counts of one queue (a device or a pool) for the queue page."""

    queue: str
    counts: Mapping[str, int]
    oldest_waiting_at: float | None
    problem: str

    def to_json(self) -> dict[str, Any]:
        """The row as the JSON API shows it."""
        age = None if self.oldest_waiting_at is None else time.time() - self.oldest_waiting_at
        return {"queue": self.queue, "counts": dict(self.counts),
                "oldest_waiting_s": None if age is None else round(age, 3),
                "stuck": age is not None and age > STUCK_AFTER_S, "problem": self.problem}


def queue_summary(store: ResultStore) -> list[QueueRow]:
    """Per queue: jobs per status, the oldest waiting job's age and why nothing can take it."""
    with store.connection("summarise lab queues") as conn:
        rows = conn.execute(
            select(lab_jobs.c.route_kind, lab_jobs.c.route, lab_jobs.c.status,
                   func.count(), func.min(lab_jobs.c.created_at))
            .group_by(lab_jobs.c.route_kind, lab_jobs.c.route, lab_jobs.c.status)
        ).all()
    devices = list_devices(store)
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, route, status, count, oldest in rows:
        entry = table.setdefault((kind, route), {"counts": dict.fromkeys(JOB_STATUSES, 0),
                                                 "oldest": None})
        entry["counts"][status] = int(count)
        if status == "waiting":
            entry["oldest"] = float(oldest)
    out = []
    for (kind, route), entry in sorted(table.items()):
        problem = route_problem(kind, route, devices) if entry["counts"]["waiting"] else ""
        name = device_queue(route) if kind == "device" else pool_queue(route)
        out.append(QueueRow(name, entry["counts"], entry["oldest"], problem))
    return out
