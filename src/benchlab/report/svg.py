"""Small inline-SVG plotting helpers shared by benchlab's self-contained HTML reports.

Reports are archived and opened offline, so they carry everything inline and load nothing;
these helpers draw axes, scales and plot frames without a plotting library.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path

__all__ = [
    "CSS",
    "LEFT",
    "PALETTE",
    "RIGHT",
    "WIDTH",
    "axis",
    "left_axis",
    "domain",
    "esc",
    "frame",
    "median",
    "num",
    "quantile",
    "scale",
    "short",
    "svg",
    "ticks",
    "write_page",
]

WIDTH = 960  # every plot shares it so their axes line up down the page
LEFT = 250  # gutter for row labels
RIGHT = 200  # gutter for the numbers printed beside each row
#: Colours of a plot's series, in order.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")

# The page grows with the window (to 1800 px) so that wide tables use it before they scroll
# in their box; sentences keep a measure one can read.
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
color:#222;margin:0;background:#fafafa}
main{max-width:1800px;margin:0 auto;padding:16px 24px 40px;background:#fff}
main>p,main>ul{max-width:75em}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
#ddd;padding-bottom:4px}h3{font-size:15px;margin:24px 0 2px}h4{font-size:13px;margin:10px 0 2px}
.sub{color:#555;margin:2px 0 8px}.facts span{display:inline-block;margin:2px 14px 2px 0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:4px 6px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.nw{white-space:nowrap}
.badge{display:inline-block;padding:0 7px;border-radius:9px;color:#fff;font-size:12px;
white-space:nowrap}
.sw{display:inline-block;width:11px;height:11px;border-radius:6px;margin:0 4px -1px 0}
.legend span{margin-right:16px;white-space:nowrap}
svg{display:block;max-width:100%;height:auto;margin:4px 0}
svg text{font-family:inherit;font-size:12px;fill:#333}
.fail{color:#c62828}code{font-size:12px}
"""


def esc(text: object) -> str:
    """Escape for both element text and quoted attributes."""
    return escape(str(text), quote=True)


def num(value: float) -> str:
    """A number with at most four significant digits, but no exponent for big integers."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) >= 1e4:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def short(text: str, limit: int) -> str:
    """Cut long names so they stay inside their gutter (SVG text never wraps)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile of already sorted values."""
    pos = (len(ordered) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def median(values: Sequence[float]) -> float:
    """The median of the finite values (NaN when there are none)."""
    finite = sorted(v for v in values if math.isfinite(v))
    return quantile(finite, 0.5) if finite else math.nan


def ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) inside [lo, hi]."""
    span = hi - lo
    raw = span / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = magnitude
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        step = factor * magnitude
        if span / step <= count:
            break
    first = math.ceil(lo / step - 1e-9)
    # Multiplying an integer by the step, then rounding, keeps 0.30000000000000004 away.
    return [round(i * step, 12) for i in range(first, math.floor(hi / step + 1e-9) + 1)]


def domain(values: Sequence[float], pad: float = 0.06) -> tuple[float, float]:
    """The finite values' range, widened a little so no mark sits on the plot's edge."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return -1.0, 1.0
    lo, hi = min(finite), max(finite)
    span = hi - lo or (abs(hi) * 0.02 or 1.0)  # a flat series still needs a visible axis
    return lo - span * pad, hi + span * pad


def scale(lo: float, hi: float, x0: float, x1: float) -> Callable[[float], float]:
    """Map data values to pixels, clamping so out-of-range (or infinite) values hit an edge."""
    def to_px(value: float) -> float:
        value = min(max(value, lo), hi)
        return x0 + (value - lo) / (hi - lo) * (x1 - x0)
    return to_px


def axis(x: Callable[[float], float], lo: float, hi: float, top: float, y: float,
          fmt: Callable[[float], str], title: str) -> list[str]:
    """A bottom axis: baseline, light grid lines up to ``top``, tick labels and a title."""
    x0, x1 = x(lo), x(hi)
    out = [f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="#888"/>']
    for tick in ticks(lo, hi):
        px = x(tick)
        out.append(f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{y:.1f}" '
                   f'stroke="#eee"/><line x1="{px:.1f}" y1="{y:.1f}" x2="{px:.1f}" '
                   f'y2="{y + 5:.1f}" stroke="#888"/>')
        out.append(f'<text x="{px:.1f}" y="{y + 18:.1f}" text-anchor="middle">'
                   f'{esc(fmt(tick))}</text>')
    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + 36:.1f}" text-anchor="middle" '
               f'fill="#555">{esc(title)}</text>')
    return out


def left_axis(y: Callable[[float], float], lo: float, hi: float, x0: float, x1: float,
              fmt: Callable[[float], str]) -> list[str]:
    """A left axis: light grid lines from ``x0`` to ``x1`` and tick labels left of ``x0``."""
    out = []
    for tick in ticks(lo, hi):
        py = y(tick)
        out.append(f'<line x1="{x0:.1f}" y1="{py:.1f}" x2="{x1:.1f}" y2="{py:.1f}" '
                   f'stroke="#eee"/><text x="{x0 - 6:.1f}" y="{py + 4:.1f}" '
                   f'text-anchor="end">{esc(fmt(tick))}</text>')
    return out


def frame(series: Mapping[str, Sequence[tuple[float, float]]], x_title: str, y_title: str,
          height: float, x_also: Sequence[float] = (), y_also: Sequence[float] = ()
          ) -> tuple[Callable[[float], float], Callable[[float], float], list[str]]:
    """The x and y scales of a plot of named point series (y from 0; ``x_also`` and
    ``y_also`` widen the ranges to values drawn beside the points), and its axes and titles."""
    xs = [x for points in series.values() for x, _ in points]
    ys = [y for points in series.values() for _, y in points]
    x_lo, x_hi = domain([*xs, *x_also])
    y_lo, y_hi = domain([*ys, *y_also, 0.0])
    top, bottom = 16.0, height - 50.0
    x = scale(x_lo, x_hi, LEFT, WIDTH - RIGHT)
    y = scale(y_lo, y_hi, bottom, top)
    return x, y, [*left_axis(y, y_lo, y_hi, LEFT, WIDTH - RIGHT, num),
                  *axis(x, x_lo, x_hi, top, bottom, num, x_title),
                  f'<text x="{LEFT - 50}" y="{top - 4:.0f}" fill="#555">{esc(y_title)}</text>']


def svg(kind: str, height: float, body: list[str], label: str) -> str:
    """A plot's ``<svg>`` element of the shared width, with an accessible title."""
    return (f'<svg class="plot {kind}" viewBox="0 0 {WIDTH} {height:.0f}" width="{WIDTH}" '
            f'height="{height:.0f}" role="img" aria-label="{esc(label)}">'
            f"<title>{esc(label)}</title>{''.join(body)}</svg>")


def write_page(path: Path, page: str) -> Path:
    """Write a report page through a temporary file, so a reader never sees half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
