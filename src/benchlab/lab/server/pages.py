"""The lab's HTML pages: overview, trends, compare, devices, queue and run detail.

Pages are rendered on the server with Jinja2; charts are inline SVG drawn here with the report
helpers of :mod:`benchlab.report.svg`, so a page loads no script and nothing from elsewhere.
Every filter is a plain GET form, so any view is a link. The pages' data comes from
:mod:`benchlab.lab.views` (results) and the lab's registry and queue modules.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from benchlab.errors import UsageError
from benchlab.lab import run_view, views
from benchlab.lab.devices import COUNT_TABS, device_counts, device_events, get_device, list_devices
from benchlab.lab.jobs import STUCK_AFTER_S, get_job, list_jobs, queue_summary, route_problem
from benchlab.lab.reports import ab_reports
from benchlab.lab.server.auth import get_lab
from benchlab.lab.server.page_session import PageRefusal, current_session, page_reader
from benchlab.report.matrix import matrix_cells
from benchlab.report.matrix_html import matrix_html
from benchlab.report.svg import WIDTH, domain, esc, left_axis, num, scale, short, svg

__all__ = ["error_page", "install", "render", "router"]

_HERE = Path(__file__).parent
_PALETTE = ("#3b6fb6", "#e07b39", "#2e7d32", "#8e44ad", "#00838f", "#f9a825", "#6d4c41",
            "#ad1457")

router = APIRouter(dependencies=[Depends(page_reader)], include_in_schema=False)


def install(app: FastAPI, beside: Sequence[APIRouter] = ()) -> None:
    """Add the pages, the routers ``beside`` them (signing in, the pages' admin forms, their
    JSON twins under ``/api/v1``: the app names them, as they render with this module) and
    ``/static`` to ``app``."""
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    templates.env.filters.update(age=age, when=when, num=fmt, pct=pct)
    app.state.lab_templates = templates
    app.include_router(router)
    for other in beside:
        app.include_router(other)
    app.add_exception_handler(PageRefusal, _refused)
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="lab-static")


# Formatting helpers (also Jinja filters)


def age(seconds: float | None) -> str:
    """``12 s ago``, ``5 min ago``, ``3 h ago``, ``2 d ago``."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    for limit, div, unit in ((120, 1, "s"), (7200, 60, "min"), (172800, 3600, "h")):
        if seconds < limit:
            return f"{seconds / div:.0f} {unit} ago"
    return f"{seconds / 86400:.0f} d ago"


def _epoch(text: str) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return math.nan


def when(value: str | float | None) -> str:
    """An ISO time or epoch as its age (``3 h ago``)."""
    if value in (None, ""):
        return "–"
    then = float(value) if isinstance(value, int | float) else _epoch(str(value))
    return age(time.time() - then)


def fmt(value: float | None) -> str:
    """A number with four significant digits, ``–`` when missing."""
    return "–" if value is None else num(value)


