"""The data behind the lab's run page: everything about one run, samples included.

Split from :mod:`benchlab.lab.views` (which re-exports it) because it is the one page that
reads samples; the others read stored summaries only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchlab.lab.display import display_unit, shown_stat
from benchlab.lab.run_state import RunInfo, run_info
from benchlab.schema.metrics import Family, metric_info
from benchlab.plugins import ConfigLabels
from benchlab.report.matrix import config_label
from benchlab.schema.result import Result
from benchlab.store import ResultStore

__all__ = ["MetricRow", "ResultDetail", "RunDetail", "run_detail"]


@dataclass(frozen=True)
class MetricRow:
    """One metric key of one result: its summary in the unit the pages show."""

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
    warnings: tuple[str, ...]
    operator: bool
    accuracy: bool


@dataclass(frozen=True)
class ResultDetail:
    """One result of a run: what was measured, how it ended and every metric's summary."""

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
    metrics: list[MetricRow]
    device_flags: list[Mapping[str, Any]]


@dataclass(frozen=True)
class RunDetail:
    """A run's environment and results; ``results`` keeps the loaded objects for the page's
    charts (the JSON twin leaves them out)."""

    run: RunInfo
    environment: Mapping[str, Any]
    items: list[ResultDetail]
    results: tuple[Result, ...] = ()


def run_detail(store: ResultStore, run: str | int) -> RunDetail:
    """Everything about one run, samples included; an unknown run is a ``UsageError``."""
    record = store.get_run(run)
    loaded = tuple(store.results(record.id))
    env: dict[str, Any] = dict(loaded[0].environment) if loaded else {}
    items = []
    labels = ConfigLabels()
    for i, result in enumerate(loaded):
        ident = result.identity
        counts: dict[str, int] = {}
        for sample in result.samples:
            counts[sample.key] = counts.get(sample.key, 0) + 1
        metrics = []
        for key, summary in result.summaries.items():
            kind = key.partition(" ")[0]
            info = metric_info(key)
            metrics.append(MetricRow(
                key=key, unit=display_unit(summary.unit), count=counts.get(key, summary.count),
                p50=shown_stat(summary, "p50"), ci_low=shown_stat(summary, "ci_low"),
                ci_high=shown_stat(summary, "ci_high"), p10=shown_stat(summary, "p10"),
                p90=shown_stat(summary, "p90"), min=shown_stat(summary, "min"), max=shown_stat(summary, "max"),
                warnings=tuple(summary.warnings), operator=kind != "NET",
                accuracy=info is not None and info.family is Family.ACCURACY))
        metrics.sort(key=lambda m: (m.operator, m.accuracy, m.key))
        items.append(ResultDetail(
            result_index=i, model=ident.model_name, test=ident.test_identifier,
            backend=config_label(ident.framework, ident.framework_config, labels),
            device=ident.device_label, status=result.status.value, error=result.error,
            started_at=result.started_at, runtime_version=result.runtime_version,
            stop_reason=result.stop_reason.value if result.stop_reason else None,
            repetitions=result.repetitions, sample_count=len(result.samples), metrics=metrics,
            device_flags=[dict(f) for f in result.device_flags]))
    return RunDetail(run_info(store, record), env, items, loaded)
