"""The generation section of the HTML report: a table, and the curves people look for.

* decode tokens/s against context depth (one line per runtime, precision and prompt
  length), the ``llama-bench -d`` view;
* TTFT against prompt length (one line per runtime, precision and depth);
* TPOT against token agreement: speed beside accuracy.

A curve against a quantity is drawn only when the run swept it (two values or more); with one
value the section says which the run used.

Inline SVG only (:mod:`benchlab.report.svg`), like every report page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from benchlab.report.columns import html_section
from benchlab.report.generation import GENERATION_COLUMNS, GENERATION_LEGEND, GenerationRow
from benchlab.report.svg import PALETTE, esc, frame, num, svg

__all__ = ["generation_html"]

_HEIGHT = 300


def _workload(row: GenerationRow) -> dict[str, int]:
    parts = dict(part[0:1] and (part[0], int(part[1:])) for part in row.workload.split())
    return {"p": parts.get("p", 0), "g": parts.get("g", 0), "d": parts.get("d", 0)}


def _lines_svg(label: str, series: dict[str, list[tuple[float, float]]], x_title: str,
               y_title: str) -> str:
    """One line (with dots) per series over a shared x axis."""
    x, y, body = frame(series, x_title, y_title, _HEIGHT)
    for index, (name, points) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        points = sorted(points)
        path = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in points)
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                    'stroke-width="2"/>')
        body += [f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="3.5" fill="{colour}">'
                 f"<title>{esc(name)}: {num(px)} → {num(py)}</title></circle>"
                 for px, py in points]
        last_x, last_y = points[-1]
        body.append(f'<text x="{x(last_x) + 8:.1f}" y="{y(last_y) + 4:.1f}" '
                    f'fill="{colour}">{esc(name)}</text>')
    return svg("generation", _HEIGHT, body, label)


def _curve(rows: Sequence[GenerationRow], x_key: str, fixed_key: str,
           value: Callable[[GenerationRow], float | None]) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        got = value(row)
        if got is None:
            continue
        work = _workload(row)
        # The precision too: a runtime's fp32 and 4-bit cells are two lines, not one zigzag.
        name = " ".join(filter(None, (row.framework, row.precision,
                                      f"{fixed_key}={work[fixed_key]}")))
        series.setdefault(name, []).append((float(work[x_key]), got))
    # A curve needs two values of its quantity; points at one value say nothing about a trend
    # (and would stretch the axis around that value: 127.9 to 128.1).
    return {name: points for name, points in series.items()
            if len({px for px, _ in points}) > 1}


#: The swept quantities: the workload's key, their words, and the option that sweeps them.
_SWEPT = (("p", "prompt length", "--prompt-tokens 32,128,512"),
          ("d", "context depth", "--depth 0,512"))


def _one_value_note(model: str, rows: Sequence[GenerationRow]) -> list[str]:
    """Words for the quantities the run did not sweep (one value in ``rows``): which value
    every generation had, and how to get a curve; ``[]`` when both were swept."""
    single = [(words, values.pop(), option) for key, words, option in _SWEPT
              if len(values := {_workload(row)[key] for row in rows}) == 1]
    if not single:
        return []
    them = "them" if len(single) > 1 else "it"
    return [f'<p class="sub">{esc(model)}: every generation had '
            f"{esc(' and '.join(f'{words} {value}' for words, value, _ in single))} "
            f"(tokens), so no curve is drawn against {them}; give several "
            f"({esc(' '.join(option for *_, option in single))}) for a curve.</p>"]


def generation_html(rows: Sequence[GenerationRow]) -> str:
    """The section (``""`` without generative results)."""
    return html_section(
        "generation", "Generation", GENERATION_LEGEND, GENERATION_COLUMNS, rows, _model_plots)


def _model_plots(model: str, rows: list[GenerationRow]) -> list[str]:
    """One model's curves (against depth, against prompt length) and its speed/accuracy dots."""
    parts: list[str] = []
    mine = [r for r in rows if r.status == "ok"]
    depth = _curve(mine, "d", "p", lambda r: r.decode_rate)
    if depth:
        parts += [f"<h3>{esc(model)}: decode speed against context depth</h3>",
                  _lines_svg(f"{model}: decode tokens/s against depth", depth,
                             "context depth D (tokens)", "decode tokens/s")]
    prompt = _curve(mine, "p", "d", lambda r: r.ttft)
    if prompt:
        parts += [f"<h3>{esc(model)}: time to first token against prompt length</h3>",
                  _lines_svg(f"{model}: TTFT against prompt length", prompt,
                             "prompt length P (tokens)", "TTFT ms")]
    parts += _one_value_note(model, mine)
    # One dot per cell: a runtime's precisions (fp32 beside its 4-bit) are the trade.
    accuracy = {f"{r.framework} {r.precision} {r.workload}": [(r.token_agreement * 100, r.tpot)]
                for r in mine if r.token_agreement is not None and r.tpot is not None}
    if accuracy:
        parts += [f"<h3>{esc(model)}: speed beside accuracy</h3>",
                  _scatter_svg(f"{model}: TPOT against token agreement", accuracy)]
    return parts


def _scatter_svg(label: str, points: dict[str, list[tuple[float, float]]]) -> str:
    """TPOT (y) against token agreement in % (x), one named dot per cell."""
    x, y, body = frame(points, "token agreement with the reference (%)", "TPOT ms", _HEIGHT,
                       x_also=(100.0,))
    for index, (name, marks) in enumerate(points.items()):
        colour = PALETTE[index % len(PALETTE)]
        for px, py in marks:
            body.append(f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="5" fill="{colour}">'
                        f"<title>{esc(name)}</title></circle>"
                        f'<text x="{x(px) + 8:.1f}" y="{y(py) + 4 + 14 * (index % 3):.1f}" '
                        f'fill="{colour}">{esc(name)}</text>')
    return svg("generation", _HEIGHT, body, label)
