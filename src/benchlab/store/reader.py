"""The reading half of the results store: the connection it holds and every query of it.

:class:`StoreReader` owns the engine and answers the questions asked of runs and results;
:class:`benchlab.store.store.ResultStore` extends it with the writes (runs opened and closed,
results added), each in its own committed transaction.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

from sqlalchemy import Connection, Engine, Row, func, select

from benchlab.errors import UsageError
from benchlab.schema.result import LATENCY_KEY, DetailKey, Result, Status, Summary
from benchlab.store.engine import store_errors
from benchlab.store.records import HistoryPoint, RunRecord, RunRef, RunStatus
from benchlab.store.rows import build_result, load_samples, run_counts_query
from benchlab.store.tables import results, runs

__all__ = ["StoreReader"]


# Newest first, so that a limit keeps the latest points.
_HISTORY = select(
    results.c.id, results.c.run_id, results.c.job_key, results.c.test_identifier,
    results.c.target, results.c.device, results.c.started_at, results.c.summaries_json,
    results.c.details_json,
).where(results.c.status == Status.OK.value).order_by(
    results.c.started_at.desc(), results.c.id.desc())


def _points(rows: Iterable[Any], metric_key: str, limit: int) -> list[HistoryPoint]:
    """The first ``limit`` rows of a :data:`_HISTORY` query that carry ``metric_key``."""
    points: list[HistoryPoint] = []
    for row in rows:
        if len(points) >= limit:
            break
        summary = json.loads(row.summaries_json).get(metric_key)
        if summary is not None:
            points.append(HistoryPoint(
                started_at=row.started_at, run_id=row.run_id, result_id=row.id,
                job_key=row.job_key, test_identifier=row.test_identifier, target=row.target,
                device=row.device, summary=Summary.from_dict(summary),
                runtime_version=json.loads(row.details_json).get(DetailKey.RUNTIME_VERSION),
            ))
    return points


class StoreReader:
    """Runs and results read from one database; :class:`~benchlab.store.store.ResultStore`
    is the store that also writes them.

    Safe to share between threads.
    """

    def __init__(self, engine: Engine) -> None:
        """Wrap an engine whose database :func:`~benchlab.store.store.open_store` has already
        set up."""
        self._engine = engine

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for a store that wraps this one's database)."""
        return self._engine

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self._engine.url.render_as_string(hide_password=True)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    def __repr__(self) -> str:
        """The store's URL, password hidden."""
        return f"{type(self).__name__}({self.url!r})"

    def __enter__(self) -> Self:
        """The store itself; it is closed when the block ends."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()

    def close(self) -> None:
        """Release every connection; the store must not be used afterwards."""
        self._engine.dispose()

    @contextmanager
    def _read(self, action: str) -> Iterator[Connection]:
        with store_errors(action), self._engine.connect() as conn:
            yield conn

    def connection(self, action: str) -> contextlib.AbstractContextManager[Connection]:
        """A read connection on the store's database (for the lab's tables)."""
        return self._read(action)

    # Runs

    def find_resumable_run(
        self, fingerprint: str | None = None, run_id: RunRef | None = None
    ) -> RunRecord | None:
        """The run ``run --resume`` should continue, or ``None`` when there is none.

        With ``run_id``, that run whatever its state (:class:`UsageError` if it does not
        exist); the caller decides what a fingerprint mismatch means. Otherwise the most
        recent run still ``running`` or ``interrupted``, restricted to ``fingerprint`` when
        given. A ``running`` run may belong to a live process: the store cannot tell.
        """
        with self._read("look up a resumable run") as conn:
            if run_id is not None:
                return self._load_run(conn, self._resolve(conn, run_id))
            query = select(runs.c.id).where(
                runs.c.status.in_([RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value])
            )
            if fingerprint is not None:
                query = query.where(runs.c.sweep_fingerprint == fingerprint)
            found = conn.execute(query.order_by(runs.c.id.desc()).limit(1)).scalar()
            return None if found is None else self._load_run(conn, int(found))

    def latest_run(self, fingerprint: str) -> RunRecord | None:
        """The most recent run with this fingerprint, whatever its state (None if none)."""
        with self._read("look up a run") as conn:
            found = conn.execute(
                select(runs.c.id).where(runs.c.sweep_fingerprint == fingerprint)
                .order_by(runs.c.id.desc()).limit(1)
            ).scalar()
            return None if found is None else self._load_run(conn, int(found))

    def get_run(self, run_ref: RunRef | None = None) -> RunRecord:
        """One run by id, UUID prefix, or ``"latest"``/``None`` for the most recent one.

        Raises :class:`UsageError` when there is no such run.
        """
        with self._read("read a run") as conn:
            return self._load_run(conn, self._resolve(conn, run_ref))

    def list_runs(self, limit: int = 20) -> list[RunRecord]:
        """The most recent runs first, each with its counts of ok and failed results."""
        with self._read("list runs") as conn:
            query = run_counts_query().order_by(runs.c.id.desc()).limit(max(0, limit))
            return [_run_record(row) for row in conn.execute(query)]

    # Results

    def finished_job_keys(
        self, run_id: RunRef, *, statuses: Iterable[Status | str] | None = None
    ) -> set[str]:
        """Job keys the run already holds a result for, whatever its status by default.

        Pass ``statuses=[Status.OK]`` to get only the successful ones (to retry failures).
        """
        with self._read("read finished jobs") as conn:
            query = select(results.c.job_key).where(
                results.c.run_id == self._resolve(conn, run_id)
            )
            if statuses is not None:
                query = query.where(results.c.status.in_([Status(s).value for s in statuses]))
            return set(conn.execute(query).scalars())

    def results(
        self,
        run_id: RunRef | None = None,
        *,
        model: str | None = None,
        framework: str | None = None,
        status: Status | str | None = None,
        with_samples: bool = True,
    ) -> list[Result]:
        """Stored results, oldest first, rebuilt as :class:`Result` objects.

        ``run_id=None`` searches every run. Without ``with_samples`` the results carry no
        samples (summaries are still there), which is much faster for large runs.
        """
        with self._read("read results") as conn:
            query = select(results).order_by(results.c.id)
            if run_id is not None:
                query = query.where(results.c.run_id == self._resolve(conn, run_id))
            if model is not None:
                query = query.where(results.c.model_name == model)
            if framework is not None:
                query = query.where(results.c.framework == framework)
            if status is not None:
                query = query.where(results.c.status == Status(status).value)
            rows = list(conn.execute(query))
            loaded = load_samples(conn, [row.id for row in rows]) if with_samples else {}
        return [build_result(row, loaded.get(row.id, ())) for row in rows]

    def history(
        self,
        model_name: str,
        framework: str,
        *,
        target: str | None = None,
        test_identifier: str | None = None,
        metric_key: str = LATENCY_KEY,
        limit: int = 100,
    ) -> list[HistoryPoint]:
        """The last ``limit`` summaries of one metric for a model on a framework, oldest first.

        Only ok results that carry ``metric_key`` count. This is the query behind a "history
        of one model on one backend" view (p50 over time); each point carries the runtime
        version it was measured with, so a step that came with a release shows as such.
        """
        query = _HISTORY.where(results.c.model_name == model_name,
                               results.c.framework == framework)
        if target is not None:
            query = query.where(results.c.target == target)
        if test_identifier is not None:
            query = query.where(results.c.test_identifier == test_identifier)
        with self._read("read history") as conn:
            points = _points(conn.execute(query), metric_key, limit)
        points.reverse()
        return points

    def previous_points(
        self, later: Iterable[Result], metric_key: str = LATENCY_KEY
    ) -> dict[str, HistoryPoint]:
        """For each result of ``later``, the last ok measurement of the same job before it.

        Keyed by job key; jobs measured for the first time are left out. Reports use it to say
        what changed since the previous run of a cell (its runtime version, its median).
        """
        found: dict[str, HistoryPoint] = {}
        with self._read("read history") as conn:
            for result in later:
                query = _HISTORY.where(results.c.job_key == result.identity.key,
                                       results.c.started_at < result.started_at)
                found.update((p.job_key, p) for p in _points(conn.execute(query), metric_key, 1))
        return found

    # Helpers

    def _resolve(self, conn: Connection, ref: RunRef | None) -> int:
        if isinstance(ref, RunRecord):
            ref = ref.id
        if ref is None or ref == "latest":
            latest = conn.execute(select(func.max(runs.c.id))).scalar()
            if latest is None:
                raise UsageError("the results store holds no runs yet")
            return int(latest)
        # isdigit() alone accepts "²", which int() refuses: ASCII digits only.
        if isinstance(ref, int) or (ref.isascii() and ref.isdigit()):
            found = conn.execute(select(runs.c.id).where(runs.c.id == int(ref))).scalar()
            if found is not None:
                return int(found)
            if isinstance(ref, int):
                raise UsageError(f"no run with id {ref} in the results store")
        prefix = ref.strip().lower()
        if not prefix or any(c not in "0123456789abcdef-" for c in prefix):
            raise UsageError(f"no run {ref!r}: give a run id, a run UUID prefix or 'latest'")
        matches = list(
            conn.execute(
                select(runs.c.id).where(runs.c.run_uuid.startswith(prefix)).limit(2)
            ).scalars()
        )
        if not matches:
            raise UsageError(f"no run with id or UUID prefix {ref!r} in the results store")
        if len(matches) > 1:
            raise UsageError(f"UUID prefix {ref!r} matches several runs; give more of it")
        return int(matches[0])

    def _load_run(self, conn: Connection, run_pk: int) -> RunRecord:
        row = conn.execute(run_counts_query().where(runs.c.id == run_pk)).one()
        return _run_record(row)


def _run_record(row: Row[Any]) -> RunRecord:
    return RunRecord(
        id=int(row.id),
        uuid=row.run_uuid,
        created_at=row.created_at,
        finished_at=row.finished_at,
        status=RunStatus(row.status),
        fingerprint=row.sweep_fingerprint,
        description=row.description,
        host=row.host,
        ok_count=int(row.ok_count),
        failed_count=int(row.failed_count),
    )
