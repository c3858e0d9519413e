"""A self-contained HTML page of a comparison: verdict summary, table and inline-SVG plots.

The page is meant to be archived as a CI artifact and opened anywhere, offline, years later, so
it carries everything inline (CSS and SVG), loads nothing and runs no script. Plots are drawn
with a few small helpers rather than a plotting library to keep benchlab's dependencies as
they are. Every string that comes from a user (labels, job names, operators, notes) passes
through :func:`html.escape` before it reaches the page.
"""

from __future__ import annotations

import math

from benchlab.schema.comparison import Comparison, MetricComparison, Outcome
from benchlab.report.ab import OUTCOME_LOOKS, effective_outcome, fidelity_cell, fidelity_lines
from benchlab.report.svg import CSS as _CSS
from benchlab.report.svg import LEFT as _LEFT
from benchlab.report.svg import RIGHT as _RIGHT
from benchlab.report.svg import WIDTH as _WIDTH
from benchlab.report.svg import axis as _axis
from benchlab.report.svg import domain as _domain
from benchlab.report.svg import esc as _e
from benchlab.report.svg import median as _median
from benchlab.report.svg import num as _num
from benchlab.report.svg import quantile as _quantile
from benchlab.report.svg import scale as _scale
from benchlab.report.svg import short as _short
from benchlab.report.svg import svg as _svg

__all__ = ["comparison_html"]

_CONTROL = "#3b6fb6"
_TREATMENT = "#e07b39"


def _words(outcome: Outcome) -> str:
    """The verdict as a reader says it: ``no change`` for ``no_change``."""
    return outcome.value.replace("_", " ")


def _pct(value: float, digits: int = 2) -> str:
    if not math.isfinite(value):
        return "n/a"
    return "0%" if value == 0 else f"{value * 100:+.{digits}f}%"


def _tick_pct(value: float) -> str:
    return "0%" if abs(value) < 1e-12 else f"{value * 100:+.3g}%"


def _badge(metric: MetricComparison) -> str:
    outcome = effective_outcome(metric)
    if metric.verified is False:
        text = "not confirmed by the verify re-run"
    else:
        text = _words(outcome) + (" (verified)" if metric.verified else "")
    colour = OUTCOME_LOOKS[outcome].colour
    return f'<span class="badge" style="background:{colour}">{_e(text)}</span>'


def _name(metric: MetricComparison) -> str:
    return f"{metric.job} · {metric.metric.removeprefix('NET ')}"


def _strip_svg(metric: MetricComparison, labels: tuple[str, str]) -> str:
    """Both sides' per-process values on one axis: dots, IQR box, median, and pair links."""
    sides = ((metric.control, _CONTROL, "control"), (metric.treatment, _TREATMENT, "treatment"))
    top, row_h, half = 14.0, 70.0, 22.0
    axis_y = top + 2 * row_h + 8
    title = f"{_name(metric)}: per-process values"
    lo, hi = _domain([*metric.control, *metric.treatment])
    x = _scale(lo, hi, _LEFT, _WIDTH - _RIGHT)
    body = _axis(x, lo, hi, top, axis_y, _num, f"{metric.metric.removeprefix('NET ')} per process ({metric.unit})")
    centres = [top + row_h * (i + 0.5) for i in range(2)]

    def jitter(i: int) -> float:
        # Golden-ratio offsets spread the dots evenly and identically on every render.
        return ((i * 0.618034) % 1.0 - 0.5) * 1.6 * half

    # Pair links first, so the dots are drawn over them; they show the pairing by index.
    for i, (c, t) in enumerate(zip(metric.control, metric.treatment)):
        if math.isfinite(c) and math.isfinite(t):
            body.append(f'<line x1="{x(c):.1f}" y1="{centres[0] + jitter(i):.1f}" '
                        f'x2="{x(t):.1f}" y2="{centres[1] + jitter(i):.1f}" stroke="#999" '
                        f'stroke-opacity="0.22"/>')
    for (values, colour, role), cy, label in zip(sides, centres, labels):
        body.append(f'<text x="{_LEFT - 14}" y="{cy - 3:.1f}" text-anchor="end" '
                    f'font-weight="600" fill="{colour}">{role}</text>'
                    f'<text x="{_LEFT - 14}" y="{cy + 13:.1f}" text-anchor="end" fill="#555">'
                    f'{_e(_short(label, 30))}</text>')
        finite = sorted(v for v in values if math.isfinite(v))
        if finite:
            q1, med, q3 = (_quantile(finite, q) for q in (0.25, 0.5, 0.75))
            body.append(f'<rect x="{x(q1):.1f}" y="{cy - half:.1f}" width="'
                        f'{max(x(q3) - x(q1), 1):.1f}" height="{2 * half:.1f}" fill="{colour}" '
                        f'fill-opacity="0.08" stroke="{colour}" stroke-opacity="0.6"/>')
        for i, value in enumerate(values):
            if math.isfinite(value):
                body.append(f'<circle class="pt {role}" cx="{x(value):.1f}" '
                            f'cy="{cy + jitter(i):.1f}" r="3.6" fill="{colour}" '
                            f'fill-opacity="0.75" stroke="#fff" stroke-width="0.6">'
                            f"<title>{role} process {i + 1}: {_num(value)} "
                            f"{_e(metric.unit)}</title></circle>")
        if finite:
            body.append(f'<line x1="{x(med):.1f}" y1="{cy - half - 4:.1f}" x2="{x(med):.1f}" '
                        f'y2="{cy + half + 4:.1f}" stroke="{colour}" stroke-width="3"/>'
                        f'<text x="{_WIDTH - _RIGHT + 12}" y="{cy + 4:.1f}">median '
                        f"{_num(med)} {_e(metric.unit)} (n={len(finite)})</text>")
    return _svg("strip", axis_y + 44, body, title)


