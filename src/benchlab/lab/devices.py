"""The lab's device registry: properties, state × health, quarantine, heartbeats, history.

Each row is one physical device served by one host's worker. ``state`` is what the worker
says (idle, busy, offline); a heartbeat older than ``stale_after`` makes a device count as
offline whatever its row says, so a dead host's devices never look alive. ``health`` is the
last health check's verdict (good, bad, unknown); quarantine is a person's decision, with who
and why, and keeps the device out of rotation until released.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Connection, select, update

from benchlab.errors import UsageError
from benchlab.lab.pools import PoolRule
from benchlab.store import ResultStore
from benchlab.lab.tables import lab_device_events, lab_devices, lab_pools
from benchlab.schema.result import EnvKey

__all__ = [
    "COUNT_TABS",
    "Device",
    "DeviceEvent",
    "DeviceState",
    "Health",
    "STALE_AFTER_S",
    "add_pool",
    "device_counts",
    "device_events",
    "device_properties",
    "get_device",
    "heartbeat",
    "list_devices",
    "list_pools",
    "matching_pools",
    "quarantine",
    "record_execution",
    "register_device",
    "release",
    "set_health",
    "set_pools",
    "set_state",
]

STALE_AFTER_S = 60.0
"""A device whose heartbeat is older than this counts as offline."""

DeviceState = Literal["idle", "busy", "offline"]
"""What a worker says of a device (``offline`` also when its heartbeat is stale)."""
Health = Literal["good", "bad", "unknown"]
"""The last health check's verdict."""

COUNT_TABS = ("all", "alive", "busy", "idle", "offline", "quarantined")
"""The device list's count tabs, in display order."""


@dataclass(frozen=True)
class Device:
    """One registered device as the registry sees it now."""

    id: str
    host: str
    kind: str
    target: str
    properties: Mapping[str, Any]
    pools: tuple[str, ...]
    state: DeviceState
    health: Health
    health_reason: str
    quarantined: bool
    quarantined_by: str
    quarantine_reason: str
    current_job: int | None
    registered_at: float
    last_heartbeat: float
    device_state: Mapping[str, Any] = field(default_factory=dict)
    now: float = 0.0

    @property
    def heartbeat_age_s(self) -> float:
        """Seconds since the worker last vouched for this device."""
        return max(0.0, self.now - self.last_heartbeat)

    @property
    def effective_state(self) -> DeviceState:
        """``offline`` when the heartbeat is stale, else the state the worker reported."""
        return "offline" if self.heartbeat_age_s > STALE_AFTER_S else self.state

    @property
    def alive(self) -> bool:
        """Heartbeat fresh and not offline."""
        return self.effective_state != "offline"

    def in_tab(self, tab: str) -> bool:
        """Whether the device belongs to a count tab (see :data:`COUNT_TABS`)."""
        if tab == "all":
            return True
        if tab == "quarantined":
            return self.quarantined
        if tab == "alive":
            return self.alive
        return self.effective_state == tab

    def to_json(self) -> dict[str, Any]:
        """The device as the JSON API shows it."""
        return {
            "id": self.id, "host": self.host, "kind": self.kind, "target": self.target,
            "properties": dict(self.properties), "pools": list(self.pools),
            "state": self.effective_state, "reported_state": self.state,
            "health": self.health, "health_reason": self.health_reason,
            "quarantined": self.quarantined, "quarantined_by": self.quarantined_by,
            "quarantine_reason": self.quarantine_reason, "current_job": self.current_job,
            "registered_at": self.registered_at, "last_heartbeat": self.last_heartbeat,
            "heartbeat_age_s": round(self.heartbeat_age_s, 3),
            "temperatures_c": self.device_state.get("temperatures_c"),
            "battery": self.device_state.get("battery"),
        }


@dataclass(frozen=True)
class DeviceEvent:
    """One change in a device's history: health, state, quarantine or registration."""

    at: float
    kind: str
    value: str
    reason: str
    who: str
    job_id: int | None


