"""The data behind the lab's pages and their JSON twins, read from the results store.

Every function here is pure: a store and some filters in, frozen dataclasses out. Overview and
trends read only the stored summaries (never the samples), through the store's own queries
(:mod:`benchlab.store.summary_rows`: the lab writes no SQL against the store's tables), so
they stay fast on stores with millions of samples; only a run's detail page
(:mod:`benchlab.lab.run_view`), which draws every sample of one run, loads samples.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from benchlab.report.history import runtime_changes
from benchlab.plugins import ConfigLabels
from benchlab.report.matrix import config_label, summary_in
from benchlab.schema.result import LATENCY_KEY, DetailKey, Status, Summary, device_label
from benchlab.store import ResultStore
from benchlab.store.summary_rows import SummaryRow, newest_rows, ok_rows, result_choices
from benchlab.tracking.changepoint import find_change_points
from benchlab.lab.display import display_unit, finite, shown_stat
from benchlab.lab.flags import FLAG_HISTORY, changed
from benchlab.lab.run_state import RunInfo, run_info, run_infos

__all__ = [
    "CompareRow", "Comparison", "Filtered", "Overview", "OverviewRow", "RunInfo", "TrendPoint",
    "TrendSeries", "Trends", "compare", "overview", "run_info", "run_infos", "trends",
]

TREND_LIMIT = 200
"""Points per trend series at most (the newest ones)."""


# Overview


@dataclass(frozen=True)
class OverviewRow:
    """One cell of the latest matrix: a job's newest result and its change since the last ok one.

    ``change`` is the relative change of the median (0.05 = 5% slower); ``significant`` says
    whether :func:`changed` flags it.
    """

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


@dataclass(frozen=True)
class Filtered:
    """A page's filters, as chosen, and the models, frameworks and devices it offers."""

    filters: Mapping[str, str]
    models: list[str]
    frameworks: list[str]
    devices: list[str]


@dataclass(frozen=True)
class Overview(Filtered):
    """The latest model × backend × device matrix with its filters and their choices."""

    rows: list[OverviewRow]

    @property
    def row_devices(self) -> list[str]:
        """The devices the shown rows were measured on (the matrix's columns)."""
        return sorted({row.device for row in self.rows})

    def grid(self) -> list[tuple[str, str, str, list[OverviewRow | None]]]:
        """Rows ``(model, test, backend, cells)`` with one cell per :attr:`row_devices`."""
        columns = self.row_devices
        table: dict[tuple[str, str, str], list[OverviewRow | None]] = {}
        for row in self.rows:
            cells = table.setdefault((row.model, row.test, row.backend), [None] * len(columns))
            cells[columns.index(row.device)] = row
        return [(m, t, b, cells) for (m, t, b), cells in table.items()]


def overview(store: ResultStore, filters: Mapping[str, str | None] | None = None) -> Overview:
    """The newest result of every job, filtered by ``model``, ``backend`` (framework) and
    ``device`` (label), each with the change of its latency median since the job's previous
    ok result.

    One windowed query keeps only each job's newest row and its two newest ok rows, so the
    work does not grow with the store's history.
    """
    wanted = {k: v for k, v in (filters or {}).items()
              if k in ("model", "backend", "device") and v}
    fetched = newest_rows(store, model=wanted.get("model"), framework=wanted.get("backend"),
                          device=wanted.get("device"), ok_history=FLAG_HISTORY + 2)
    by_job: dict[str, list[SummaryRow]] = {}
    for row in fetched:
        by_job.setdefault(row.job_key, []).append(row)
    labels = ConfigLabels()
    rows = [_overview_row(group, labels) for group in by_job.values()]
    rows.sort(key=lambda r: (r.model, r.test, r.backend, r.device))
    choices = result_choices(store)
    return Overview(filters=dict(wanted), models=choices.models, frameworks=choices.frameworks,
                    devices=choices.devices, rows=rows)


