"""Why a cell is slow or wrong, for the reports: coverage, the int8 error split, the layer table.

:func:`diagnosis_lines` gives the terminal's footnotes, :func:`diagnosis_html` the HTML
report's section. Both read a :class:`~benchlab.report.matrix.Cell`; the shapes and the rules
(what is flagged, the layer threshold) live in :mod:`benchlab.schema.diagnosis`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from benchlab.schema.diagnosis import Coverage, LayerTable, at_rounding_floor, coverage_warning
from benchlab.report.matrix import Cell
from benchlab.report.svg import esc

__all__ = ["LAYER_ROWS", "diagnosis_html", "diagnosis_lines", "fallback_text"]

LAYER_ROWS = 12
"""Rows of a layer table shown in the reports: those around the first diverging layer (the
whole table stays in the result's JSON)."""


def fallback_text(fallback: Mapping[str, int], most: int = 6) -> str:
    """``aten::mean.out ×1, Softmax ×2 (+3 more types)``: the fallen-back operator types."""
    items = list(fallback.items())
    shown = ", ".join(f"{op} ×{count}" for op, count in items[:most])
    return shown + (f" (+{len(items) - most} more types)" if len(items) > most else "")


def _coverage_line(coverage: Coverage) -> str:
    parts = [f"delegation: {coverage.engine} {coverage.summary()}"]
    if coverage.nodes is not None and coverage.delegated is not None:
        parts.append(f"{coverage.delegated} of {coverage.nodes} operators")
    if coverage.fallback:
        parts.append(f"fell back: {fallback_text(coverage.fallback)}")
    if coverage.note:
        parts.append(coverage.note)
    return "; ".join(parts)


def _attribution_line(cell: Cell) -> str | None:
    if cell.quant_sqnr is None or cell.lowering_sqnr is None:
        return None
    line = (f"int8 error: quantization {cell.quant_sqnr:.1f} dB, lowering "
            f"{cell.lowering_sqnr:.1f} dB")
    if cell.sqnr is not None:
        line += f" (total {cell.sqnr:.1f} dB)"
    if cell.quant_l2_rel is not None and cell.lowering_l2_rel is not None:
        line += f"; L2rel {cell.quant_l2_rel:.3g} + {cell.lowering_l2_rel:.3g}"
        if cell.error_l2_rel is not None:
            line += f" → {cell.error_l2_rel:.3g}"
    if cell.floor_l2_rel == 0:
        line += "; a one-ulp input change moves no output (no rounding floor)"
    elif cell.floor_sqnr is not None:
        line += f"; rounding floor {cell.floor_sqnr:.1f} dB"
        if cell.lowering_l2_rel and cell.lowering_sqnr is not None:
            above = cell.floor_sqnr - cell.lowering_sqnr
            line += (" (the lowering error is within it: rounding flips, not the kernels)"
                     if at_rounding_floor(cell.lowering_sqnr, cell.floor_sqnr) else
                     f" (the lowering error is {above:.1f} dB above it)")
    return line


def _layer_line(table: LayerTable) -> str:
    if table.note:
        return f"layers: {table.note}"
    first = table.first_diverging
    where = (f"first below {table.threshold_db:.0f} dB: {first.name} ({first.op}, "
             f"{first.sqnr:.1f} dB)" if first else
             f"every layer at or above {table.threshold_db:.0f} dB")
    return (f"layers: {table.matched} compared with {table.reference}; {where}"
            + (f"; {len(table.unmatched)} without a match" if table.unmatched else ""))


def diagnosis_lines(cell: Cell) -> list[str]:
    """The footnotes of one cell: a coverage warning (always), the coverage itself when
    something fell back, the int8 error split, the layer table's verdict."""
    lines: list[str] = []
    coverage = cell.delegation
    if coverage is not None:
        warning = coverage_warning(coverage)
        if warning:
            lines.append(f"warning: {warning}")
        if warning or coverage.fallback or coverage.note:
            lines.append(_coverage_line(coverage))
    attribution = _attribution_line(cell)
    if attribution:
        lines.append(attribution)
    if cell.layers is not None:
        lines.append(_layer_line(cell.layers))
    return lines


def _window(table: LayerTable) -> tuple[int, int]:
    """The rows to show: up to :data:`LAYER_ROWS`, the first diverging layer among them."""
    layers = list(table.layers)
    first = table.first_diverging
    at = layers.index(first) if first is not None else 0
    start = max(0, min(at - LAYER_ROWS // 3, len(layers) - LAYER_ROWS))
    return start, min(len(layers), start + LAYER_ROWS)


def _layer_table_html(table: LayerTable) -> str:
    if table.note:
        return f"<p class='muted'>{esc(table.note)}</p>"
    start, end = _window(table)
    first = table.first_diverging
    rows = []
    for layer in list(table.layers)[start:end]:
        mark = " class='diverging'" if layer is first else ""
        rows.append(f"<tr{mark}><td><code>{esc(layer.name)}</code></td><td>{esc(layer.op)}</td>"
                    f"<td>{layer.sqnr:.1f}</td><td>{layer.max_abs:.3g}</td>"
                    f"<td>{layer.l2_rel:.3g}</td></tr>")
    shown = f"rows {start + 1}–{end} of {len(table.layers)}" if table.layers else "no rows"
    return (f"<p>{esc(_layer_line(table))} ({shown}).</p>"
            "<table class='layers'><thead><tr><th>tensor</th><th>op</th><th>SQNR dB</th>"
            "<th>max |err|</th><th>L2rel</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")


def diagnosis_html(cells: Sequence[Cell]) -> str:
    """The report's "Where the time and the error come from" section ("" when no cell has
    anything to say)."""
    blocks = []
    for cell in cells:
        parts = []
        coverage = cell.delegation
        if coverage is not None:
            warning = coverage_warning(coverage)
            if warning:
                parts.append(f"<p class='warn'>⚠ {esc(warning)}</p>")
            parts.append(f"<p>{esc(_coverage_line(coverage))} <span class='muted'>"
                         f"({esc(coverage.method)})</span></p>")
        attribution = _attribution_line(cell)
        if attribution:
            parts.append(f"<p>{esc(attribution)}</p>")
        if cell.layers is not None:
            parts.append(_layer_table_html(cell.layers))
        if parts:
            title = f"{cell.model} · {cell.label}" + (f" · {cell.device}" if cell.device else "")
            blocks.append(f"<div class='why' data-cell='{esc(cell.label)}'><h3>{esc(title)}</h3>"
                          + "".join(parts) + "</div>")
    if not blocks:
        return ""
    return ("<h2 id='why'>Where the time and the error come from</h2><p class='muted'>What each "
            "delegate or execution provider took (a configuration that asked for one and got "
            "little is flagged), the int8 error split into what the quantization recipe costs "
            "and what the runtime's kernels add, and the per-layer errors when asked for "
            "(<code>--layer-errors</code>). See docs/accuracy.md.</p>" + "".join(blocks))