def device_properties(kind: str, description: Mapping[str, Any]) -> dict[str, Any]:
    """Typed properties from a target's ``describe()``: what pool rules select on."""
    packages = description.get(EnvKey.PACKAGES) or {}
    state = description.get(EnvKey.STATE) or {}
    props: dict[str, Any] = {
        "kind": kind,
        "hostname": description.get(EnvKey.HOSTNAME),
        "model": description.get(EnvKey.MODEL) or description.get(EnvKey.CPU_MODEL),
        "soc": description.get(EnvKey.SOC_MODEL) or description.get(EnvKey.BOARD)
        or description.get(EnvKey.CPU_MODEL),
        "abi": description.get(EnvKey.ABI) or description.get(EnvKey.MACHINE),
        "os": "android" if kind == "adb" else "linux",
        "os_version": description.get(EnvKey.ANDROID) or description.get(EnvKey.KERNEL),
        "cores": description.get(EnvKey.CPU_COUNT),
        "ram_mib": state.get("memory_total_mib"),
        "runtimes": sorted(name for name, version in packages.items()
                           if version and name != "benchlab"),
    }
    return {key: value for key, value in props.items() if value not in (None, "")}


def _event(conn: Connection, device_id: str, kind: str, value: str, reason: str = "",
           who: str = "", job_id: int | None = None) -> None:
    conn.execute(lab_device_events.insert().values(
        device_id=device_id, at=time.time(), kind=kind, value=value, reason=reason, who=who,
        job_id=job_id,
    ))


def register_device(store: ResultStore, *, device_id: str, host: str, kind: str, target: str,
                    properties: Mapping[str, Any], pools: Sequence[str],
                    device_state: Mapping[str, Any] | None = None,
                    offline_reason: str = "") -> Device:
    """Add a device or refresh it (a worker restarting); quarantine survives re-registration.

    ``offline_reason``: the device did not answer its probe. It is registered offline in the
    same transaction, so no scheduler ever sees it idle in between.
    """
    now = time.time()
    state = "offline" if offline_reason else "idle"
    values = {
        "host": host, "kind": kind, "target": target,
        "properties_json": json.dumps(dict(properties), sort_keys=True, default=str),
        "pools_json": json.dumps(list(pools)), "state": state, "current_job": None,
        "last_heartbeat": now, "device_state_json": json.dumps(dict(device_state or {}),
                                                              default=str),
    }
    with store.transaction("register a lab device") as conn:
        exists = conn.execute(select(lab_devices.c.id).where(lab_devices.c.id == device_id)).first()
        if exists is None:
            conn.execute(lab_devices.insert().values(
                id=device_id, health="unknown", health_reason="", quarantined=0,
                quarantined_by="", quarantine_reason="", registered_at=now, **values))
        else:
            conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(**values))
        _event(conn, device_id, "registered", state, f"worker on {host}", who=host)
        if offline_reason:
            _event(conn, device_id, "state", "offline", offline_reason, who=host)
    return get_device(store, device_id)


def heartbeat(store: ResultStore, device_id: str, *,
              device_state: Mapping[str, Any] | None = None) -> None:
    """The worker vouches for the device now (and may refresh its temperature, battery...)."""
    values: dict[str, Any] = {"last_heartbeat": time.time()}
    if device_state is not None:
        values["device_state_json"] = json.dumps(dict(device_state), default=str)
    with store.transaction("heartbeat a lab device") as conn:
        conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(**values))


def set_state(store: ResultStore, device_id: str, state: str, *, reason: str = "",
              job_id: int | None = None) -> None:
    """Record idle, busy (with ``job_id``) or offline (with a reason); history keeps each."""
    if state not in ("idle", "busy", "offline"):
        raise UsageError(f"unknown device state {state!r}")
    with store.transaction("set a lab device's state") as conn:
        before = conn.execute(select(lab_devices.c.state).where(
            lab_devices.c.id == device_id)).scalar()
        conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(
            state=state, current_job=job_id if state == "busy" else None,
            last_heartbeat=time.time()))
        if before != state and state != "busy":
            # busy/idle flips once per job; the job list already tells that story.
            _event(conn, device_id, "state", state, reason, job_id=job_id)


def set_pools(store: ResultStore, device_id: str, pools: Sequence[str]) -> None:
    """Record the pools the device's worker now listens to."""
    with store.transaction("set a lab device's pools") as conn:
        conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(
            pools_json=json.dumps(list(pools))))


def record_execution(store: ResultStore, device_id: str, job_id: int) -> None:
    """Note in the device's history that it ran a job (no-op jobs; proof of exactly once)."""
    with store.transaction("record a lab job execution") as conn:
        _event(conn, device_id, "ran", "noop", job_id=job_id)


