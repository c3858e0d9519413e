"""The matrix page's plots for one model, inline SVG: latency distributions per backend cell
(log axis), latency against error (the Pareto view ExecuTorch's RFC asks for: what delegation
and quantization cost in accuracy for what they gain in speed) and a per-operator breakdown
where the runtime timed operators (:func:`model_section`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from benchlab.report.matrix import Cell, pareto_front
from benchlab.report.svg import LEFT, RIGHT, WIDTH, esc, num, short, svg

__all__ = ["model_section"]

# Series colours; none equals the Pareto front's red, so the front stays recognisable.
_PALETTE = ("#3b6fb6", "#e07b39", "#2e7d32", "#8e44ad", "#00838f", "#f9a825", "#6d4c41",
            "#ad1457", "#558b2f", "#5e35b1", "#ef6c00", "#37474f")
_FRONT = "#c62828"
# Identical outputs report an SQNR ceiling (300 dB); the plot clips there so the rest is legible.
_SQNR_CLIP = 160.0


def _number(value: float | None, spec: str = ".3g") -> str:
    return "–" if value is None else f"{value:{spec}}"


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks per decade inside ``[lo, hi]`` (both > 0)."""
    ticks = []
    for exponent in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0 ** exponent
            if lo <= value <= hi:
                ticks.append(value)
    return ticks or [lo, hi]


def _log_scale(lo: float, hi: float, x0: float, x1: float) -> Callable[[float], float]:
    a, b = math.log10(lo), math.log10(hi)

    def to_px(value: float) -> float:
        value = min(max(value, lo), hi)
        return x0 + (math.log10(value) - a) / (b - a) * (x1 - x0)
    return to_px


def _log_domain(values: Sequence[float]) -> tuple[float, float]:
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        return 0.1, 10.0
    lo, hi = min(positive), max(positive)
    if hi / lo < 1.5:
        lo, hi = lo / 1.25, hi * 1.25
    return lo / 1.12, hi * 1.12


def _bottom_axis(x: Callable[[float], float], ticks: Sequence[float], top: float, y: float,
                 title: str) -> list[str]:
    out = [f'<line x1="{x(ticks[0]):.1f}" y1="{y:.1f}" x2="{x(ticks[-1]):.1f}" y2="{y:.1f}" '
           'stroke="#888"/>']
    for tick in ticks:
        px = x(tick)
        out.append(f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{y:.1f}" '
                   f'stroke="#eee"/><text x="{px:.1f}" y="{y + 16:.1f}" '
                   f'text-anchor="middle">{esc(num(tick))}</text>')
    centre = (x(ticks[0]) + x(ticks[-1])) / 2
    out.append(f'<text x="{centre:.1f}" y="{y + 34:.1f}" text-anchor="middle" fill="#555">'
               f"{esc(title)}</text>")
    return out


def _colours(cells: Sequence[Cell]) -> dict[str, str]:
    labels = list(dict.fromkeys(c.label for c in cells))
    return {label: _PALETTE[i % len(_PALETTE)] for i, label in enumerate(labels)}


