"""The results store: runs and their results in SQLite (default) or PostgreSQL.

A *run* is one invocation of a sweep; it owns the results of its jobs. Each result is written,
with all its samples, in one transaction that is committed before :meth:`ResultStore.add_result`
returns: a process killed afterwards loses nothing, one killed during it leaves nothing
half-written, and ``run --resume`` can trust :meth:`ResultStore.finished_job_keys`. The writes
are here; the queries are :class:`~benchlab.store.reader.StoreReader`'s, which ResultStore extends.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
import contextlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, delete, select, update
from sqlalchemy.exc import IntegrityError

from benchlab.errors import StoreError, UsageError
from benchlab.schema.result import Result, Status
from benchlab.store.records import RunRecord, RunRef, RunStatus
from benchlab.store.engine import WRITE_OPTION, create_store_engine, resolve_url, store_errors
from benchlab.store.reader import StoreReader
from benchlab.store.rows import now, result_row, write_samples
from benchlab.store.tables import (
    MIGRATIONS,
    STORE_SCHEMA_VERSION,
    Migration,
    ensure_schema,
    lock_for_setup,
    results,
    runs,
    samples,
)

__all__ = ["ResultStore", "open_store", "using_store"]


_T = TypeVar("_T")


def open_store(url_or_path: str | Path | None = None) -> ResultStore:
    """Open (creating or migrating if needed) the results store.

    ``None`` opens the per-user SQLite file (see :func:`default_store_path`); a path opens that
    SQLite file; anything with ``://`` is an SQLAlchemy URL used as it is (``sqlite:///...``,
    ``postgresql://...``). Every failure (bad URL, unreachable server, unwritable path, a store
    from a newer benchlab) raises :class:`StoreError` with a message meant for a person.
    """
    return _open(url_or_path)


@contextmanager
def using_store(db: str | Path | ResultStore | None) -> Iterator[ResultStore]:
    """The store ``db`` names, opened for the block and closed after it; an open
    :class:`ResultStore` is used as it is and left open (its owner closes it)."""
    if isinstance(db, ResultStore):
        yield db
        return
    store = open_store(db)
    try:
        yield store
    finally:
        store.close()


def _open(
    url_or_path: str | Path | None,
    *,
    target_version: int = STORE_SCHEMA_VERSION,
    migrations: Mapping[int, Migration] = MIGRATIONS,
) -> ResultStore:
    url = resolve_url(url_or_path)
    shown = url.render_as_string(hide_password=True)
    engine = create_store_engine(url, shown)
    try:
        with store_errors(f"open the results store {shown}"):
            with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
                lock_for_setup(conn)
                ensure_schema(conn, target_version=target_version, migrations=migrations)
    except BaseException:
        engine.dispose()
        raise
    return ResultStore(engine)


class ResultStore(StoreReader):
    """Runs and results in one database; obtain one with :func:`open_store`. The queries
    are :class:`StoreReader`'s; the writes are here.

    Safe to share between threads; several processes may write the same store at once.
    """

    def __init__(self, engine: Engine) -> None:
        """Wrap an engine whose database :func:`open_store` has already set up."""
        super().__init__(engine)
        self._writer = engine.execution_options(**{WRITE_OPTION: True})

    @contextmanager
    def _write(self, action: str) -> Iterator[Connection]:
        with store_errors(action), self._writer.begin() as conn:
            yield conn

    def transaction(self, action: str) -> contextlib.AbstractContextManager[Connection]:
        """A committed write transaction on the store's database (for the lab's tables).

        ``action`` names what is being done, for the :class:`StoreError` raised on failure.
        """
        return self._write(action)

    # Runs

    def start_run(self, *, fingerprint: str, description: str = "", host: str = "") -> RunRecord:
        """Record a new run in state ``running``; ``fingerprint`` identifies its planned jobs."""
        values = _running_run_row(str(uuid.uuid4()), fingerprint, description, host)
        with self._write("start a run") as conn:
            run_id = conn.execute(runs.insert().values(**values)).inserted_primary_key[0]
            return self._load_run(conn, int(run_id))

    def ensure_run(self, *, run_uuid: str, fingerprint: str, description: str = "",
                   host: str = "", created_at: str | None = None) -> RunRecord:
        """The run with this UUID, created in state ``running`` if the store lacks it.

        A lab uses it to keep a remote run under the UUID it has where it ran, so a result
        posted twice, or from a resumed run, lands in the same run. An existing run is
        returned unchanged. Two writers racing to create it both get the one row.
        """
        try:
            canonical = str(uuid.UUID(run_uuid))
        except (ValueError, TypeError, AttributeError):
            raise UsageError(f"{run_uuid!r} is not a run UUID") from None
        values = _running_run_row(canonical, fingerprint, description, host, created_at)

        def record() -> RunRecord:
            with self._write("record a run") as conn:
                found = conn.execute(
                    select(runs.c.id).where(runs.c.run_uuid == canonical)).scalar()
                if found is None:
                    found = conn.execute(runs.insert().values(**values)).inserted_primary_key[0]
                return self._load_run(conn, int(found))

        # Another writer may insert the same UUID between our read and our insert.
        return _again_after_a_race(record)

    def finish_run(self, run_id: RunRef, status: RunStatus | str = RunStatus.FINISHED) -> None:
        """Close a run as ``finished`` (or ``interrupted``) and stamp its end time."""
        closing = {RunStatus.FINISHED.value, RunStatus.INTERRUPTED.value}
        if str(status) not in closing:
            raise UsageError(f"a run ends as 'finished' or 'interrupted', not {status!r}")
        final = RunStatus(str(status))
        with self._write("finish a run") as conn:
            pk = self._resolve(conn, run_id)
            conn.execute(
                update(runs).where(runs.c.id == pk).values(status=final.value, finished_at=now())
            )

    def mark_interrupted(self, run_id: RunRef) -> None:
        """Mark a ``running`` run as ``interrupted``; a run already closed is left as it is."""
        with self._write("mark a run interrupted") as conn:
            pk = self._resolve(conn, run_id)
            conn.execute(
                update(runs)
                .where(runs.c.id == pk, runs.c.status == RunStatus.RUNNING.value)
                .values(status=RunStatus.INTERRUPTED.value, finished_at=now())
            )

    def resume_run(self, run_id: RunRef) -> RunRecord:
        """Put a run back in state ``running`` before its remaining jobs are run."""
        with self._write("resume a run") as conn:
            pk = self._resolve(conn, run_id)
            conn.execute(
                update(runs)
                .where(runs.c.id == pk)
                .values(status=RunStatus.RUNNING.value, finished_at=None)
            )
            return self._load_run(conn, pk)

    # Results

    def add_result(self, run_id: RunRef, result: Result) -> int:
        """Store one result with all its samples in one committed transaction; return its id.

        A run holds at most one result per job key. Adding a key the run already has keeps
        the stored result and returns its id (a re-offered job is a no-op), except that an ok
        result replaces a failed one: that is a retried job which now succeeded.
        """
        row = result_row(result)

        def store() -> int:
            with self._write("store a result") as conn:
                return self._insert_result(conn, self._resolve(conn, run_id), row, result)

        # Two PostgreSQL writers may race on the same job key; the rules above then apply to
        # the winner's row.
        return _again_after_a_race(store)

    def _insert_result(
        self, conn: Connection, run_pk: int, row: dict[str, Any], result: Result
    ) -> int:
        existing = conn.execute(
            select(results.c.id, results.c.status).where(
                results.c.run_id == run_pk, results.c.job_key == row["job_key"]
            )
        ).first()
        if existing is not None:
            if existing.status == Status.OK.value or row["status"] != Status.OK.value:
                return int(existing.id)
            conn.execute(delete(samples).where(samples.c.result_id == existing.id))
            conn.execute(delete(results).where(results.c.id == existing.id))
        inserted = conn.execute(results.insert().values(run_id=run_pk, **row))
        result_id = int(inserted.inserted_primary_key[0])
        write_samples(conn, result_id, result.samples)
        return result_id


def _running_run_row(run_uuid: str, fingerprint: str, description: str, host: str,
                     created_at: str | None = None) -> dict[str, Any]:
    """The ``runs`` row of a run just opened: ``running``, not finished, created now unless
    ``created_at`` says when it was created elsewhere."""
    return {
        "run_uuid": run_uuid,
        "created_at": created_at or now(),
        "finished_at": None,
        "status": RunStatus.RUNNING.value,
        "sweep_fingerprint": fingerprint,
        "description": description,
        "host": host,
    }


def _again_after_a_race(write: Callable[[], _T]) -> _T:
    """``write()``, and once more when it lost a race on a unique key to another writer (an
    ``IntegrityError`` under the :class:`StoreError`): the second attempt reads the winner's
    row instead of inserting its own."""
    try:
        return write()
    except StoreError as exc:
        if not isinstance(exc.__cause__, IntegrityError):
            raise
    return write()
