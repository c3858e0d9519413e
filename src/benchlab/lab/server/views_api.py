"""JSON twins of the lab's pages under ``/api/v1``: the same data the pages show.

Each endpoint calls the same :mod:`benchlab.lab.views` function as its page with the same query
parameters, so a page and its twin always agree. The views' frozen dataclasses are the response
shapes themselves (FastAPI validates and documents them through pydantic), except where a run
is shown: the comparison's model is generated from its dataclass with each run flat, as every
run in the API is (``RunOut``). One shape per concept, nothing copied.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request

from benchlab.errors import UsageError
from benchlab.lab import views
from benchlab.lab.server.api_models import ComparisonOut, QueryText, errors
from benchlab.lab.server.auth import get_lab, require_read
from benchlab.schema.result import LATENCY_KEY

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["views"], dependencies=[Depends(require_read)])


@router.get("/overview", response_model=views.Overview, responses=errors(401))
def overview_json(request: Request, model: QueryText = "", backend: QueryText = "",
                  device: QueryText = "") -> Any:
    """The overview page's data."""
    filters = {"model": model, "backend": backend, "device": device}
    return views.overview(get_lab(request).store, filters)


@router.get("/trends", response_model=views.Trends, responses=errors(401))
def trends_json(request: Request, model: QueryText = "", backend: QueryText = "",
                device: QueryText = "", metric: QueryText = "") -> Any:
    """The trends page's data."""
    return views.trends(get_lab(request).store, model or None, backend or None, device or None,
                        metric or None)


@router.get("/compare", response_model=ComparisonOut, responses=errors(401, 404))
def compare_json(request: Request, a: QueryText = "", b: QueryText = "",
                 metric: QueryText = LATENCY_KEY) -> Any:
    """The compare page's data; an unknown run is 404."""
    try:
        return views.compare(get_lab(request).store, a or None, b or None, metric).to_json()
    except UsageError as exc:
        raise HTTPException(404, str(exc)) from exc
