"""The JSON API, ``/api/v1``: everything the pages show, and the writes, each with its scope.

The routes live by subject in ``api_devices``, ``api_jobs`` (jobs, queues, pools) and
``api_admin`` (runs, tokens); their models in ``api_models``. Reads depend on
:func:`~benchlab.lab.server.auth.require_read` (open unless the server closes anonymous
reading); each write names its scope with :func:`~benchlab.lab.server.auth.require`.
"""

from __future__ import annotations

from fastapi import APIRouter

from benchlab.lab.server import api_admin, api_devices, api_jobs
from benchlab.lab.server.api_models import OkOut

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")


@router.get("/health", response_model=OkOut, tags=["server"])
def health() -> OkOut:
    """Whether the server is up; anonymous, even when anonymous reading is off (probes)."""
    return OkOut(ok=True)


router.include_router(api_devices.router)
router.include_router(api_jobs.router)
router.include_router(api_admin.router)