def pct(value: float | None) -> str:
    """A relative change as ``+4.2%``."""
    return "–" if value is None else f"{value * 100:+.1f}%"


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` with ``context``, the time, and who is signed in (the header
    greets them, and forms that write carry their session's CSRF token)."""
    templates: Jinja2Templates = request.app.state.lab_templates
    context.setdefault("now", time.time())
    if "session" not in context:
        context["session"] = current_session(request)
    return templates.TemplateResponse(request, name, context, status_code=status_code)


def error_page(request: Request, title: str, message: str, status_code: int) -> HTMLResponse:
    """The error page: a title and a sentence, with the overview one click away."""
    # A 5xx may mean the database is away: do not ask it who is signed in.
    extra = {"session": None} if status_code >= 500 else {}
    return render(request, "error.html", status_code=status_code, title=title,
                  message=message, **extra)


def _refused(request: Request, exc: Exception) -> HTMLResponse:
    assert isinstance(exc, PageRefusal)
    titles = {403: "Not allowed", 404: "Not found", 409: "Not possible now"}
    return error_page(request, titles.get(exc.status_code, "Refused"), exc.message,
                      status_code=exc.status_code)


def _missing(request: Request, what: str) -> HTMLResponse:
    return error_page(request, "Not found", what, status_code=404)


# Charts


def _log(v: float) -> float:
    return math.log10(v) if v and v > 0 else math.nan


def _log_axis(x: Any, lo: float, hi: float, top: float, y: float, title: str,
              prefix: str = "") -> list[str]:
    """A bottom axis for log10 data with ticks at 1, 2 and 5 times powers of ten."""
    out = [f'<line x1="{x(lo):.1f}" y1="{y:.1f}" x2="{x(hi):.1f}" y2="{y:.1f}" stroke="#888"/>']
    marks = [m * 10.0 ** e for e in range(math.floor(lo) - 1, math.ceil(hi) + 1)
             for m in (1, 2, 5)]
    marks = [v for v in marks if lo <= math.log10(v) <= hi] or [10 ** lo, 10 ** hi]
    if len(marks) > 12:  # several decades: powers of ten only
        marks = [v for v in marks if round(v / 10 ** math.floor(math.log10(v))) == 1] or marks
    for value in marks:
        px = x(math.log10(value))
        out.append(f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{y:.1f}" '
                   f'stroke="#eee"/><text x="{px:.1f}" y="{y + 16:.1f}" '
                   f'text-anchor="middle">{prefix}{esc(f"{value:g}")}</text>')
    out.append(f'<text x="{(x(lo) + x(hi)) / 2:.1f}" y="{y + 34:.1f}" text-anchor="middle" '
               f'fill="#555">{esc(title)}</text>')
    return out


def _overview_svg(rows: Sequence[views.OverviewRow]) -> str:
    """Each cell's median (dot) with its 95% CI (bar) and the previous run's (hollow), log x."""
    rows = [r for r in rows if r.p50 and r.unit == "ms"][:60]
    if not rows:
        return ""
    left, right, top, row_h = 300, 120, 10, 22
    values = [_log(v) for r in rows for v in (r.ci_low, r.ci_high, r.prev_p50, r.p50) if v]
    lo, hi = domain(values, 0.08)
    x = scale(lo, hi, left, WIDTH - right)
    bottom = top + row_h * len(rows)
    body = _log_axis(x, lo, hi, top, bottom, "p50 ms (log scale)")
    for i, r in enumerate(rows):
        cy = top + row_h * (i + 0.5)
        colour = "#c62828" if r.significant and (r.change or 0) > 0 else (
            "#2e7d32" if r.significant else "#3b6fb6")
        body.append(f'<text x="{left - 8}" y="{cy + 4:.0f}" text-anchor="end">'
                    f"{esc(short(f'{r.model} · {r.backend} · {r.device}', 46))}</text>")
        if r.ci_low and r.ci_high:
            body.append(f'<rect x="{x(_log(r.ci_low)):.1f}" y="{cy - 3:.1f}" height="6" '
                        f'width="{max(1.0, x(_log(r.ci_high)) - x(_log(r.ci_low))):.1f}" '
                        f'fill="{colour}" fill-opacity=".35"/>')
        if r.prev_p50:
            body.append(f'<circle cx="{x(_log(r.prev_p50)):.1f}" cy="{cy:.1f}" r="4" '
                        f'fill="none" stroke="#777"><title>previous {num(r.prev_p50)} ms'
                        "</title></circle>")
        body.append(f'<circle cx="{x(_log(r.p50)):.1f}" cy="{cy:.1f}" r="4" fill="{colour}">'
                    f"<title>{num(r.p50)} ms</title></circle><text x=\"{WIDTH - right + 8}\" "
                    f'y="{cy + 4:.0f}">{num(r.p50)} ms {esc(pct(r.change)) if r.change else ""}'
                    "</text>")
    return svg("overview", bottom + 44, body, "latest p50 per cell with its 95% CI")


def _trends_svg(series: Sequence[views.TrendSeries], title: str) -> str:
    """Median over time per series with its CI as a band; change points and releases marked."""
    drawn = [s for s in series if any(p.p50 is not None for p in s.points)]
    if not drawn:
        return ""
    left, right, top, height = 70, 30, 30, 280
    times = [_epoch(p.started_at) for s in drawn for p in s.points]
    t_lo, t_hi = domain(times, 0.03)
    x = scale(t_lo, t_hi, left, WIDTH - right)
    ys = [v for s in drawn for p in s.points for v in (p.ci_low, p.ci_high, p.p50)
          if v is not None]
    lo, hi = domain(ys)
    y = scale(lo, hi, top + height, top)
    bottom = top + height
    body = [f'<line x1="{left}" y1="{bottom}" x2="{WIDTH - right}" y2="{bottom}" stroke="#888"/>',
            *left_axis(y, lo, hi, left, WIDTH - right, num),
            f'<text x="14" y="{top + height / 2:.0f}" text-anchor="middle" fill="#555" '
            f'transform="rotate(-90 14 {top + height / 2:.0f})">p50 {esc(drawn[0].unit)} '
            "(band: 95% CI)</text>"]
    for tick in (t_lo + (t_hi - t_lo) * f for f in (0.05, 0.35, 0.65, 0.95)):
        body.append(f'<text x="{x(tick):.1f}" y="{bottom + 18}" text-anchor="middle">'
                    f"{datetime.fromtimestamp(tick, UTC).strftime('%Y-%m-%d %H:%M')}</text>")
    for n, s in enumerate(drawn):
        colour = _PALETTE[n % len(_PALETTE)]
        pts = [(x(_epoch(p.started_at)), p) for p in s.points if p.p50 is not None]
        if all(p.ci_low is not None and p.ci_high is not None for _, p in pts):
            upper = " L".join(f"{px:.1f},{y(p.ci_high):.1f}" for px, p in pts)
            lower = " L".join(f"{px:.1f},{y(p.ci_low):.1f}" for px, p in reversed(pts))
            body.append(f'<path class="band" d="M{upper} L{lower} Z" fill="{colour}" '
                        'fill-opacity=".15" stroke="none"/>')
        line = " ".join(f"{px:.1f},{y(p.p50):.1f}" for px, p in pts)
        body.append(f'<polyline points="{line}" fill="none" stroke="{colour}" '
                    'stroke-width="1.6"/>')
        for px, p in pts:
            tag = p.commit or p.runtime_version or ""
            body.append(f'<circle cx="{px:.1f}" cy="{y(p.p50):.1f}" r="3" fill="{colour}">'
                        f"<title>{esc(p.started_at[:19])} run {p.run_id} {esc(tag)}: "
                        f"{num(p.p50)} [{fmt(p.ci_low)}, {fmt(p.ci_high)}]</title></circle>")
        for mark in s.marks:
            if not 0 < mark.index < len(s.points):
                continue
            mx = (x(_epoch(s.points[mark.index - 1].started_at))
                  + x(_epoch(s.points[mark.index].started_at))) / 2
            mc = "#c62828" if mark.kind == "change" else "#b26a00"
            label = ("change " if mark.kind == "change" else "runtime ") + mark.text
            body.append(f'<line class="mark-{mark.kind}" x1="{mx:.1f}" y1="{top - 10}" '
                        f'x2="{mx:.1f}" y2="{bottom}" stroke="{mc}" stroke-dasharray="5 4"/>'
                        f'<text x="{mx + 4:.1f}" y="{top - 14 + 12 * (mark.kind == "change")}" '
                        f'fill="{mc}">{esc(label)}</text>')
    return svg("trends", bottom + 30, body, title)


def _compare_svg(rows: Sequence[views.CompareRow]) -> str:
    """B/A per job with its conservative interval, log scale around 1."""
    rows = [r for r in rows if r.ratio][:60]
    if not rows:
        return ""
    left, right, top, row_h = 300, 120, 10, 22
    vals = [_log(v) for r in rows for v in (r.ratio_low, r.ratio_high, r.ratio) if v]
    span = max(0.02, *(abs(v) for v in vals))
    x = scale(-span * 1.1, span * 1.1, left, WIDTH - right)
    bottom = top + row_h * len(rows)
    body = _log_axis(x, -span * 1.1, span * 1.1, top, bottom,
                     "B ÷ A (log scale); left of ×1: B is lower", prefix="×")
    body.append(f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{bottom}" '
                'stroke="#555"/>')
    colours = {"slower": "#c62828", "higher": "#c62828", "faster": "#2e7d32", "lower": "#2e7d32"}
    for i, r in enumerate(rows):
        cy, colour = top + row_h * (i + 0.5), colours.get(r.verdict, "#6d6d6d")
        body.append(f'<text x="{left - 8}" y="{cy + 4:.0f}" text-anchor="end">'
                    f"{esc(short(f'{r.model} · {r.backend} · {r.device}'.strip(' ·'), 46))}"
                    "</text>")
        if r.ratio_low and r.ratio_high:
            body.append(f'<line x1="{x(_log(r.ratio_low)):.1f}" y1="{cy:.1f}" '
                        f'x2="{x(_log(r.ratio_high)):.1f}" y2="{cy:.1f}" stroke="{colour}" '
                        'stroke-width="2"/>')
        body.append(f'<rect x="{x(_log(r.ratio)) - 4:.1f}" y="{cy - 4:.1f}" width="8" '
                    f'height="8" fill="{colour}"/><text x="{WIDTH - right + 8}" '
                    f'y="{cy + 4:.0f}">×{r.ratio:.3f} {esc(r.verdict)}</text>')
    return svg("compare", bottom + 44, body, "run B over run A per job")


def _report_body(html: str) -> str:
    """The inside of a report page's ``<main>``, without its title (the page has its own)."""
    inner = html.split("<main>", 1)[-1].rsplit("</main>", 1)[0]
    return re.sub(r"<h1>.*?</h1>", "", inner, count=1, flags=re.S)


# Pages


def _q(request: Request, name: str) -> str:
    # PostgreSQL text cannot hold NUL: a filter carrying one can match nothing, so drop it.
    return request.query_params.get(name, "").replace("\x00", "").strip()


@router.get("/", response_class=HTMLResponse)
def overview_page(request: Request) -> HTMLResponse:
    """The latest model × backend × device matrix, filtered by model, backend and device."""
    store = get_lab(request).store
    data = views.overview(store, {k: _q(request, k) for k in ("model", "backend", "device")})
    return render(request, "overview.html", title="Overview", nav="overview", data=data,
                  chart=Markup(_overview_svg(data.rows)),
                  runs=views.run_infos(store, store.list_runs(10)))


@router.get("/trends", response_class=HTMLResponse)
def trends_page(request: Request) -> HTMLResponse:
    """One metric of a model on a backend over time, with CI bands and change points."""
    data = views.trends(get_lab(request).store, _q(request, "model") or None,
                        _q(request, "backend") or None, _q(request, "device") or None,
                        _q(request, "metric") or None)
    f = data.filters
    title = f"{f['model']} on {f['backend']}: {f['metric']}"
    reports = ab_reports(get_lab(request).store, model=f["model"] or None, limit=20)
    return render(request, "trends.html", title="Trends", nav="trends", data=data,
                  chart=Markup(_trends_svg(data.series, title)), chart_title=title,
                  reports=reports)


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request) -> HTMLResponse:
    """Two stored runs side by side: per job, both medians, their CIs and the ratio."""
    try:
        data = views.compare(get_lab(request).store, _q(request, "a") or None,
                             _q(request, "b") or None, _q(request, "metric") or "NET latency")
    except UsageError as exc:
        return _missing(request, str(exc))
    return render(request, "compare.html", title="Compare", nav="compare", data=data,
                  chart=Markup(_compare_svg(data.rows)),
                  reports=ab_reports(get_lab(request).store, limit=20))


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: int) -> HTMLResponse:
    """One lab job: its request, route, device, attempts and outcome, and its A/B report."""
    try:
        job = get_job(get_lab(request).store, job_id)
    except UsageError as exc:
        return _missing(request, str(exc))
    return render(request, "job.html", title=f"Job {job.id}", nav="queue", job=job)


@router.get("/devices", response_class=HTMLResponse)
def devices_page(request: Request) -> HTMLResponse:
    """The device registry with count tabs (all, alive, busy, idle, offline, quarantined)."""
    tab = _q(request, "tab") or "all"
    if tab not in COUNT_TABS:
        tab = "all"
    devices = list_devices(get_lab(request).store)
    return render(request, "devices.html", title="Devices", nav="devices", tab=tab,
                  tabs=COUNT_TABS, counts=device_counts(devices),
                  devices=[d for d in devices if d.in_tab(tab)])


@router.get("/devices/{device_id}", response_class=HTMLResponse)
def device_page(request: Request, device_id: str) -> HTMLResponse:
    """One device: properties, state × health, and its history (health checks and more)."""
    store = get_lab(request).store
    try:
        device = get_device(store, device_id)
    except UsageError as exc:
        return _missing(request, str(exc))
    return render(request, "device.html", title=device.id, nav="devices", device=device,
                  events=device_events(store, device_id, limit=100),
                  jobs=list_jobs(store, device=device_id, limit=20))


@router.get("/queue", response_class=HTMLResponse)
def queue_page(request: Request) -> HTMLResponse:
    """Jobs per queue and status, the oldest waiting job's age, and why a stuck one waits."""
    store = get_lab(request).store
    devices = list_devices(store)
    waiting = list_jobs(store, status="waiting", limit=200)
    problems = {job.id: route_problem(job.route_kind, job.route, devices) for job in waiting}
    return render(request, "queue.html", title="Queue", nav="queue", rows=queue_summary(store),
                  waiting=waiting, problems=problems, recent=list_jobs(store, limit=30),
                  stuck_after=STUCK_AFTER_S, base_url=str(request.base_url).rstrip("/"))


@router.get("/runs/{run}", response_class=HTMLResponse)
def run_page(request: Request, run: str) -> HTMLResponse:
    """One run: environment, every result's metrics and the matrix report's charts."""
    try:
        data = run_view.run_detail(get_lab(request).store, run)
    except UsageError as exc:
        return _missing(request, str(exc))
    report = matrix_html(matrix_cells(data.results), title="") if data.results else ""
    return render(request, "run.html", title=f"Run {data.run.record.id}", nav="runs", data=data,
                  report=Markup(_report_body(report)) if report else "")
