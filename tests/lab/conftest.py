"""Fixtures for the lab tests: a fresh, initialised lab database on the session's PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchlab.lab.localpg import PostgresServer, PostgresUnavailable, find_pg_bin
from benchlab.lab.queue import init_lab


@pytest.fixture
def lab_url(pg_server: PostgresServer) -> str:
    """A new database with the store's, the lab's and procrastinate's tables."""
    url = pg_server.create_database().replace("+psycopg2", "")
    init_lab(url)
    return url


@pytest.fixture
def own_pg() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the test's own: halting the session's would disturb others."""
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


@pytest.fixture
def outage_lab(own_pg: PostgresServer) -> str:
    url = own_pg.create_database().replace("+psycopg2", "")
    init_lab(url)
    return url