def _distribution_svg(model: str, cells: Sequence[Cell], colours: Mapping[str, str]) -> str:
    """One row per cell: every latency sample (dots), quartile box and median, log axis."""
    rows = [c for c in cells if c.latencies]
    top, row_h = 10.0, 30.0
    axis_y = top + row_h * len(rows) + 6
    lo, hi = _log_domain([v for c in rows for v in c.latencies])
    ticks = [t for t in _log_ticks(lo, hi)]
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    x = _log_scale(lo, hi, LEFT, WIDTH - RIGHT)
    body = _bottom_axis(x, ticks, top, axis_y, "latency per iteration (ms, log scale)")
    for i, cell in enumerate(rows):
        cy, colour = top + row_h * (i + 0.5), colours[cell.label]
        values = sorted(cell.latencies)
        q1, q3 = values[len(values) // 4], values[(3 * len(values)) // 4]
        body.append(f'<text x="{LEFT - 12}" y="{cy + 4:.1f}" text-anchor="end">'
                    f"<title>{esc(cell.label)}</title>{esc(short(cell.label, 34))}</text>"
                    f'<rect x="{x(q1):.1f}" y="{cy - 9:.1f}" width="{max(x(q3) - x(q1), 1):.1f}"'
                    f' height="18" fill="{colour}" fill-opacity="0.15" stroke="{colour}"/>')
        step = max(1, len(values) // 150)  # thin very long series; the box keeps the shape
        for j, value in enumerate(cell.latencies[::step]):
            jitter = ((j * 0.618034) % 1.0 - 0.5) * 14
            body.append(f'<circle class="pt" cx="{x(value):.1f}" cy="{cy + jitter:.1f}" r="2.2" '
                        f'fill="{colour}" fill-opacity="0.55"/>')
        if cell.p50 is not None:
            body.append(f'<line x1="{x(cell.p50):.1f}" y1="{cy - 12:.1f}" x2="{x(cell.p50):.1f}" '
                        f'y2="{cy + 12:.1f}" stroke="{colour}" stroke-width="3"/>'
                        f'<text x="{WIDTH - RIGHT + 10}" y="{cy + 4:.1f}">p50 {num(cell.p50)} '
                        f"ms (n={len(values)})</text>")
    return svg("dist", axis_y + 42, body, f"{model}: latency distribution per backend")


def _pareto_svg(model: str, cells: Sequence[Cell], colours: Mapping[str, str]) -> str:
    """Latency (x, log) against SQNR (y, higher is more accurate), the Pareto front joined."""
    points = [c for c in cells if c.p50 is not None and c.sqnr is not None]
    left, top, height = 90.0, 16.0, 300.0
    right = WIDTH - RIGHT
    bottom = top + height
    lo, hi = _log_domain([c.p50 for c in points if c.p50])
    ticks = _log_ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    x = _log_scale(lo, hi, left, right)
    sq = [min(c.sqnr, _SQNR_CLIP) for c in points if c.sqnr is not None]
    y_lo = min([0.0, *sq]) - 5
    y_hi = max([40.0, *sq]) + 8

    def y(value: float) -> float:
        value = min(max(min(value, _SQNR_CLIP), y_lo), y_hi)
        return bottom - (value - y_lo) / (y_hi - y_lo) * height

    body = _bottom_axis(x, ticks, top, bottom, "latency p50 (ms, log scale) — left is faster")
    step = 20 if y_hi - y_lo > 80 else 10
    for tick in range(int(math.ceil(y_lo / step) * step), int(y_hi) + 1, step):
        label = f"≥{tick}" if tick >= _SQNR_CLIP else str(tick)
        body.append(f'<line x1="{left:.1f}" y1="{y(tick):.1f}" x2="{right:.1f}" '
                    f'y2="{y(tick):.1f}" stroke="#eee"/><text x="{left - 8:.1f}" '
                    f'y="{y(tick) + 4:.1f}" text-anchor="end">{label}</text>')
    body.append(f'<text x="18" y="{(top + bottom) / 2:.1f}" text-anchor="middle" fill="#555" '
                f'transform="rotate(-90 18 {(top + bottom) / 2:.1f})">SQNR vs reference (dB) — '
                "up is more accurate</text>")
    front = pareto_front(points)
    chain = sorted((c for c in points if c.label in front), key=lambda c: c.p50 or 0)
    if len(chain) > 1:
        path = " ".join(f"{x(c.p50 or 0):.1f},{y(c.sqnr or 0):.1f}" for c in chain)
        body.append(f'<polyline class="front" points="{path}" fill="none" stroke="{_FRONT}" '
                    'stroke-width="2" stroke-dasharray="6 4"/>')
    for i, cell in enumerate(points):
        px, py = x(cell.p50 or 0), y(cell.sqnr or 0)
        ring = f' stroke="{_FRONT}" stroke-width="2.5"' if cell.label in front else \
            ' stroke="#fff"'
        body.append(f'<circle class="pt" cx="{px:.1f}" cy="{py:.1f}" r="7" '
                    f'fill="{colours[cell.label]}"{ring}><title>{esc(cell.label)}: '
                    f"{num(cell.p50 or 0)} ms, SQNR {num(cell.sqnr or 0)} dB, max error "
                    f"{num(cell.error_max_abs or 0)}</title></circle>")
        if cell.label in front:  # the rest are named by colour in the legend below
            body.append(f'<text x="{px + 10:.1f}" y="{py - 8 - (i % 2) * 12:.1f}">'
                        f"{esc(short(cell.label, 30))}</text>")
    return svg("pareto", bottom + 44, body, f"{model}: latency against error")


def _ops_svg(model: str, cells: Sequence[Cell], top_ops: int = 8) -> str:
    """Stacked bars of per-operator time per cell: its largest operators, then the rest."""
    rows = [c for c in cells if c.ops]
    top, row_h = 10.0, 28.0
    axis_y = top + row_h * len(rows) + 6
    total = max(sum(c.ops.values()) for c in rows)
    x0, x1 = LEFT, WIDTH - RIGHT
    body = [f'<line x1="{x0}" y1="{axis_y:.1f}" x2="{x1}" y2="{axis_y:.1f}" stroke="#888"/>',
            f'<text x="{(x0 + x1) / 2:.1f}" y="{axis_y + 30:.1f}" text-anchor="middle" '
            'fill="#555">summed per-operator median time per inference (ms)</text>']
    for tick in (0.0, total / 2, total):
        px = x0 + (x1 - x0) * (tick / total if total else 0)
        body.append(f'<text x="{px:.1f}" y="{axis_y + 14:.1f}" text-anchor="middle">'
                    f"{num(tick)}</text>")
    names: list[str] = []
    for cell in rows:
        names += [op for op, _ in sorted(cell.ops.items(), key=lambda kv: -kv[1])[:top_ops]]
    op_colour = {op: _PALETTE[i % len(_PALETTE)] for i, op in enumerate(dict.fromkeys(names))}
    for i, cell in enumerate(rows):
        cy = top + row_h * (i + 0.5)
        body.append(f'<text x="{LEFT - 12}" y="{cy + 4:.1f}" text-anchor="end">'
                    f"{esc(short(cell.label, 34))}</text>")
        ranked = sorted(cell.ops.items(), key=lambda kv: -kv[1])
        parts = ranked[:top_ops] + [("other", sum(v for _, v in ranked[top_ops:]))]
        start = x0
        for op, ms in parts:
            if ms <= 0:
                continue
            width = (x1 - x0) * ms / total if total else 0
            colour = op_colour.get(op, "#bbb")
            body.append(f'<rect class="bar" x="{start:.1f}" y="{cy - 9:.1f}" '
                        f'width="{max(width, 0.5):.1f}" height="18" fill="{colour}">'
                        f"<title>{esc(op)}: {num(ms)} ms</title></rect>")
            start += width
    legend = "".join(f'<span><i class="sw" style="background:{c}"></i>{esc(op)}</span>'
                     for op, c in op_colour.items())
    return (svg("ops", axis_y + 40, body, f"{model}: per-operator breakdown")
            + f'<p class="legend">{legend}<span><i class="sw" style="background:#bbb"></i>'
            "other</span></p>")


def model_section(model: str, mine: Sequence[Cell]) -> list[str]:
    """One model's section: its backends' legend, size, and the plots its cells allow."""
    if not mine:
        return []
    parts: list[str] = []
    colours = _colours(mine)
    parts.append(f'<h2 id="{esc(model)}">{esc(model)}</h2>')
    parts.append('<p class="legend">' + "".join(
        f'<span><i class="sw" style="background:{colour}"></i>{esc(label)}</span>'
        for label, colour in colours.items()) + "</p>")
    info = mine[0]
    if info.params or info.flops:
        parts.append(f'<p class="sub">{_number(info.params, ",")} parameters, '
                     f"{_number((info.flops or 0) / 1e9, '.3g')} GFLOPs per inference</p>")
    if any(c.latencies for c in mine):
        parts += ["<h3>Latency distribution</h3>", _distribution_svg(model, mine, colours)]
    if any(c.sqnr is not None for c in mine):
        parts += ["<h3>Latency against error</h3>", _pareto_svg(model, mine, colours),
                  '<p class="sub">Ringed, named points and the dashed line: the Pareto '
                  "front (no other backend is both faster and more accurate). Bit-identical "
                  f"outputs sit at the top (≥{_SQNR_CLIP:.0f} dB).</p>"]
    if any(c.ops for c in mine):
        parts += ["<h3>Where the time goes</h3>", _ops_svg(model, mine)]
    missing = [(c.label, c.ops_unavailable) for c in mine if c.ops_unavailable]
    if missing:
        parts.append('<ul class="sub">' + "".join(
            f"<li>{esc(label)}: no per-operator times — {esc(why)}</li>"
            for label, why in missing) + "</ul>")
    return parts