def _overview_row(group: Sequence[SummaryRow], labels: ConfigLabels) -> OverviewRow:
    latest = next(row for row in group if row.rank == 1)
    earlier = [row for row in group if row.id != latest.id
               and row.status == Status.OK.value and row.started_at <= latest.started_at]
    before = earlier[0] if earlier else None
    history = [Summary.from_dict(raw) for row in reversed(earlier[1:])
               if (raw := json.loads(row.summaries_json).get(LATENCY_KEY))]
    identity = json.loads(latest.identity_json)
    now = json.loads(latest.summaries_json).get(LATENCY_KEY)
    then = json.loads(before.summaries_json).get(LATENCY_KEY) if before is not None else None
    s_now = Summary.from_dict(now) if now else None
    s_then = Summary.from_dict(then) if then else None
    unit = display_unit(s_now.unit) if s_now else "ms"
    p50 = shown_stat(s_now, "p50") if s_now else None
    prev = shown_stat(s_then, "p50") if s_then and display_unit(s_then.unit) == unit else None
    change = (p50 / prev - 1.0) if p50 is not None and prev else None
    lo, hi = (shown_stat(s_now, "ci_low"), shown_stat(s_now, "ci_high")) if s_now else (None, None)
    p_lo, p_hi = (shown_stat(s_then, "ci_low"), shown_stat(s_then, "ci_high")) if prev else (None, None)
    significant = bool(s_now and s_then and prev is not None
                       and changed(s_then, s_now, history=history))
    details = json.loads(latest.details_json)
    prev_details = json.loads(before.details_json) if before is not None else {}
    return OverviewRow(
        model=latest.model_name, test=latest.test_identifier, framework=latest.framework,
        backend=config_label(latest.framework, identity.get("framework_config") or {}, labels),
        device=device_label(latest.target, latest.device), job_key=latest.job_key,
        status=latest.status, error=latest.error, run_id=int(latest.run_id),
        started_at=latest.started_at, runtime_version=details.get(DetailKey.RUNTIME_VERSION),
        unit=unit, p50=p50,
        ci_low=lo, ci_high=hi, prev_p50=prev, prev_ci_low=p_lo, prev_ci_high=p_hi,
        prev_run_id=int(before.run_id) if before is not None else None,
        prev_runtime_version=prev_details.get(DetailKey.RUNTIME_VERSION),
        change=finite(change), significant=significant,
    )


# Trends


@dataclass(frozen=True)
class TrendPoint:
    """One ok measurement of the metric: its median and the median's confidence interval."""

    run_id: int
    result_id: int
    started_at: str
    commit: str | None
    runtime_version: str | None
    p50: float | None
    ci_low: float | None
    ci_high: float | None
    count: int
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrendMark:
    """Something that happened between two points: a change point or a runtime release."""

    index: int
    kind: str
    text: str


@dataclass(frozen=True)
class TrendSeries:
    """One job's points, oldest first, with its change points and runtime changes."""

    job_key: str
    label: str
    unit: str
    points: list[TrendPoint]
    marks: list[TrendMark] = field(default_factory=list)


@dataclass(frozen=True)
class Trends(Filtered):
    """The chosen model × backend (× device) × metric over time, one series per job."""

    series: list[TrendSeries]
    metrics: list[str]


def _trend_choices(store: ResultStore, model: str | None, backend: str | None,
                   device: str | None) -> tuple[list[str], list[str], list[str], tuple[str, ...]]:
    """The models with an ok result, and the chosen model's backends and devices with one.

    Returns the three lists and the choice ``(model, backend, device)``: a model, backend or
    device that is missing or that the model never ran ok on falls back to the first one it
    did (all devices for a device), so picking another model never lands on an empty page.
    """
    models = result_choices(store, ok_only=True).models
    model = model or (models[0] if models else "")
    backends = result_choices(store, ok_only=True, model=model).frameworks
    backend = backend if backend in backends else (backends[0] if backends else "")
    devices = result_choices(store, ok_only=True, model=model, framework=backend).devices
    return models, backends, devices, (model, backend, device if device in devices else "")


