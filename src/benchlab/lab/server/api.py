"""The JSON API, ``/api/v1``: everything the pages show, and the writes, each with its scope."""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter(prefix="/api/v1")
