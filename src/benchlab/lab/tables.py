"""The lab's tables: devices, their history, pools, submitted jobs and API tokens.

They live in the lab's PostgreSQL beside the store's ``runs`` and ``results`` (one server
holds the queue, the device registry and the results), but belong to the lab: the core store
knows nothing of them, and a local SQLite store never has them. ``lab init`` creates them
(:func:`create_lab_tables`) and records ``LAB_SCHEMA_VERSION`` in the store's ``meta``.

Times here are epoch seconds (``Double``): the lab computes ages (heartbeat, waiting time)
from them, which ISO text would make awkward in SQL.

History of ``LAB_SCHEMA_VERSION``:

1. ``lab_devices``, ``lab_device_events``, ``lab_pools``, ``lab_jobs``, ``lab_tokens`` (until
   benchlab's store schema 2 these were created by the core store, in every store).

To change the layout: bump ``LAB_SCHEMA_VERSION``, change the tables, and make
:func:`create_lab_tables` bring a database at the old version to the new one.
"""

from __future__ import annotations

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
)

__all__ = [
    "LAB_SCHEMA_VERSION",
    "LAB_TABLES",
    "create_lab_tables",
    "lab_device_events",
    "lab_devices",
    "lab_jobs",
    "lab_metadata",
    "lab_pools",
    "lab_tokens",
]

LAB_SCHEMA_VERSION = 1

lab_metadata = MetaData()

lab_devices = Table(
    "lab_devices",
    lab_metadata,
    # "host:<hostname>", "adb:<serial>", "ssh:<host>": also the procrastinate queue and lock
    # suffix ("device:<id>").
    Column("id", String(200), primary_key=True),
    Column("host", Text, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("target", Text, nullable=False),
    Column("properties_json", Text, nullable=False),
    Column("pools_json", Text, nullable=False, default="[]"),
    Column("state", String(16), nullable=False),
    Column("health", String(16), nullable=False),
    Column("health_reason", Text, nullable=False, default=""),
    Column("quarantined", Integer, nullable=False, default=0),
    Column("quarantined_by", Text, nullable=False, default=""),
    Column("quarantine_reason", Text, nullable=False, default=""),
    Column("current_job", Integer, nullable=True),
    Column("registered_at", Double(), nullable=False),
    Column("last_heartbeat", Double(), nullable=False),
    Column("device_state_json", Text, nullable=False, default="{}"),
)

lab_device_events = Table(
    "lab_device_events",
    lab_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("device_id", String(200), ForeignKey("lab_devices.id", ondelete="CASCADE"),
           nullable=False),
    Column("at", Double(), nullable=False),
    # "health", "state", "quarantine", "release", "registered"
    Column("kind", String(16), nullable=False),
    Column("value", Text, nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Column("who", Text, nullable=False, default=""),
    Column("job_id", Integer, nullable=True),
    Index("ix_lab_device_events_device", "device_id", "at"),
    sqlite_autoincrement=True,
)

lab_pools = Table(
    "lab_pools",
    lab_metadata,
    # The canonical rule text is the pool's name: "abi=arm64-v8a,model=Pixel 8".
    Column("name", String(400), primary_key=True),
    Column("created_at", Double(), nullable=False),
)

lab_jobs = Table(
    "lab_jobs",
    lab_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("submission", String(36), nullable=False),
    Column("request_json", Text, nullable=False),
    # "device" (route is a device id) or "pool" (route is a pool's rule)
    Column("route_kind", String(8), nullable=False),
    Column("route", Text, nullable=False),
    Column("device_id", String(200), nullable=True),
    Column("queue_job_id", Integer, nullable=True),
    # waiting, running, finished, failed, cancelled
    Column("status", String(16), nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Column("run_uuid", String(36), nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("submitted_by", Text, nullable=False, default=""),
    # compare and track jobs: their report (Markdown or text, JSON, exit code)
    Column("report_json", Text, nullable=True),
    Column("created_at", Double(), nullable=False),
    Column("started_at", Double(), nullable=True),
    Column("finished_at", Double(), nullable=True),
    Index("ix_lab_jobs_status", "status", "created_at"),
    Index("ix_lab_jobs_submission", "submission"),
    sqlite_autoincrement=True,
)

lab_tokens = Table(
    "lab_tokens",
    lab_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", Text, nullable=False),
    # sha256 of the token: tokens are 256 random bits, so a fast hash loses nothing and a
    # leaked table does not give anyone a usable token.
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("scopes", Text, nullable=False),
    # For worker tokens: the lab host whose devices the token may write for.
    Column("host", Text, nullable=False, default=""),
    Column("created_at", Double(), nullable=False),
    Column("revoked_at", Double(), nullable=True),
    sqlite_autoincrement=True,
)

LAB_TABLES = (lab_devices, lab_device_events, lab_pools, lab_jobs, lab_tokens)
"""Every lab table, in creation order."""


def create_lab_tables(conn: Connection) -> None:
    """Create the lab's tables that are missing (a lab from before version 1 has them all)."""
    lab_metadata.create_all(conn, tables=list(LAB_TABLES), checkfirst=True)