def trends(store: ResultStore, model: str | None = None, backend: str | None = None,
           device: str | None = None, metric: str | None = None,
           limit: int = TREND_LIMIT) -> Trends:
    """Points over time of one metric for a model on a backend, one series per job (test,
    backend options, device), with change points (:mod:`benchlab.tracking.changepoint` on the
    log-medians) and runtime-version changes marked.

    The choices offered are what the model has ok results for: its backends, the devices it
    ran on with the chosen backend, and the metrics those results carry. A missing choice, or
    one the model does not have, picks the first it does (the median latency for the
    metric), so the page always shows something.
    """
    models, frameworks, devices, (model, backend, device) = _trend_choices(
        store, model, backend, device)
    # Every series keeps up to ``limit`` points; five series' worth is read at most.
    fetched = ok_rows(store, model=model, framework=backend, device=device or None,
                      limit=limit * 5)
    rows = [(row, json.loads(row.summaries_json)) for row in reversed(fetched)]
    keys = sorted({key for _, summaries in rows for key in summaries},
                  key=lambda k: (not k.startswith("NET "), k))
    if metric not in keys:
        metric = LATENCY_KEY if LATENCY_KEY in keys or not keys else keys[0]
    grouped: dict[str, list[tuple[SummaryRow, Summary]]] = {}
    for row, summaries in rows:
        raw = summaries.get(metric)
        if raw is not None:
            grouped.setdefault(row.job_key, []).append((row, Summary.from_dict(raw)))
    labels = ConfigLabels()
    series = [_series(key, found[-limit:], labels) for key, found in grouped.items()]
    series.sort(key=lambda s: s.label)
    filters = {"model": model, "backend": backend, "device": device, "metric": metric}
    return Trends(filters=filters, models=models, frameworks=frameworks, devices=devices,
                  series=series, metrics=keys)


def _series(job_key: str, rows: Sequence[tuple[SummaryRow, Summary]],
            labels: ConfigLabels) -> TrendSeries:
    first_row, first = rows[0]
    identity = json.loads(first_row.identity_json)
    backend = config_label(identity["framework"], identity.get("framework_config") or {}, labels)
    label = (f"{first_row.test_identifier} · {backend}"
             f" · {device_label(first_row.target, first_row.device)}")
    unit = display_unit(first.unit)
    points = []
    for row, summary in rows:
        details = json.loads(row.details_json)
        points.append(TrendPoint(
            run_id=int(row.run_id), result_id=int(row.id), started_at=row.started_at,
            commit=details.get(DetailKey.COMMIT),
            runtime_version=details.get(DetailKey.RUNTIME_VERSION),
            p50=shown_stat(summary, "p50"), ci_low=shown_stat(summary, "ci_low"),
            ci_high=shown_stat(summary, "ci_high"), count=summary.count,
            warnings=tuple(summary.warnings)))
    marks = [TrendMark(c.index, "runtime", c.text) for c in runtime_changes(points)]
    logs = [[math.log(p.p50)] for p in points if p.p50 and p.p50 > 0]
    if len(logs) == len(points):
        # One log-median per run: the same Welch t-test the tracker uses on log-ratios.
        for cp in find_change_points(logs, min_effect=0.02):
            marks.append(TrendMark(cp.index, "change", f"{cp.change * 100:+.1f}%"))
    return TrendSeries(job_key, label, unit, points, sorted(marks, key=lambda m: m.index))


# Compare


@dataclass(frozen=True)
class CompareRow:
    """One job measured in both runs: both medians with their CIs and B's ratio over A's.

    ``ratio_low``/``ratio_high`` bound the ratio by the two intervals' extremes (conservative;
    the runs are not paired); ``verdict`` is ``faster``/``slower`` only when :func:`changed`
    flags the change, else ``overlap``.
    """

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