def _forest_svg(comparison: Comparison) -> str:
    """One row per metric: the change with its interval against 0 and the no-change zone."""
    up = comparison.min_effect
    down = -(1.0 - 1.0 / (1.0 + up))  # δ′: the same distance as δ in log space, as decided
    top, row_h = 34.0, 26.0
    axis_y = top + row_h * len(comparison.metrics) + 6
    points = [0.0, up, down]
    for m in comparison.metrics:
        points += [m.estimate.change, m.estimate.ci_low, m.estimate.ci_high]
    lo, hi = _domain(points, pad=0.08)
    x = _scale(lo, hi, _LEFT, _WIDTH - _RIGHT)
    body = [(f'<rect x="{x(down):.1f}" y="{top - 6:.1f}" width="{x(up) - x(down):.1f}" '
             f'height="{axis_y - top + 6:.1f}" fill="#e9e9e9"/>')]
    body += _axis(x, lo, hi, top - 6, axis_y, _tick_pct,
                  "change of treatment over control (Hodges-Lehmann estimate and interval)")
    body.append(f'<line x1="{x(0):.1f}" y1="{top - 6:.1f}" x2="{x(0):.1f}" y2="{axis_y:.1f}" '
                f'stroke="#444"/>')
    if up > 0:
        for value, name, anchor in ((down, "−δ′", "end"), (up, "+δ", "start")):
            body.append(f'<line x1="{x(value):.1f}" y1="{top - 6:.1f}" x2="{x(value):.1f}" '
                        f'y2="{axis_y:.1f}" stroke="#777" stroke-dasharray="4 3"/>'
                        f'<text x="{x(value):.1f}" y="{top - 12:.1f}" text-anchor="{anchor}" '
                        f'fill="#555">{name} {_tick_pct(value)}</text>')
    for i, m in enumerate(comparison.metrics):
        e, cy = m.estimate, top + row_h * (i + 0.5)
        colour = OUTCOME_LOOKS[effective_outcome(m)].colour
        body.append(f'<text x="{_LEFT - 14}" y="{cy + 4:.1f}" text-anchor="end">'
                    f"<title>{_e(_name(m))}</title>{_e(_short(_name(m), 36))}</text>")
        if not (math.isnan(e.ci_low) or math.isnan(e.ci_high)):
            a, b = x(e.ci_low), x(e.ci_high)
            body.append(f'<line x1="{a:.1f}" y1="{cy:.1f}" x2="{b:.1f}" y2="{cy:.1f}" '
                        f'stroke="{colour}" stroke-width="2.5"/>')
            body += [f'<line x1="{p:.1f}" y1="{cy - 5:.1f}" x2="{p:.1f}" y2="{cy + 5:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>' for p in (a, b)]
            for bound, edge, sign in ((e.ci_low, lo, -1), (e.ci_high, hi, 1)):
                if not lo <= bound <= hi:  # an unbounded or off-scale end: arrow off the edge
                    p = x(edge)
                    body.append(f'<path d="M{p:.1f},{cy - 5:.1f} L{p + 8 * sign:.1f},{cy:.1f} '
                                f'L{p:.1f},{cy + 5:.1f}Z" fill="{colour}"/>')
        if not math.isnan(e.change):
            c = x(e.change)
            body.append(f'<polygon class="est" points="{c - 6:.1f},{cy:.1f} {c:.1f},'
                        f'{cy - 6:.1f} {c + 6:.1f},{cy:.1f} {c:.1f},{cy + 6:.1f}" '
                        f'fill="{colour}" stroke="#fff"/>')
        body.append(f'<text x="{_WIDTH - _RIGHT + 12}" y="{cy + 4:.1f}" fill="{colour}">'
                    f"{_pct(e.change)} [{_pct(e.ci_low)}, {_pct(e.ci_high)}]</text>")
    return _svg("forest", axis_y + 44, body, "change per metric with its interval")


