"""Fixtures for the lab tests: a fresh, initialised lab database on the session's PostgreSQL."""

from __future__ import annotations

import pytest

from benchlab.lab.localpg import PostgresServer
from benchlab.lab.queue import init_lab


@pytest.fixture
def lab_url(pg_server: PostgresServer) -> str:
    """A new database with the store's, the lab's and procrastinate's tables."""
    url = pg_server.create_database().replace("+psycopg2", "")
    init_lab(url)
    return url
