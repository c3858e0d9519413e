"""One model × framework over time as a self-contained HTML page (inline SVG, no script).

The median of each measurement with its confidence interval, in the order they were taken,
and a dashed line wherever the runtime's version changed, labelled ``old → new``: a step that
lines up with one came with a release. The table below the plot lists every point.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.report.history import runtime_changes
from benchlab.report.matrix import summary_ms
from benchlab.report.svg import (
    CSS, WIDTH, domain, esc, left_axis, num, scale, svg, write_page,
)

__all__ = ["history_html", "write_history_html"]

_LEFT, _RIGHT, _TOP, _PLOT_HEIGHT = 70, 30, 40, 260
_EXTRA_CSS = "tr.changed td{background:#fff5d6}.change{color:#b26a00;font-weight:600}"


def _ms(point: Any, attr: str) -> float:
    return summary_ms(point.summary, attr) or 0.0


def _plot(points: Sequence[Any], title: str) -> str:
    xs = scale(-0.5, len(points) - 0.5, _LEFT, WIDTH - _RIGHT)
    lo, hi = domain([v for p in points for v in (_ms(p, "ci_low"), _ms(p, "ci_high"))])
    bottom = _TOP + _PLOT_HEIGHT
    ys = scale(lo, hi, bottom, _TOP)
    body = [f'<line x1="{_LEFT}" y1="{bottom}" x2="{WIDTH - _RIGHT}" y2="{bottom}" '
            'stroke="#888"/>']
    body += left_axis(ys, lo, hi, _LEFT, WIDTH - _RIGHT, num)
    body.append(f'<text x="14" y="{(_TOP + bottom) / 2:.0f}" transform="rotate(-90 14 '
                f'{(_TOP + bottom) / 2:.0f})" text-anchor="middle" fill="#555">p50 ms '
                "(bars: 95% CI)</text>")
    for change in runtime_changes(points):
        x = (xs(change.index - 1) + xs(change.index)) / 2
        body.append(f'<line class="runtime-change" x1="{x:.1f}" y1="{_TOP - 14}" '
                    f'x2="{x:.1f}" y2="{bottom}" stroke="#b26a00" stroke-dasharray="5 4"/>'
                    f'<text x="{x + 4:.1f}" y="{_TOP - 18}" fill="#b26a00">'
                    f"{esc(change.text)}</text>")
    line = " ".join(f"{xs(i):.1f},{ys(_ms(p, 'p50')):.1f}" for i, p in enumerate(points))
    body.append(f'<polyline points="{line}" fill="none" stroke="#3b6fb6" stroke-width="1.5"/>')
    step = max(1, len(points) // 8)
    for i, p in enumerate(points):
        x = xs(i)
        body.append(f'<line x1="{x:.1f}" y1="{ys(_ms(p, "ci_low")):.1f}" x2="{x:.1f}" '
                    f'y2="{ys(_ms(p, "ci_high")):.1f}" stroke="#3b6fb6" stroke-opacity=".45" '
                    f'stroke-width="5"/><circle class="point" cx="{x:.1f}" '
                    f'cy="{ys(_ms(p, "p50")):.1f}" r="3.5" fill="#3b6fb6"><title>'
                    f"{esc(p.started_at[:19])}: {esc(num(_ms(p, 'p50')))} ms, runtime "
                    f"{esc(p.runtime_version or '?')}</title></circle>")
        if i % step == 0:
            body.append(f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">'
                        f"{esc(p.started_at[:10])}</text>")
    return svg("history", bottom + 30, body, title)


def _table(points: Sequence[Any]) -> list[str]:
    changes = {c.index: c for c in runtime_changes(points)}
    rows = ["<table><thead><tr>" + "".join(
        f"<th>{h}</th>" for h in ("when", "run", "test", "device", "runtime", "p50 ms",
                                  "95% CI ms", "n")) + "</tr></thead><tbody>"]
    for i, p in enumerate(points):
        change = changes.get(i)
        runtime = (f'<span class="change">◆ {esc(change.text)}</span>' if change
                   else esc(p.runtime_version or "–"))
        cells = (esc(p.started_at[:19]), esc(p.run_id), esc(p.test_identifier), esc(p.device),
                 runtime)
        numbers = (num(_ms(p, "p50")), f"{num(_ms(p, 'ci_low'))}–{num(_ms(p, 'ci_high'))}",
                   str(p.summary.count))
        rows.append(f'<tr{" class=changed" if change else ""}>'
                    + "".join(f"<td>{c}</td>" for c in cells)
                    + "".join(f'<td class="n">{esc(n)}</td>' for n in numbers) + "</tr>")
    rows.append("</tbody></table>")
    return rows


def history_html(points: Sequence[Any], *, title: str) -> str:
    """The page for ``points`` (store history points, oldest first) as one HTML string.

    The plot is in ms; a point whose unit is not a time is left out of it and counted.
    """
    not_time = [p for p in points if summary_ms(p.summary) is None]
    points = [p for p in points if summary_ms(p.summary) is not None]
    changes = runtime_changes(points)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(title)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body><main>",
             f"<h1>{esc(title)}</h1>"]
    if not points:
        why = f" in a unit of time ({len(not_time)} in other units)" if not_time else ""
        parts.append(f'<p class="sub">No ok measurement of this metric in the store{why}.</p>')
    else:
        summary = f"{len(points)} measurements, {points[0].started_at[:10]} to " \
                  f"{points[-1].started_at[:10]}."
        if changes:
            summary += (f" The runtime's version changed {len(changes)} time(s) (dashed "
                        "lines, ◆ rows): a step there may come from the release.")
        if not_time:
            units = ", ".join(sorted({repr(p.summary.unit) for p in not_time}))
            summary += (f" {len(not_time)} measurement(s) in {units}, not a unit of time, are "
                        "left out of this page.")
        parts += [f'<p class="sub">{esc(summary)}</p>', _plot(points, title), *_table(points)]
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def write_history_html(points: Sequence[Any], path: Path, *, title: str) -> Path:
    """Write :func:`history_html` to ``path`` (atomically); returns the path."""
    return write_page(path, history_html(points, title=title))