def _ops_svg(metric: MetricComparison, top_ops: int) -> str:
    """Horizontal bars of per-operator deltas: the largest |Δ| first picked, then sorted."""
    picked = sorted(metric.op_deltas, key=lambda op: abs(op.delta), reverse=True)[:top_ops]
    ops = sorted(picked, key=lambda op: op.delta, reverse=True)
    top, row_h = 8.0, 22.0
    axis_y = top + row_h * len(ops) + 4
    unit = ops[0].unit
    lo, hi = _domain([0.0, *(op.delta for op in ops)], pad=0.05)
    x = _scale(lo, hi, _LEFT, _WIDTH - _RIGHT)
    body = _axis(x, lo, hi, top, axis_y, _num,
                 f"Δ per-operator median, treatment − control ({unit})")
    for i, op in enumerate(ops):
        cy = top + row_h * (i + 0.5)
        a, b = sorted((x(0.0), x(op.delta)))
        colour = OUTCOME_LOOKS[Outcome.REGRESSION if op.delta > 0 else Outcome.IMPROVEMENT].colour
        change = _pct(op.change, 1) if math.isfinite(op.change) else "new"
        body.append(f'<text x="{_LEFT - 14}" y="{cy + 4:.1f}" text-anchor="end">'
                    f"<title>{_e(op.op)}</title>{_e(_short(op.op, 36))}</text>"
                    f'<rect class="bar" x="{a:.1f}" y="{cy - 7:.1f}" width="{max(b - a, 1):.1f}" '
                    f'height="14" fill="{colour}" fill-opacity="0.8"><title>{_e(op.op)}: '
                    f"{_num(op.control)} → {_num(op.treatment)} {_e(op.unit)}</title></rect>"
                    f'<text x="{_WIDTH - _RIGHT + 12}" y="{cy + 4:.1f}">{op.delta:+.4g} '
                    f"{_e(op.unit)} ({change})</text>")
    body.append(f'<line x1="{x(0):.1f}" y1="{top:.1f}" x2="{x(0):.1f}" y2="{axis_y:.1f}" '
                f'stroke="#444"/>')
    return _svg("ops", axis_y + 44, body, f"{_name(metric)}: per-operator deltas")


def _table(comparison: Comparison) -> list[str]:
    levels = {round(m.estimate.ci_level, 6) for m in comparison.metrics}
    # The interval's level follows the looks (1 − α/looks), so it is named, not assumed 95%.
    ci_head = f"{levels.pop() * 100:.3g}% CI" if len(levels) == 1 else "CI"
    rows = [("<table><thead><tr><th>job</th><th>metric</th><th>mode</th><th>n</th><th>fidelity</th>"
             f"<th>control</th><th>treatment</th><th>change</th><th>{ci_head}</th><th>q</th>"
             "<th>verdict</th>"
             "</tr></thead><tbody>")]
    for i, m in enumerate(comparison.metrics):
        e = m.estimate
        q = _num(e.q_value) if e.q_value is not None else "–"
        rows.append(
            f'<tr><td><a href="#m{i}">{_e(m.job)}</a></td>'
            f"<td>{_e(m.metric.removeprefix('NET '))}</td><td>{_e(m.mode.value)}</td>"
            f'<td class="n">{e.n_pairs}</td><td class="n">{_e(fidelity_cell(m))}</td>'
            f'<td class="n">{_num(_median(m.control))} {_e(m.unit)}</td>'
            f'<td class="n">{_num(_median(m.treatment))} {_e(m.unit)}</td>'
            f'<td class="n">{_pct(e.change)}</td>'
            f'<td class="n">[{_pct(e.ci_low)}, {_pct(e.ci_high)}]</td>'
            f'<td class="n">{q}</td><td>{_badge(m)}</td></tr>')
    rows.append("</tbody></table>")
    return rows


def _unit_of_n(metric: MetricComparison) -> str:
    return "sessions" if metric.mode.interleaved else "pairs"


