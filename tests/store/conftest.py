"""Fixtures for the store tests: a store on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchlab.store import ResultStore, open_store

try:
    from pg_server import PostgresServer, PostgresUnavailable, find_pg_bin
except ModuleNotFoundError:  # tests/ became a package
    from tests.pg_server import PostgresServer, PostgresUnavailable, find_pg_bin


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session; skips when its binaries are missing."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    try:
        server = PostgresServer(bin_dir)
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A location for an empty store: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path_factory.mktemp("store") / "results.db")
    server: PostgresServer = request.getfixturevalue("pg_server")
    return server.create_database()


@pytest.fixture
def store(store_url: str) -> Iterator[ResultStore]:
    """An open, empty store on each backend."""
    with open_store(store_url) as opened:
        yield opened