def set_health(store: ResultStore, device_id: str, health: str, reason: str = "",
               who: str = "health check") -> None:
    """Record a health verdict (good, bad, unknown) and why."""
    if health not in ("good", "bad", "unknown"):
        raise UsageError(f"unknown device health {health!r}")
    with store.transaction("set a lab device's health") as conn:
        conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(
            health=health, health_reason=reason))
        _event(conn, device_id, "health", health, reason, who=who)


def quarantine(store: ResultStore, device_id: str, *, who: str, reason: str) -> None:
    """Take a device out of rotation until :func:`release`; who and why are kept."""
    if not reason.strip():
        raise UsageError("quarantining a device needs a reason")
    get_device(store, device_id)
    with store.transaction("quarantine a lab device") as conn:
        conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(
            quarantined=1, quarantined_by=who, quarantine_reason=reason))
        _event(conn, device_id, "quarantine", "on", reason, who=who)


def release(store: ResultStore, device_id: str, *, who: str) -> None:
    """Put a quarantined device back in rotation."""
    get_device(store, device_id)
    with store.transaction("release a lab device") as conn:
        conn.execute(update(lab_devices).where(lab_devices.c.id == device_id).values(
            quarantined=0, quarantined_by="", quarantine_reason=""))
        _event(conn, device_id, "quarantine", "off", "released", who=who)


def _device(row: Any, now: float) -> Device:
    return Device(
        id=row.id, host=row.host, kind=row.kind, target=row.target,
        properties=json.loads(row.properties_json), pools=tuple(json.loads(row.pools_json)),
        state=row.state, health=row.health, health_reason=row.health_reason,
        quarantined=bool(row.quarantined), quarantined_by=row.quarantined_by,
        quarantine_reason=row.quarantine_reason, current_job=row.current_job,
        registered_at=float(row.registered_at), last_heartbeat=float(row.last_heartbeat),
        device_state=json.loads(row.device_state_json or "{}"), now=now,
    )


def get_device(store: ResultStore, device_id: str) -> Device:
    """One device; an unknown id is a :class:`UsageError`."""
    with store.connection("read a lab device") as conn:
        row = conn.execute(select(lab_devices).where(lab_devices.c.id == device_id)).first()
    if row is None:
        raise UsageError(f"no lab device {device_id!r} is registered")
    return _device(row, time.time())


def list_devices(store: ResultStore) -> list[Device]:
    """Every registered device, by id."""
    with store.connection("list lab devices") as conn:
        rows = conn.execute(select(lab_devices).order_by(lab_devices.c.id)).all()
    now = time.time()
    return [_device(row, now) for row in rows]


def device_counts(devices: Sequence[Device]) -> dict[str, int]:
    """How many devices each count tab holds."""
    return {tab: sum(1 for d in devices if d.in_tab(tab)) for tab in COUNT_TABS}


def device_events(store: ResultStore, device_id: str, limit: int = 50) -> list[DeviceEvent]:
    """A device's history, newest first."""
    with store.connection("read a lab device's history") as conn:
        rows = conn.execute(
            select(lab_device_events).where(lab_device_events.c.device_id == device_id)
            .order_by(lab_device_events.c.id.desc()).limit(limit)
        ).all()
    return [DeviceEvent(float(r.at), r.kind, r.value, r.reason, r.who, r.job_id) for r in rows]


def add_pool(store: ResultStore, rule: str | PoolRule) -> PoolRule:
    """Make a pool known, so workers whose devices match listen on its queue."""
    parsed = PoolRule.parse(rule) if isinstance(rule, str) else rule
    with store.transaction("add a lab pool") as conn:
        if conn.execute(select(lab_pools.c.name).where(lab_pools.c.name == parsed.name)).first():
            return parsed
        conn.execute(lab_pools.insert().values(name=parsed.name, created_at=time.time()))
    return parsed


def list_pools(store: ResultStore) -> list[PoolRule]:
    """Every known pool."""
    with store.connection("list lab pools") as conn:
        names = conn.execute(select(lab_pools.c.name).order_by(lab_pools.c.name)).scalars()
        return [PoolRule.parse(name) for name in names]


def matching_pools(properties: Mapping[str, Any], pools: Sequence[PoolRule]) -> list[str]:
    """The names of the pools a device with these properties belongs to."""
    return [pool.name for pool in pools if pool.matches(properties)]
