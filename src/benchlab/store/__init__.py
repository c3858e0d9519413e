"""The results store: runs, results and raw samples in SQLite or PostgreSQL.

Open one with :func:`open_store`; the default is a per-user SQLite file.
"""

from __future__ import annotations

from benchlab.store.paths import default_store_path
from benchlab.store.records import HistoryPoint, RunRecord, RunRef, RunStatus
from benchlab.store.store import ResultStore, open_store, using_store
from benchlab.store.tables import STORE_SCHEMA_VERSION

__all__ = [
    "STORE_SCHEMA_VERSION",
    "HistoryPoint",
    "ResultStore",
    "RunRecord",
    "RunRef",
    "RunStatus",
    "default_store_path",
    "open_store",
    "using_store",
]
