"""The lab's link to procrastinate: opening a lab, its schema, submitting and cancelling jobs.

procrastinate is imported only here and in :mod:`benchlab.lab.worker`, so benchlab without the
``lab`` extra still imports. The queue's tables live in the results database beside the
store's; ``lab init`` applies procrastinate's schema once and records its version in ``meta``.

Routing: a job bound to a device waits in queue ``device:<id>`` with lock ``device:<id>``
(the database refuses two running jobs under one lock); a pool job waits in ``pool:<rule>``
without a lock and the worker that takes it holds the device's advisory lock instead (see
:mod:`benchlab.lab.worker`). No job is ever scheduled in the future: procrastinate 3.10 lets a
future job on a lock block the ready ones (procrastinate #1599), so failed jobs are re-deferred
at once, never retried with a backoff.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import URL, inspect, make_url, select
from sqlalchemy.exc import ArgumentError

from benchlab.errors import StoreError, UsageError
from benchlab.lab.jobs import LabJob, LabRequest, get_job, new_jobs, set_job
from benchlab.lab.tables import LAB_SCHEMA_VERSION, create_lab_tables
from benchlab.store import ResultStore, open_store
from benchlab.store.tables import meta

__all__ = [
    "MAINTENANCE_QUEUE",
    "RUN_TASK",
    "Lab",
    "cancel_job",
    "conninfo",
    "init_lab",
    "make_app",
    "open_lab",
    "requeue",
    "submit",
]

RUN_TASK = "benchlab.lab.run_job"
"""The procrastinate task name of a benchmark job; its one argument is ``lab_job``."""

REQUEUE_TASK = "benchlab.lab.requeue_stalled"
MAINTENANCE_QUEUE = "lab:maintenance"
_SCHEMA_KEY = "procrastinate_schema"
_LAB_SCHEMA_KEY = "lab_schema_version"


def _lab_url(url: str) -> URL:
    """A lab database URL, parsed; anything but PostgreSQL is a :class:`UsageError`."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        parsed = None
    if parsed is None or parsed.get_backend_name() != "postgresql":
        raise UsageError(
            f"a lab needs PostgreSQL (procrastinate's queue lives there), not {url!r}; "
            "give postgresql://user@host:port/database"
        )
    return parsed


def conninfo(url: str) -> str:
    """The libpq connection string of a lab database URL (any SQLAlchemy driver suffix)."""
    return _lab_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def store_url(url: str) -> str:
    """The SQLAlchemy URL for the store side of a lab URL (psycopg 3, which the lab installs)."""
    parsed = _lab_url(url)
    if parsed.get_driver_name() in ("", None) or parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def make_app(url: str) -> Any:
    """A procrastinate App on the lab database (not opened); no tasks are registered."""
    import procrastinate

    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo(url)))


@dataclass
class Lab:
    """An open lab: the results store (with the lab's tables) and the queue's App."""

    url: str
    store: ResultStore
    app: Any

    def close(self) -> None:
        """Close the queue's connections and the store."""
        with contextlib.suppress(Exception):
            self.app.close()
        self.store.close()


def _schema_applied(store: ResultStore) -> str | None:
    with store.connection("read the lab's schema version") as conn:
        if not inspect(conn).has_table("procrastinate_jobs"):
            return None
        return conn.execute(select(meta.c.value).where(meta.c.key == _SCHEMA_KEY)).scalar()


def init_lab(url: str) -> str:
    """Create the store's tables, the lab's and procrastinate's schema; idempotent.

    Returns a sentence saying what was done.
    """
    import procrastinate

    with contextlib.closing(open_store(store_url(url))) as store:
        with store.transaction("create the lab's tables") as conn:
            create_lab_tables(conn)
            recorded = conn.execute(select(meta.c.value).where(meta.c.key == _LAB_SCHEMA_KEY))
            if recorded.scalar() is None:
                conn.execute(meta.insert().values(key=_LAB_SCHEMA_KEY,
                                                  value=str(LAB_SCHEMA_VERSION)))
        version = _schema_applied(store)
        if version is not None:
            return f"lab database ready (procrastinate schema {version} already applied)"
        app = make_app(url)
        with app.open():
            app.schema_manager.apply_schema()
        with store.transaction("record the lab's schema version") as conn:
            conn.execute(meta.insert().values(key=_SCHEMA_KEY, value=procrastinate.__version__))
        return f"lab database initialised (procrastinate schema {procrastinate.__version__})"


@contextlib.contextmanager
def open_lab(url: str) -> Iterator[Lab]:
    """Open an initialised lab for synchronous use (CLI, server); closes on exit."""
    store = open_store(store_url(url))
    try:
        if _schema_applied(store) is None:
            raise StoreError(f"the lab database {store.url} is not initialised: run "
                             "'benchlab lab init --db URL' first")
        app = make_app(url)
        app.open()
    except BaseException:
        store.close()
        raise
    lab = Lab(url, store, app)
    try:
        yield lab
    finally:
        lab.close()


def _defer(app: Any, job: LabJob) -> int:
    return int(app.configure_task(name=RUN_TASK, queue=job.queue, lock=job.lock)
               .defer(lab_job=job.id))


def submit(lab: Lab, request: LabRequest, *, device: str | None = None, pool: str | None = None,
           fan_out: bool = True, submitted_by: str = "") -> list[LabJob]:
    """Record and queue a submission; see :func:`benchlab.lab.jobs.new_jobs` for routing."""
    jobs = new_jobs(lab.store, request, device=device, pool=pool, fan_out=fan_out,
                    submitted_by=submitted_by)
    for job in jobs:
        set_job(lab.store, job.id, queue_job_id=_defer(lab.app, job))
    return [get_job(lab.store, job.id) for job in jobs]


def requeue(lab: Lab, job: LabJob, *, route_kind: str | None = None, route: str | None = None,
            reason: str, new_run: bool = False) -> LabJob:
    """Put a job back in a queue at once (a new procrastinate job), optionally re-routed.

    ``new_run`` makes the next attempt start a run of its own (the device changed, so the
    failed attempt's run stays as it is) instead of resuming the job's run.
    """
    moved = job.__class__(**{**job.__dict__, "route_kind": route_kind or job.route_kind,
                             "route": route or job.route})
    extra = {"run_uuid": None} if new_run else {}
    set_job(lab.store, job.id, status="waiting", reason=reason, route_kind=moved.route_kind,
            route=moved.route, device_id=None, queue_job_id=_defer(lab.app, moved), **extra)
    return get_job(lab.store, job.id)


def cancel_job(lab: Lab, job_id: int, *, who: str) -> bool:
    """Cancel a waiting job; a running or finished one is left alone (False).

    An unknown job is a :class:`UsageError`.
    """
    job = get_job(lab.store, job_id)
    if job.status != "waiting":
        return False
    if job.queue_job_id is not None and not lab.app.job_manager.cancel_job_by_id(
            job.queue_job_id, delete_job=False):
        return False  # a worker took it a moment ago
    set_job(lab.store, job_id, status="cancelled", reason=f"cancelled by {who}")
    return True
