"""Turning a store location into a configured SQLAlchemy engine, and its errors into ours."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.pool import StaticPool

from benchlab.errors import StoreError, StoreUnavailable
from benchlab.store.paths import default_store_path

__all__ = ["WRITE_OPTION", "create_store_engine", "resolve_url", "store_errors"]

WRITE_OPTION = "benchlab_write"
"""Engine option marking write transactions.

On SQLite they start with BEGIN IMMEDIATE: a write transaction that reads first (add_result
checks for an existing row) must hold the write lock from its start, or two writers can
deadlock and one of them fails at once instead of waiting its turn.
"""

_SQLITE_BUSY_TIMEOUT_MS = 30_000


def resolve_url(url_or_path: str | Path | None) -> URL:
    """The URL for a store location; creates the directory of a SQLite file."""
    if url_or_path is None:
        return _sqlite_file_url(default_store_path())
    if isinstance(url_or_path, Path) or "://" not in url_or_path:
        return _sqlite_file_url(Path(url_or_path).expanduser())
    try:
        url = make_url(url_or_path)
    except (ArgumentError, ValueError):
        raise StoreError(f"not a valid store URL: {url_or_path!r}") from None
    database = url.database or ""
    if url.get_backend_name() == "sqlite" and database not in ("", ":memory:"):
        if not database.startswith("file:"):
            _prepare_sqlite_file(Path(database).expanduser())
    return url


def _sqlite_file_url(path: Path) -> URL:
    _prepare_sqlite_file(path)
    return URL.create("sqlite", database=str(path))


def _prepare_sqlite_file(path: Path) -> None:
    if path.is_dir():
        raise StoreError(f"the results store path {path} is a directory, not a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the directory {path.parent} for the results store: "
            f"{exc.strerror or exc}"
        ) from None


def create_store_engine(url: URL, shown: str) -> Engine:
    """An engine for ``url`` (shown to people as ``shown``), tuned for its backend."""
    backend = url.get_backend_name()
    options: dict[str, Any] = {}
    connect_args: dict[str, Any] = {}
    if backend == "sqlite":
        connect_args["timeout"] = _SQLITE_BUSY_TIMEOUT_MS / 1000
        if (url.database or "") in ("", ":memory:"):
            # Each new connection to :memory: is a new, empty database; keep exactly one.
            options["poolclass"] = StaticPool
            connect_args["check_same_thread"] = False
    elif backend == "postgresql":
        options["pool_pre_ping"] = True
        if url.get_driver_name() == "psycopg2":
            connect_args["connect_timeout"] = 10
    try:
        engine = create_engine(url, connect_args=connect_args, **options)
    except ImportError as exc:
        hint = " (install benchlab[postgres])" if backend == "postgresql" else ""
        raise StoreError(f"no database driver for {shown}: {exc}{hint}") from None
    except (ArgumentError, SQLAlchemyError) as exc:
        raise StoreError(f"cannot use the store URL {shown}: {exc}") from None
    if backend == "sqlite":
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let the begin hook below issue BEGIN, instead of the sqlite3 module's own guesses.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}")
        # WAL lets readers (a report, a dashboard) work while a sweep writes. A committed
        # transaction sits in the WAL file, so it survives a killed process even with
        # synchronous=NORMAL, which only risks the last commits on power loss or an OS crash.
        # We pay for FULL anyway (one fsync per commit): commits come once per finished job,
        # so the cost is negligible and a finished result survives power loss too.
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


#: How SQLite and PostgreSQL say the disk is full.
_DISK_FULL = ("database or disk is full", "no space left on device", "could not extend file")


@contextmanager
def store_errors(action: str) -> Iterator[None]:
    """Turn SQLAlchemy's exceptions into a :class:`StoreError` naming what was being done."""
    try:
        yield
    except SQLAlchemyError as exc:
        what = _describe(exc)
        if any(full in what.lower() for full in _DISK_FULL):
            what += ("; the results stored before this one are kept: free some space, then "
                     "finish the sweep with 'benchlab run --resume'")
        elif _unreachable(exc):
            raise StoreUnavailable(f"could not {action}: the database is unavailable: "
                                   f"{what}") from exc
        raise StoreError(f"could not {action}: {what}") from exc


def _unreachable(exc: SQLAlchemyError) -> bool:
    """Whether the server is down or the connection was lost, rather than the query wrong.

    Only PostgreSQL's drivers count: SQLite's OperationalError also means a bad file or a
    full disk, which waiting does not cure.
    """
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    driver = type(getattr(exc, "orig", None)).__module__ or ""
    return isinstance(exc, (OperationalError, InterfaceError)) and driver.startswith("psycopg")


def _describe(exc: SQLAlchemyError) -> str:
    cause: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__
