"""The admin actions a signed-in person takes from the pages: cancel, quarantine, release.

Each is an HTML form post checked by :func:`~benchlab.lab.server.page_session.signed_in_for`
(a session, its CSRF token, and the scope the API's own endpoint needs), then the same
library call the API makes, then a 303 back to the page, which shows the new state.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse

from benchlab.errors import UsageError
from benchlab.lab import devices as registry
from benchlab.lab.queue import cancel_job
from benchlab.lab.server.auth import get_lab
from benchlab.lab.server.page_session import PageRefusal, form_fields, signed_in_for
from benchlab.lab.sessions import Session
from benchlab.lab.tokens import Scope

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


def _device_admin(request: Request, fields: dict[str, str], device_id: str) -> Session:
    """The signed-in admin acting on a device that exists (else the page refuses, 404)."""
    session = signed_in_for(request, fields, Scope.ADMIN)
    try:
        registry.get_device(get_lab(request).store, device_id)
    except UsageError as exc:
        raise PageRefusal(404, str(exc)) from None
    return session


def _back(request: Request, route: str, **params: object) -> RedirectResponse:
    return RedirectResponse(request.app.url_path_for(route, **params), status_code=303)


@router.post("/jobs/{job_id}/cancel")
def cancel_from_page(request: Request, job_id: int,
                     fields: dict[str, str] = Depends(form_fields)) -> RedirectResponse:
    """Cancel a waiting job (the API's cancel needs ``admin``), then show its page."""
    session = signed_in_for(request, fields, Scope.ADMIN)
    try:
        cancelled = cancel_job(get_lab(request), job_id, who=session.name)
    except UsageError as exc:  # no such job
        raise PageRefusal(404, str(exc)) from None
    if not cancelled:
        raise PageRefusal(409, f"Job {job_id} is no longer waiting, so it was not cancelled.")
    return _back(request, "job_page", job_id=job_id)


@router.post("/devices/{device_id}/quarantine")
def quarantine_from_page(request: Request, device_id: str,
                         fields: dict[str, str] = Depends(form_fields)) -> RedirectResponse:
    """Take a device out of rotation with the reason given (``admin``), then show its page."""
    session = _device_admin(request, fields, device_id)
    try:
        registry.quarantine(get_lab(request).store, device_id, who=session.name,
                            reason=fields.get("reason", "").strip())
    except UsageError as exc:  # no reason given
        raise PageRefusal(400, str(exc)) from None
    return _back(request, "device_page", device_id=device_id)


@router.post("/devices/{device_id}/release")
def release_from_page(request: Request, device_id: str,
                      fields: dict[str, str] = Depends(form_fields)) -> RedirectResponse:
    """Put a quarantined device back in rotation (``admin``), then show its page."""
    registry.release(get_lab(request).store, device_id,
                     who=_device_admin(request, fields, device_id).name)
    return _back(request, "device_page", device_id=device_id)
