"""The store's table layout, its version, and the migrations between versions.

``STORE_SCHEMA_VERSION`` versions the *tables*; it is separate from
:data:`benchlab.schema.result.SCHEMA_VERSION`, which versions the result JSON. Both are recorded in
``meta``, and every ``results`` row also keeps the result schema version it was written with.

History of ``STORE_SCHEMA_VERSION``:

1. First layout: ``meta``, ``runs``, ``results``, ``samples``.
2. Once the lab's tables; the lab now owns and creates them (:mod:`benchlab.lab.tables`), so
   going from 1 to 2 changes nothing here. Stores made at version 2 before that may hold the
   lab's tables; the core store never reads them.

To change the layout: bump ``STORE_SCHEMA_VERSION``, change the tables below to the new shape
(fresh stores are created from them directly), and add to ``MIGRATIONS`` a function keyed by the
*old* version that brings an existing store from that version to the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from sqlalchemy import (
    Column,
    Connection,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    inspect,
    select,
    text,
)

from benchlab.errors import StoreError
from benchlab.schema.result import SCHEMA_VERSION

__all__ = [
    "MIGRATIONS",
    "STORE_SCHEMA_VERSION",
    "Migration",
    "ensure_schema",
    "lock_for_setup",
    "meta",
    "metadata",
    "results",
    "runs",
    "samples",
]

STORE_SCHEMA_VERSION = 2

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_uuid", String(36), nullable=False, unique=True),
    # Timestamps are ISO-8601 UTC text: they sort correctly, read back exactly, and mean the
    # same on SQLite and PostgreSQL.
    Column("created_at", String(40), nullable=False),
    Column("finished_at", String(40), nullable=True),
    Column("status", String(16), nullable=False),
    Column("sweep_fingerprint", String(128), nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("host", Text, nullable=False, default=""),
    Index("ix_runs_fingerprint_status", "sweep_fingerprint", "status"),
    # Without AUTOINCREMENT SQLite reuses the id of a deleted row; an id once given out (in a
    # report, an export) must keep meaning the same run or result.
    sqlite_autoincrement=True,
)

results = Table(
    "results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("job_key", String(64), nullable=False),
    Column("model_name", Text, nullable=False),
    Column("test_identifier", Text, nullable=False),
    Column("framework", Text, nullable=False),
    Column("target", Text, nullable=False),
    Column("device", Text, nullable=False),
    Column("variant", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("error", Text, nullable=True),
    Column("stderr_tail", Text, nullable=True),
    Column("started_at", String(40), nullable=False),
    Column("finished_at", String(40), nullable=False),
    Column("identity_json", Text, nullable=False),
    Column("environment_json", Text, nullable=False),
    Column("details_json", Text, nullable=False),
    Column("summaries_json", Text, nullable=False),
    Column("schema_version", Integer, nullable=False),
    # A resumed run re-offers jobs it may already hold; the database itself refuses a duplicate.
    UniqueConstraint("run_id", "job_key", name="uq_results_run_job"),
    Index("ix_results_history", "model_name", "framework", "target", "started_at"),
    sqlite_autoincrement=True,
)

samples = Table(
    "samples",
    metadata,
    Column(
        "result_id",
        Integer,
        ForeignKey("results.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    # Position in Result.samples, so a result reads back in exactly the order it was written
    # (repetition/idx alone do not order samples of different metrics).
    Column("seq", Integer, primary_key=True),
    Column("metric", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("unit", Text, nullable=False),
    Column("repetition", Integer, nullable=False),
    Column("idx", Integer, nullable=False),
    # DOUBLE PRECISION everywhere: a latency of 1234.5678 us must read back as exactly that.
    # Nullable only because SQLite stores NaN as NULL; the store maps NULL back to NaN.
    Column("value", Double(), nullable=True),
)
# The primary key (result_id, seq) already indexes samples by result.

Migration = Callable[[Connection], None]
"""Brings a store from version ``v`` (its key in ``MIGRATIONS``) to ``v + 1``, in place."""



def _nothing_since_the_lab_moved(conn: Connection) -> None:
    """Version 2 added the lab's tables, which :mod:`benchlab.lab.tables` now creates."""


MIGRATIONS: Mapping[int, Migration] = MappingProxyType({1: _nothing_since_the_lab_moved})

_STORE_VERSION_KEY = "store_schema_version"
_RESULT_VERSION_KEY = "result_schema_version"
_OWN_TABLES = ("runs", "results", "samples")


def ensure_schema(
    conn: Connection,
    *,
    target_version: int = STORE_SCHEMA_VERSION,
    migrations: Mapping[int, Migration] = MIGRATIONS,
) -> int:
    """Create the tables of a new store, or migrate an older one; return the version found.

    Runs inside the caller's transaction, so a failed migration leaves the store as it was.
    Raises :class:`StoreError` for a store written by a newer benchlab, for a version with no
    migration path, and for a database that holds benchlab's tables without a ``meta`` table.
    ``target_version`` and ``migrations`` exist so the mechanism can be exercised in tests.
    """
    inspector = inspect(conn)
    if not inspector.has_table("meta"):
        stray = [name for name in _OWN_TABLES if inspector.has_table(name)]
        if stray:
            raise StoreError(
                f"the database has tables {', '.join(stray)} but no benchlab 'meta' table; "
                "it is not a benchlab results store (use another database or file)"
            )
        metadata.create_all(conn)
        _write_versions(conn, target_version, insert=True)
        return target_version

    found = _read_store_version(conn)
    if found > target_version:
        raise StoreError(
            f"the results store was written by a newer benchlab (store schema version {found}; "
            f"this benchlab understands up to {target_version}); upgrade benchlab to use it"
        )
    for version in range(found, target_version):
        step = migrations.get(version)
        if step is None:
            raise StoreError(
                f"cannot upgrade the results store from store schema version {version}: "
                "no migration is known for it"
            )
        step(conn)
    _write_versions(conn, target_version, insert=False)
    return found


def _read_store_version(conn: Connection) -> int:
    raw = conn.execute(select(meta.c.value).where(meta.c.key == _STORE_VERSION_KEY)).scalar()
    if raw is None:
        raise StoreError("the results store's meta table has no store_schema_version")
    try:
        return int(raw)
    except ValueError:
        raise StoreError(f"the results store has an unreadable schema version {raw!r}") from None


def _write_versions(conn: Connection, store_version: int, *, insert: bool) -> None:
    values = {_STORE_VERSION_KEY: str(store_version), _RESULT_VERSION_KEY: str(SCHEMA_VERSION)}
    if insert:
        conn.execute(meta.insert(), [{"key": k, "value": v} for k, v in values.items()])
        return
    for key, value in values.items():
        updated = conn.execute(meta.update().where(meta.c.key == key).values(value=value))
        if updated.rowcount == 0:
            conn.execute(meta.insert().values(key=key, value=value))


def lock_for_setup(conn: Connection) -> None:
    """Serialise schema setup between processes opening the same new PostgreSQL store.

    SQLite needs nothing here: its setup transaction already starts with ``BEGIN IMMEDIATE``.
    """
    if conn.dialect.name == "postgresql":
        # Any fixed 64-bit key works; this one spells "benchlab" in ASCII.
        conn.execute(text("SELECT pg_advisory_xact_lock(7090194561597464930)"))
