"""The load-scenario section of the HTML report: a table, and latency against offered load.

For a server job, each LoadGen run of its search (or its one run at a given rate) is a point:
the offered rate against the p99 latency LoadGen measured, filled where LoadGen judged the run
valid, hollow where not, beside the latency bound. The highest filled point is the result.
Inline SVG only (:mod:`benchlab.report.svg`), like every report page.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.report.columns import html_section
from benchlab.report.scenario import SCENARIO_COLUMNS, ScenarioRow
from benchlab.report.svg import LEFT, PALETTE, RIGHT, WIDTH, esc, frame, num, svg

__all__ = ["scenario_html"]

_HEIGHT = 300


def _load_svg(label: str, rows: Sequence[ScenarioRow]) -> str:
    """p99 latency (y) against the offered rate (x), one series per job, the bounds dashed."""
    series = {f"{r.framework} {r.scenario}": [(float(run["target_qps"]),
                                               float(run["percentile_ms"]))
                                              for run in r.runs
                                              if run.get("target_qps") and
                                              run.get("percentile_ms") is not None]
              for r in rows}
    series = {name: points for name, points in series.items() if points}
    bounds = [r.latency_bound_ms for r in rows if r.latency_bound_ms is not None]
    x, y, body = frame(series, "offered load (queries/s)", "p99 latency ms", _HEIGHT,
                       y_also=bounds)
    for bound in sorted(set(bounds)):
        body.append(f'<line x1="{LEFT}" y1="{y(bound):.1f}" x2="{WIDTH - RIGHT}" '
                    f'y2="{y(bound):.1f}" stroke="#c62828" stroke-dasharray="5,4"/>'
                    f'<text x="{WIDTH - RIGHT + 6}" y="{y(bound) + 4:.1f}" fill="#c62828">'
                    f"bound {num(bound)} ms</text>")
    valid_by_name = {f"{r.framework} {r.scenario}": r for r in rows}
    for index, (name, points) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        runs = sorted(zip(points, valid_by_name[name].runs), key=lambda pr: pr[0][0])
        path = " ".join(f"{x(px):.1f},{y(py):.1f}" for (px, py), _ in runs)
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                    'stroke-width="1.5"/>')
        for (px, py), run in runs:
            fill = colour if run.get("valid") else "#fff"
            body.append(f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="4.5" fill="{fill}" '
                        f'stroke="{colour}" stroke-width="2"><title>{esc(name)}: {num(px)} '
                        f"queries/s → p99 {num(py)} ms, "
                        f"{'valid' if run.get('valid') else 'invalid'}</title></circle>")
        (last_x, last_y), _ = runs[-1]
        body.append(f'<text x="{x(last_x) + 8:.1f}" y="{y(last_y) + 4 + 14 * index:.1f}" '
                    f'fill="{colour}">{esc(name)}</text>')
    return svg("scenario", _HEIGHT, body, label)


def scenario_html(rows: Sequence[ScenarioRow]) -> str:
    """The section (``""`` without scenario results)."""
    if not rows:
        return ""
    parts = html_section(
        "scenarios", "Load scenarios",
        "MLPerf LoadGen issued the queries and judged each run. latency: the scenario's "
        "percentile as LoadGen computes it (p90 single-stream; p99 of whole queries "
        "multi-stream; p99 server, queueing included); ES: LoadGen's early-stopping estimate; "
        "QPS: the highest server rate whose p99 met the bound; sample p50: one inference "
        "under the load (docs/scenarios.md).", SCENARIO_COLUMNS, rows)
    for model in dict.fromkeys(r.model for r in rows):
        servers = [r for r in rows if r.model == model and r.runs
                   and r.scenario.startswith("server")]
        if servers:
            parts += [f"<h3>{esc(model)}: latency against offered load</h3>",
                      '<p class="sub">One point per LoadGen run: filled where LoadGen judged '
                      "it valid, hollow where not; the dashed line is the bound.</p>",
                      _load_svg(f"{model}: p99 latency against offered load", servers)]
    return "\n".join(parts)