@dataclass(frozen=True)
class Comparison:
    """An unpaired comparison of two stored runs, metric by metric per matched job."""

    run_a: RunInfo | None
    run_b: RunInfo | None
    metric: str
    rows: list[CompareRow]
    only_a: list[str]
    only_b: list[str]
    matched_ignoring_device: bool
    runs: list[RunInfo]
    """Recent runs, the choices of the page's two run pickers."""
    unpaired: bool = True
    """Always true: two stored runs are not paired measurements (say so wherever shown)."""

    def to_json(self) -> dict[str, Any]:
        """The API's form (``ComparisonOut``): each run flat, as :meth:`RunInfo.to_json`."""
        out = {shown.name: getattr(self, shown.name) for shown in fields(self)}
        out.update(run_a=self.run_a and self.run_a.to_json(),
                   run_b=self.run_b and self.run_b.to_json(),
                   runs=[run.to_json() for run in self.runs])
        return out


def _cells(store: ResultStore, run: RunInfo, metric: str) -> dict[tuple[str, ...], Any]:
    found = {}
    labels = ConfigLabels()
    for result in store.results(run.record.id, status=Status.OK, with_samples=False):
        ident = result.identity
        key = (ident.model_name, ident.test_identifier,
               config_label(ident.framework, ident.framework_config, labels), ident.device_label)
        summary = result.summaries.get(metric)
        if summary is not None:
            found[key] = summary
    return found


def compare(store: ResultStore, run_a: str | int | None, run_b: str | int | None,
            metric: str = LATENCY_KEY) -> Comparison:
    """Run B against run A on ``metric``: per job, both medians, their CIs and B/A.

    Jobs are matched by model, test, backend options and device; when no job matches that way
    (two runs on different devices) they are matched ignoring the device. Missing runs default
    to the two newest (A the older). An unknown run is a :class:`~benchlab.errors.UsageError`.
    """
    runs = run_infos(store, store.list_runs(100))
    if run_b in (None, "") and runs:
        run_b = runs[0].record.id
    b = run_info(store, store.get_run(run_b)) if run_b not in (None, "") else None
    if run_a in (None, "") and b is not None:
        # Default A: the run just before B, so "compare with…" from a run page just works.
        run_a = next((r.record.id for r in runs if r.record.id < b.record.id), None)
    a = run_info(store, store.get_run(run_a)) if run_a not in (None, "") else None
    if a is None or b is None:
        return Comparison(a, b, metric, [], [], [], False, runs)
    cells_a, cells_b = _cells(store, a, metric), _cells(store, b, metric)
    ignoring = not (cells_a.keys() & cells_b.keys())
    if ignoring:
        cells_a = {k[:3] + ("",): v for k, v in cells_a.items()}
        cells_b = {k[:3] + ("",): v for k, v in cells_b.items()}
    rows = [_compare_row(key, cells_a[key], cells_b[key])
            for key in sorted(cells_a.keys() & cells_b.keys())]
    name = " · ".join
    return Comparison(a, b, metric, rows,
                      [name(k).strip(" ·") for k in sorted(cells_a.keys() - cells_b.keys())],
                      [name(k).strip(" ·") for k in sorted(cells_b.keys() - cells_a.keys())],
                      ignoring and bool(rows), runs)


def _compare_row(key: tuple[str, ...], sa: Summary, sb: Summary) -> CompareRow:
    unit = display_unit(sa.unit)
    a = [summary_in(sa, unit, attr) for attr in ("p50", "ci_low", "ci_high")]
    b = [summary_in(sb, unit, attr) for attr in ("p50", "ci_low", "ci_high")]
    ratio = low = high = None
    verdict = "overlap"
    if None not in a and None not in b and a[0] and a[1] and a[2]:
        ratio, low, high = b[0] / a[0], b[1] / a[2], b[2] / a[1]
        # The overview's rule, so that the two pages never disagree about one change.
        if changed(sa, sb):
            if ratio > 1:
                verdict = "slower" if unit == "ms" else "higher"
            else:
                verdict = "faster" if unit == "ms" else "lower"
    return CompareRow(key[0], key[1], key[2], key[3], unit,
                      *(finite(v) for v in a), sa.count, *(finite(v) for v in b), sb.count,
                      finite(ratio), finite(low), finite(high), verdict)

