"""Conversions between schema objects and table rows."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, Select, case, func, select

from benchlab.errors import StoreError
from benchlab.schema.result import Result, Sample, Status
from benchlab.store.tables import results, runs, samples

__all__ = [
    "build_result",
    "clean_text",
    "db_float",
    "dumps",
    "load_samples",
    "now",
    "result_row",
    "run_counts_query",
    "write_samples",
]

_SAMPLE_BATCH = 10_000
_ID_BATCH = 500
_FETCH_ROWS = 10_000


def now() -> str:
    """The current UTC time as ISO-8601 text, the store's timestamp format."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def dumps(value: Any) -> str:
    """JSON text for a column, tolerant of values JSON does not know."""
    # default=str: an odd object in environment/details (a Path, a version object) must not
    # cost a finished measurement; it is kept as its text.
    return json.dumps(value, default=str)


def clean_text(value: str | None) -> str | None:
    """Text any backend accepts."""
    # PostgreSQL text cannot hold NUL, and a crashing runtime's stderr sometimes does.
    return None if value is None else value.replace("\x00", "\ufffd")


def db_float(value: float) -> float | None:
    """A sample value as stored: a double, NULL for NaN."""
    number = float(value)
    # SQLite stores NaN as NULL; doing the same on every backend keeps them alike.
    return None if math.isnan(number) else number


def run_counts_query() -> Select[Any]:
    """Every run with its counts of ok and failed results (``ok_count``, ``failed_count``)."""
    is_ok = results.c.status == Status.OK.value
    counts = (
        select(
            results.c.run_id,
            func.sum(case((is_ok, 1), else_=0)).label("ok_count"),
            func.sum(case((is_ok, 0), else_=1)).label("failed_count"),
        )
        .group_by(results.c.run_id)
        .subquery()
    )
    return select(
        runs,
        func.coalesce(counts.c.ok_count, 0).label("ok_count"),
        func.coalesce(counts.c.failed_count, 0).label("failed_count"),
    ).select_from(runs.outerjoin(counts, counts.c.run_id == runs.c.id))


def result_row(result: Result) -> dict[str, Any]:
    """The ``results`` row of a result, without ``run_id``."""
    identity = result.identity
    return {
        "job_key": identity.key,
        "model_name": identity.model_name,
        "test_identifier": identity.test_identifier,
        "framework": identity.framework,
        "target": identity.target,
        "device": identity.device,
        "variant": identity.variant,
        "status": Status(result.status).value,
        "error": clean_text(result.error),
        "stderr_tail": clean_text(result.stderr_tail),
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "identity_json": dumps(identity.to_dict()),
        "environment_json": dumps(dict(result.environment)),
        "details_json": dumps(dict(result.details)),
        "summaries_json": dumps({k: v.to_dict() for k, v in result.summaries.items()}),
        "schema_version": int(result.schema_version),
    }


def write_samples(conn: Connection, result_id: int, items: Iterable[Sample]) -> None:
    """Insert a result's samples in bulk, by the fastest path the driver offers."""
    rows = (
        (
            result_id,
            seq,
            sample.metric,
            sample.type,
            sample.unit,
            int(sample.repetition),
            int(sample.index),
            db_float(sample.value),
        )
        for seq, sample in enumerate(items)
    )
    dialect = conn.dialect
    for batch in _batched(rows, _SAMPLE_BATCH):
        if dialect.name == "postgresql" and dialect.driver == "psycopg2":
            # Parameter interpolation costs psycopg2 seconds per 100k rows; COPY does not.
            _copy_rows(conn, batch)
        elif dialect.name == "sqlite":
            conn.exec_driver_sql(_SQLITE_INSERT, batch)
        else:
            conn.execute(samples.insert(), [dict(zip(_SAMPLE_COLUMNS, row)) for row in batch])


_SAMPLE_COLUMNS = ("result_id", "seq", "metric", "type", "unit", "repetition", "idx", "value")
_SQLITE_INSERT = (
    f"INSERT INTO samples ({', '.join(_SAMPLE_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _SAMPLE_COLUMNS)})"
)
_PG_NULL = "\\N"
_PG_COPY = (
    f"COPY samples ({', '.join(_SAMPLE_COLUMNS)}) FROM STDIN "
    "WITH (FORMAT csv, NULL '\\N', FORCE_NOT_NULL (metric, type, unit))"
)


def _batched(rows: Iterable[tuple[Any, ...]], size: int) -> Iterator[list[tuple[Any, ...]]]:
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _copy_rows(conn: Connection, batch: list[tuple[Any, ...]]) -> None:
    buffer = io.StringIO()
    # Only the value column can be NULL (NaN); it is spelled \N, which no float's repr is,
    # and FORCE_NOT_NULL keeps a text column that happens to read \N from becoming NULL.
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(row if row[-1] is not None else (*row[:-1], _PG_NULL) for row in batch)
    buffer.seek(0)
    cursor = conn.connection.cursor()
    try:
        cursor.copy_expert(_PG_COPY, buffer)
    except conn.dialect.loaded_dbapi.Error as exc:
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"could not store samples: {first_line}") from exc
    finally:
        cursor.close()


def load_samples(conn: Connection, result_ids: list[int]) -> dict[int, list[Sample]]:
    """The samples of the given results, each result's in the order they were written."""
    loaded: dict[int, list[Sample]] = {}
    nan = math.nan
    for start in range(0, len(result_ids), _ID_BATCH):
        chunk = result_ids[start : start + _ID_BATCH]
        query = (
            select(
                samples.c.result_id,
                samples.c.metric,
                samples.c.value,
                samples.c.unit,
                samples.c.type,
                samples.c.repetition,
                samples.c.idx,
            )
            .where(samples.c.result_id.in_(chunk))
            .order_by(samples.c.result_id, samples.c.seq)
        )
        current_id = None
        bucket: list[Sample] = []
        # This loop runs once per sample: fetching in partitions (fetchmany) and unpacking
        # tuples avoids a fetchone() and seven attribute lookups per row, and grouping relies
        # on the ORDER BY instead of a dict lookup per row.
        for part in conn.execute(query).partitions(_FETCH_ROWS):
            for result_id, metric, value, unit, type_, repetition, idx in part:
                if result_id != current_id:
                    current_id = result_id
                    bucket = loaded.setdefault(result_id, [])
                bucket.append(
                    Sample(
                        metric=metric,
                        value=nan if value is None else float(value),
                        unit=unit,
                        type=type_,
                        repetition=repetition,
                        index=idx,
                    )
                )
    return loaded


def build_result(row: Row[Any], result_samples: Iterable[Sample]) -> Result:
    """A :class:`Result` from its ``results`` row and its samples."""
    data = {
        "schema_version": row.schema_version,
        "identity": json.loads(row.identity_json),
        "status": row.status,
        "error": row.error,
        "stderr_tail": row.stderr_tail,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "environment": json.loads(row.environment_json),
        "details": json.loads(row.details_json),
        "summaries": json.loads(row.summaries_json),
    }
    try:
        built = Result.from_dict(data)
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(f"stored result {row.id} cannot be read: {exc}") from exc
    # Samples come already built from their own table rather than through from_dict.
    return replace(built, samples=tuple(result_samples))