def comparison_html(comparison: Comparison, top_ops: int = 12) -> str:
    """The comparison as one self-contained HTML page (inline CSS and SVG, no scripts).

    The page holds a verdict summary, a table like the Markdown report's, a forest plot of
    every metric's change against the minimum effect, and per metric a strip plot of both
    sides' per-process values and, when operators were timed, a bar chart of the ``top_ops``
    operators whose median moved most.
    """
    c = comparison
    regressions = len(c.regressions)
    head = f"{regressions} regression{'s' if regressions != 1 else ''}" if regressions \
        else "no regression"
    counts = {o: 0 for o in Outcome}
    for m in c.metrics:
        counts[effective_outcome(m)] += 1
    tally = " ".join(f'<span class="badge" style="background:{OUTCOME_LOOKS[o].colour}">'
                     f"{n} {_words(o)}</span>" for o, n in counts.items() if n)
    looks = " → ".join(str(n) for n in c.looks) or "–"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>benchlab A/B: {_e(c.treatment)} vs {_e(c.control)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<h1>benchlab A/B: {head}</h1>",
        (f'<p class="sub"><b style="color:{_TREATMENT}">{_e(c.treatment)}</b> (treatment) vs '
         f'<b style="color:{_CONTROL}">{_e(c.control)}</b> (control)</p>'),
        (f'<p class="facts"><span>{tally or "no metrics compared"}</span>'
         f"<span>minimum effect δ = {c.min_effect * 100:.3g}%</span>"
         f"<span>α (false discovery rate) = {c.alpha:g}</span>"
         f"<span>looks: {_e(looks)} pairs or sessions</span>"
         f"<span>metrics: {len(c.metrics)}</span>"
         f"<span>exit code {c.exit_code}</span></p>"),
        f'<p class="legend"><span><i class="sw" style="background:{_CONTROL}"></i>control: '
        f'{_e(c.control)}</span><span><i class="sw" style="background:{_TREATMENT}"></i>'
        f"treatment: {_e(c.treatment)}</span>"
        + "".join(f'<span><i class="sw" style="background:{OUTCOME_LOOKS[o].colour}"></i>'
                  f"{_words(o)}</span>" for o in Outcome) + "</p>",
    ]
    if c.failed or c.compared_nothing:
        parts += ['<h2 class="fail">Could not be compared</h2><ul>',
                  *(f'<li class="fail">{_e(f)}</li>' for f in c.failed),
                  *(f'<li class="fail">{_e(f)}</li>' for f in c.skipped if c.compared_nothing),
                  *(['<li class="fail">nothing was compared: no job was measured</li>']
                    if c.compared_nothing and not (c.failed or c.skipped) else []),
                  "</ul>"]
    if c.metrics:
        parts += ["<h2>Verdicts</h2>", *_table(c),
                  '<ul class="sub">' + "".join(
                      f"<li><b>{_e(mode.value)}</b>: {_e(mode.description)}</li>"
                      for mode in c.modes) + "</ul>",
                  ('<p class="sub">Change: Hodges-Lehmann estimate over the paired log-ratios; '
                   "q: Benjamini-Hochberg across all metrics. Fidelity: each side's latency "
                   "in the A/B regime over its latency alone (control / treatment; ! outside "
                   "the tolerance).</p>"),
                  "<h2>Fidelity</h2><ul>",
                  *(f"<li>{_e(line)}</li>" for line in fidelity_lines(c)), "</ul>",
                  "<h2>Change per metric</h2>", _forest_svg(c),
                  ('<p class="sub">Diamond: estimated change; line: its interval; grey band: '
                   "the no-change zone (−δ′, +δ). A regression needs the whole interval right "
                   "of +δ.</p>"), "<h2>Per metric</h2>"]
    for i, m in enumerate(c.metrics):
        e = m.estimate
        q = f", q = {_num(e.q_value)}" if e.q_value is not None else ""
        parts += [f'<h3 id="m{i}">{_e(_name(m))} {_badge(m)}</h3>',
                  (f'<p class="sub">model {_e(m.model)}, test {_e(m.test)}; mode '
                   f"{_e(m.mode.value)}; {e.n_pairs} {_unit_of_n(m)}; "
                   f"change {_pct(e.change)} [{_pct(e.ci_low)}, {_pct(e.ci_high)}] at "
                   f"{e.ci_level:.1%}; p = {_num(e.p_value)}{q}. Dots: one process (or one "
                   "session's median) each; box: quartiles; thick line: median; grey links "
                   "join the two sides of a pair or session.</p>"),
                  _strip_svg(m, (c.control, c.treatment))]
        if m.op_deltas:
            parts += ["<h4>Where the time went (per-operator medians)</h4>",
                      _ops_svg(m, top_ops)]
    notes = (*(() if c.compared_nothing else c.skipped), *c.notes)
    if notes:
        parts += ["<h2>Notes</h2><ul>", *(f"<li>{_e(n)}</li>" for n in notes), "</ul>"]
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"
