"""The load-scenario section of the HTML report: a table, and latency against offered load.

For a server job, each LoadGen run of its search (or its one run at a given rate) is a point:
the offered rate against the p99 latency LoadGen measured, filled where LoadGen judged the run
valid, hollow where not, beside the latency bound. The highest filled point is the result.
A plot is drawn only when the runs offered two rates or more (a search, not one given rate);
with one rate the section says which. Inline SVG only (:mod:`benchlab.report.svg`), like
every report page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchlab.report.columns import html_section
from benchlab.report.scenario import SCENARIO_LEGEND, ScenarioRow, scenario_columns
from benchlab.report.svg import LEFT, PALETTE, RIGHT, WIDTH, esc, frame, num, svg

__all__ = ["scenario_html"]

_HEIGHT = 300


_POINTS = ("One point per LoadGen run, filled where the run was valid, hollow where not; "
           "dashed: the bound.")
#: What each generative plot shows, under its heading.
_TOKEN_NOTES = {
    "ttft_p99_ms": "The 99th percentile of the time to first token as LoadGen measured it, "
                   "from each query's arrival (queueing included). " + _POINTS,
    "tpot_p99_ms": "The 99th percentile of the time per output token. " + _POINTS,
    "goodput": "Queries per second that met every bound, as benchlab timed each query "
               "(vLLM's goodput): it follows the offered load until the bounds start to "
               "fail, then falls. " + _POINTS,
}


def _load_svg(label: str, rows: Sequence[ScenarioRow], figure: str = "percentile_ms",
              y_label: str = "p99 latency ms",
              bound: Callable[[ScenarioRow], float | None] = lambda r: r.latency_bound_ms,
              ) -> str:
    """A run's ``figure`` (y: p99 latency, or a generative server's TTFT or TPOT p99) against
    the offered rate (x), one series per job, the bounds dashed."""
    series = _series(rows, figure)
    bounds = [b for b in (bound(r) for r in rows) if b is not None]
    x, y, body = frame(series, "offered load (queries/s)", y_label, _HEIGHT, y_also=bounds)
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
                        f"queries/s → {esc(y_label)} {num(py)}, "
                        f"{'valid' if run.get('valid') else 'invalid'}</title></circle>")
        (last_x, last_y), _ = runs[-1]
        body.append(f'<text x="{x(last_x) + 8:.1f}" y="{y(last_y) + 4 + 14 * index:.1f}" '
                    f'fill="{colour}">{esc(name)}</text>')
    return svg("scenario", _HEIGHT, body, label)


def _series(rows: Sequence[ScenarioRow], figure: str) -> dict[str, list[tuple[float, float]]]:
    """Each job's LoadGen runs as (offered rate, ``figure``) points; jobs without any left
    out."""
    series = {f"{r.framework} {r.scenario}": [(float(run["target_qps"]),
                                               float(run[figure]))
                                              for run in r.runs
                                              if run.get("target_qps") and
                                              run.get(figure) is not None]
              for r in rows}
    return {name: points for name, points in series.items() if points}


def _offered(rows: Sequence[ScenarioRow], figure: str) -> set[float]:
    """The rates the runs of ``rows`` offered, where they measured ``figure``."""
    return {qps for points in _series(rows, figure).values() for qps, _ in points}


def _one_rate_note(model: str, what: str, rate: float) -> str:
    return (f'<p class="sub">{esc(model)}: every {esc(what)}LoadGen run offered {num(rate)} '
            "queries/s, so no plot is drawn against offered load; without --target-qps a "
            "server search tries several rates.</p>")


def scenario_html(rows: Sequence[ScenarioRow]) -> str:
    """The section (``""`` without scenario results)."""
    return html_section("scenarios", "Load scenarios", SCENARIO_LEGEND, scenario_columns(rows),
                        rows, _model_plots)


def _model_plots(model: str, rows: list[ScenarioRow]) -> list[str]:
    """One model's server searches: latency against offered load, or for generations each
    token figure against it."""
    parts: list[str] = []
    servers = [r for r in rows if r.runs and r.scenario.startswith("server")]
    generative = [r for r in servers if r.generative]
    servers = [r for r in servers if not r.generative]
    # A plot against offered load needs two rates at least: one given rate (--target-qps)
    # would stretch the axis around it and show a single column of dots.
    single: set[float] = set()
    drawn = False
    for short, kind, figure, bound in (
            ("TTFT p99 ms", "time to first token", "ttft_p99_ms", lambda r: r.ttft_bound_ms),
            ("TPOT p99 ms", "time per output token", "tpot_p99_ms", lambda r: r.tpot_bound_ms),
            ("goodput (queries/s)", "goodput", "goodput", lambda r: None)):
        rates = _offered(generative, figure)
        if len(rates) > 1:
            parts += [f"<h3>{esc(model)}: {kind} against offered load</h3>",
                      f'<p class="sub">{esc(_TOKEN_NOTES[figure])}</p>',
                      _load_svg(f"{model}: {kind} against offered load", generative,
                                figure, short, bound)]
            drawn = True
        else:
            single |= rates
    if not drawn and len(single) == 1:
        parts.append(_one_rate_note(model, "generative ", single.pop()))
    rates = _offered(servers, "percentile_ms")
    if len(rates) > 1:
        parts += [f"<h3>{esc(model)}: latency against offered load</h3>",
                  '<p class="sub">One point per LoadGen run: filled where LoadGen judged '
                  "it valid, hollow where not; the dashed line is the bound.</p>",
                  _load_svg(f"{model}: p99 latency against offered load", servers)]
    elif rates:
        parts.append(_one_rate_note(model, "", rates.pop()))
    return parts
