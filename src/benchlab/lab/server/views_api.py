"""JSON twins of the lab's pages under ``/api/v1``: the same data the pages show.

Each endpoint calls the same :mod:`benchlab.lab.views` function as its page with the same query
parameters, so a page and its twin always agree; the pydantic models below document the shapes.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel, ConfigDict

from benchlab.errors import UsageError
from benchlab.lab import run_view, views
from benchlab.lab.server.api_models import QueryText, RunRefPath, errors
from benchlab.lab.server.auth import get_lab, require_read
from benchlab.schema import LATENCY_KEY

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["views"], dependencies=[Depends(require_read)])


class _View(BaseModel):
    # Built straight from the views' frozen dataclasses.
    model_config = ConfigDict(from_attributes=True)


class RunInfoModel(_View):
    """A stored run; ``status`` is ``abandoned`` for a stale ``running`` one (see
    ``stored_status`` for what the store holds)."""

    id: int
    uuid: str
    created_at: str
    finished_at: str | None
    status: str
    stored_status: str
    last_result_at: str | None
    description: str
    host: str
    ok_count: int
    failed_count: int


class OverviewRowModel(_View):
    """A job's newest result and the change of its median since its previous ok result."""

    model: str
    test: str
    framework: str
    backend: str
    device: str
    job_key: str
    status: str
    error: str | None
    run_id: int
    started_at: str
    runtime_version: str | None
    unit: str
    p50: float | None
    ci_low: float | None
    ci_high: float | None
    prev_p50: float | None
    prev_ci_low: float | None
    prev_ci_high: float | None
    prev_run_id: int | None
    prev_runtime_version: str | None
    change: float | None
    significant: bool


class OverviewModel(_View):
    """The latest matrix, its filters and the filters' choices."""

    filters: dict[str, str]
    rows: list[OverviewRowModel]
    models: list[str]
    frameworks: list[str]
    devices: list[str]


class TrendPointModel(_View):
    """One measurement: median and its CI in the series' unit."""

    run_id: int
    result_id: int
    started_at: str
    commit: str | None
    runtime_version: str | None
    p50: float | None
    ci_low: float | None
    ci_high: float | None
    count: int
    warnings: list[str]


class TrendMarkModel(_View):
    """A change point (``change``) or runtime change (``runtime``) before point ``index``."""

    index: int
    kind: str
    text: str


class TrendSeriesModel(_View):
    """One job's points, oldest first."""

    job_key: str
    label: str
    unit: str
    points: list[TrendPointModel]
    marks: list[TrendMarkModel]


class TrendsModel(_View):
    """The chosen metric over time, one series per job."""

    filters: dict[str, str]
    series: list[TrendSeriesModel]
    models: list[str]
    frameworks: list[str]
    devices: list[str]
    metrics: list[str]


class CompareRowModel(_View):
    """One job in both runs; ``ratio`` is B ÷ A."""

    model: str
    test: str
    backend: str
    device: str
    unit: str
    a_p50: float | None
    a_ci_low: float | None
    a_ci_high: float | None
    a_count: int
    b_p50: float | None
    b_ci_low: float | None
    b_ci_high: float | None
    b_count: int
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    verdict: str


class ComparisonModel(_View):
    """An unpaired comparison of two stored runs."""

    run_a: RunInfoModel | None
    run_b: RunInfoModel | None
    metric: str
    rows: list[CompareRowModel]
    only_a: list[str]
    only_b: list[str]
    matched_ignoring_device: bool
    unpaired: bool = True


class MetricRowModel(_View):
    """One metric key's summary in the unit shown."""

    key: str
    unit: str
    count: int
    p50: float | None
    ci_low: float | None
    ci_high: float | None
    p10: float | None
    p90: float | None
    min: float | None
    max: float | None
    warnings: list[str]
    operator: bool
    accuracy: bool


class ResultDetailModel(_View):
    """One result of a run."""

    result_index: int
    model: str
    test: str
    backend: str
    device: str
    status: str
    error: str | None
    started_at: str
    runtime_version: str | None
    stop_reason: str | None
    repetitions: int
    sample_count: int
    metrics: list[MetricRowModel]
    device_flags: list[dict[str, Any]]


class RunDetailModel(_View):
    """A run's environment and results."""

    run: RunInfoModel
    environment: dict[str, Any]
    items: list[ResultDetailModel]


@router.get("/overview", response_model=OverviewModel, responses=errors(401))
def overview_json(request: Request, model: QueryText = "", backend: QueryText = "",
                  device: QueryText = "") -> Any:
    """The overview page's data."""
    filters = {"model": model, "backend": backend, "device": device}
    return OverviewModel.model_validate(views.overview(get_lab(request).store, filters))


@router.get("/trends", response_model=TrendsModel, responses=errors(401))
def trends_json(request: Request, model: QueryText = "", backend: QueryText = "",
                device: QueryText = "", metric: QueryText = "") -> Any:
    """The trends page's data."""
    data = views.trends(get_lab(request).store, model or None, backend or None, device or None,
                        metric or None)
    return TrendsModel.model_validate(data)


@router.get("/compare", response_model=ComparisonModel, responses=errors(401, 404))
def compare_json(request: Request, a: QueryText = "", b: QueryText = "",
                 metric: QueryText = LATENCY_KEY) -> Any:
    """The compare page's data; an unknown run is 404."""
    try:
        data = views.compare(get_lab(request).store, a or None, b or None, metric)
    except UsageError as exc:
        raise HTTPException(404, str(exc)) from exc
    return ComparisonModel.model_validate(data)


@router.get("/runs/{run}/detail", response_model=RunDetailModel,
            responses=errors(401, 404))
def run_detail_json(request: Request, run: RunRefPath) -> Any:
    """The run page's data (without the samples themselves); an unknown run is 404."""
    try:
        data = run_view.run_detail(get_lab(request).store, run)
    except UsageError as exc:
        raise HTTPException(404, str(exc)) from exc
    return RunDetailModel.model_validate(data)
