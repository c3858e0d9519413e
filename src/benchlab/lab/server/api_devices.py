"""``/api/v1/devices``: the registry as the pages show it, and the writes workers and admins make.

A worker token writes only for devices of its own host (checked against the body's host for
a registration, and against the stored host for everything else, so a worker cannot take over
another host's device by re-registering it); an admin token may write for any device.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, HTTPException, Query

from benchlab.errors import UsageError
from benchlab.lab import devices as registry
from benchlab.lab.devices import COUNT_TABS, Device
from benchlab.lab.jobs import list_jobs
from benchlab.lab.queue import Lab
from benchlab.lab.server.api_models import (
    DeviceDetailOut,
    DeviceId,
    DeviceIn,
    DeviceListOut,
    DeviceOut,
    HealthIn,
    HeartbeatIn,
    QuarantineIn,
    errors,
    usage_errors,
)
from benchlab.lab.server.auth import Caller, get_lab, own_device, require, require_read
from benchlab.lab.tokens import Scope

__all__ = ["router"]

router = APIRouter(tags=["devices"])

Tab = Literal["all", "alive", "busy", "idle", "offline", "quarantined"]
assert set(Tab.__args__) == set(COUNT_TABS)  # type: ignore[attr-defined]  # kept in step


def _find(lab: Lab, device_id: str) -> Device:
    """The device, or 404."""
    try:
        return registry.get_device(lab.store, device_id)
    except UsageError as exc:
        raise HTTPException(404, str(exc)) from None


def _writable(lab: Lab, caller: Caller, device_id: str) -> Device:
    """The device, if it exists (404) and the caller may write for its host (403)."""
    device = _find(lab, device_id)
    own_device(caller, device.host)
    return device


@router.get("/devices", response_model=DeviceListOut, responses=errors(401))
def list_devices(tab: Tab = "all", lab: Lab = Depends(get_lab),
                 _: Caller = Depends(require_read)) -> dict[str, Any]:
    """The devices of one count tab (all, alive, busy, idle, offline, quarantined), and
    how many each tab holds."""
    devices = registry.list_devices(lab.store)
    return {"tab": tab, "counts": registry.device_counts(devices),
            "devices": [d.to_json() for d in devices if d.in_tab(tab)]}


@router.get("/devices/{device_id}", response_model=DeviceDetailOut, responses=errors(401, 404))
def get_device(device_id: DeviceId,
               events: Annotated[int, Query(ge=1, le=1000)] = 50,
               lab: Lab = Depends(get_lab),
               _: Caller = Depends(require_read)) -> dict[str, Any]:
    """One device, its history (health, state, quarantine; newest first) and its latest jobs."""
    device = _find(lab, device_id)
    history = registry.device_events(lab.store, device_id, limit=events)
    return {"device": device.to_json(),
            "events": [e.__dict__ for e in history],
            "jobs": [j.to_json() for j in list_jobs(lab.store, device=device_id, limit=20)]}


@router.put("/devices/{device_id}", response_model=DeviceOut,
            responses=errors(400, 401, 403))
def put_device(device_id: DeviceId, body: DeviceIn, lab: Lab = Depends(get_lab),
               caller: Caller = Depends(require(Scope.WORKER))) -> dict[str, Any]:
    """Register a device or refresh it (worker: its own host only; quarantine survives)."""
    own_device(caller, body.host)
    try:
        existing = registry.get_device(lab.store, device_id)
    except UsageError:
        existing = None
    if existing is not None:
        own_device(caller, existing.host)
    with usage_errors():
        device = registry.register_device(
            lab.store, device_id=device_id, host=body.host, kind=body.kind, target=body.target,
            properties=body.properties, pools=body.pools, device_state=body.device_state)
    return device.to_json()


# 400 too: a body that is not JSON at all is refused by FastAPI before the route runs.
@router.post("/devices/{device_id}/heartbeat", response_model=DeviceOut,
             responses=errors(400, 401, 403, 404))
def post_heartbeat(device_id: DeviceId, body: Annotated[HeartbeatIn | None, Body()] = None,
                   lab: Lab = Depends(get_lab),
                   caller: Caller = Depends(require(Scope.WORKER))) -> dict[str, Any]:
    """The worker vouches for its device now (optionally with fresh device state)."""
    _writable(lab, caller, device_id)
    registry.heartbeat(lab.store, device_id,
                       device_state=None if body is None else body.device_state)
    return _find(lab, device_id).to_json()


@router.post("/devices/{device_id}/health", response_model=DeviceOut,
             responses=errors(400, 401, 403, 404))
def post_health(device_id: DeviceId, body: HealthIn, lab: Lab = Depends(get_lab),
                caller: Caller = Depends(require(Scope.WORKER))) -> dict[str, Any]:
    """Record a health check's verdict (good, bad, unknown) and why."""
    _writable(lab, caller, device_id)
    with usage_errors():
        registry.set_health(lab.store, device_id, body.health, body.reason, who=caller.name)
    return _find(lab, device_id).to_json()


@router.post("/devices/{device_id}/quarantine", response_model=DeviceOut,
             responses=errors(400, 401, 403, 404))
def post_quarantine(device_id: DeviceId, body: QuarantineIn, lab: Lab = Depends(get_lab),
                    caller: Caller = Depends(require(Scope.ADMIN))) -> dict[str, Any]:
    """Take a device out of rotation; the token's name and the reason are kept."""
    _find(lab, device_id)
    with usage_errors():
        registry.quarantine(lab.store, device_id, who=caller.name, reason=body.reason)
    return _find(lab, device_id).to_json()


@router.post("/devices/{device_id}/release", response_model=DeviceOut,
             responses=errors(401, 403, 404))
def post_release(device_id: DeviceId, lab: Lab = Depends(get_lab),
                 caller: Caller = Depends(require(Scope.ADMIN))) -> dict[str, Any]:
    """Put a quarantined device back in rotation."""
    _find(lab, device_id)
    registry.release(lab.store, device_id, who=caller.name)
    return _find(lab, device_id).to_json()
