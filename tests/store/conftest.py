"""Fixtures for the store tests: a store on SQLite and on a real PostgreSQL server
(the session's ``pg_server`` comes from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchlab.store import ResultStore, open_store

from benchlab.lab.localpg import PostgresServer


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
