"""The matrix as one self-contained HTML page: table, heat map and inline-SVG plots.

Per model, the plots of :mod:`benchlab.report.matrix_plots`: latency distributions, latency
against error, where the time goes. The page loads nothing and runs no script, so it opens
offline and archives well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlab.report.answers import answer_spread_html, device_instructions
from benchlab.report.matrix import (
    Cell,
    Spread,
    device_spread,
    devices_of,
    fastest_ratios,
    ratio_verdict,
    per_device,
)
from benchlab.schema.diagnosis import coverage_warning
from benchlab.report.columns import Column, filled_columns, html_table
from benchlab.report.explain import diagnosis_html
from benchlab.report.matrix_plots import model_section
from benchlab.schema.result import EnvKey, Metric
from benchlab.report.svg import CSS, esc, num, write_page

__all__ = ["matrix_html", "runtime_change_notes", "write_matrix_html"]

_EXTRA_CSS = """
td.fast{font-weight:600}td.tie{font-style:italic}.heat td.n{min-width:70px}.skip{color:#777}
td.failed{color:#c62828}.wide{overflow-x:auto}
.emulated{border-left:4px solid #b26a00;padding:.3em .6em;background:#fff8e1}
td.changed,.changed-note{color:#b26a00;font-weight:600}td.changed{white-space:nowrap}
.why .warn{color:#b26a00;font-weight:600}.why .muted{color:#777}
table.layers tr.diverging td{background:#ffe0b2;font-weight:600}
td.differs{color:#b26a00;font-weight:600}
"""


def _columns(changes: Mapping[tuple[str, str], str]) -> tuple[Column[Cell], ...]:
    """The main table's columns: each metric headed and formatted as the registry says, and
    ``-`` for nothing, as in the registry's cells and the generation and scenario tables."""
    def change(cell: Cell) -> str:
        return changes.get((cell.model, cell.label), "")

    def runtime(cell: Cell) -> str:
        if change(cell):
            return f"◆ {cell.runtime_version or '?'}"
        return cell.runtime_version or "-"

    def interval(cell: Cell) -> str:
        # ¹: one process, so only its own precision (the next run's spread is unknown).
        suffix = "%" if len(cell.process_p50s) > 1 else "%¹"
        return "-" if cell.ci_rel is None else f"{cell.ci_rel * 100:.1f}{suffix}"

    def delegated(cell: Cell) -> str:
        if cell.delegation is None:
            return "-"
        return ("⚠ " if coverage_warning(cell.delegation) else "") + cell.delegation.summary()

    def other(cell: Cell) -> str:
        return "; ".join(f"{name} {value:.4g} {unit}"
                         for name, (value, unit) in cell.other.items()) or "-"

    metric = Column.metric
    return (
        Column.words("model", lambda c: c.model),
        Column.words("backend", lambda c: c.label),
        Column("runtime", runtime, number=False, css=lambda c: "changed" if change(c) else "",
               title=change),
        Column.words("precision", lambda c: c.precision),
        Column("status", lambda c: c.status.value, number=False,
               css=lambda c: "" if c.ok else "failed"),
        metric(Metric.LATENCY, lambda c: c.p50, "p50 ms"),
        metric(Metric.LATENCY, lambda c: c.p90, "p90 ms"),
        Column("±95%", interval),
        Column("items/s", lambda c: "-" if c.throughput is None else f"{c.throughput:.4g}"),
        metric(Metric.LOAD_TIME, lambda c: c.load),
        metric(Metric.FIRST_INFERENCE, lambda c: c.first),
        metric(Metric.MEMORY_PEAK, lambda c: c.memory_peak),
        metric(Metric.MEMORY_LOAD, lambda c: c.memory_load),
        metric(Metric.MODEL_SIZE, lambda c: c.size),
        metric(Metric.CODE_SIZE, lambda c: c.code_size),
        metric(Metric.ENERGY_PER_INFERENCE, lambda c: c.energy),
        metric(Metric.POWER, lambda c: c.power),
        metric(Metric.ERROR_MAX_ABS, lambda c: c.error_max_abs),
        metric(Metric.ERROR_L2_REL, lambda c: c.error_l2_rel),
        metric(Metric.SQNR, lambda c: c.sqnr),
        metric(Metric.QUANTIZATION_SQNR, lambda c: c.quant_sqnr),
        metric(Metric.LOWERING_SQNR, lambda c: c.lowering_sqnr),
        metric(Metric.COSINE_SIMILARITY, lambda c: c.cosine),
        metric(Metric.TOP1_AGREEMENT, lambda c: c.top1),
        metric(Metric.TOP5_AGREEMENT, lambda c: c.top5),
        metric(Metric.KL_DIVERGENCE, lambda c: c.kl_divergence),
        Column("delegated", delegated),
        Column("other metrics", other),
    )


def _table(cells: Sequence[Cell], changes: Mapping[tuple[str, str], str]) -> list[str]:
    """One row per cell; a failed cell's error across its numbers. A column of numbers no
    cell has is left out, as the terminal's table leaves it out: a column for every metric
    would not fit a window, and a reader looks for the numbers the run has."""
    return html_table(filled_columns(_columns(changes), cells), cells,
                      failure=lambda cell: None if cell.ok else cell.error or "")


def _heat(cells: Sequence[Cell]) -> list[str]:
    """Models down, backends across: p50 shaded by how far it is from the model's fastest,
    with the paired ratio to the fastest and its interval; backends the run cannot tell
    apart from the fastest are marked ≈."""
    labels = list(dict.fromkeys(c.label for c in cells))
    models = list(dict.fromkeys(c.model for c in cells))
    by = {(c.model, c.label): c for c in cells}
    ratios = fastest_ratios(cells)
    rows = ['<table class="heat"><thead><tr><th>model</th>'
            + "".join(f"<th>{esc(label)}</th>" for label in labels) + "</tr></thead><tbody>"]
    for model in models:
        tds = []
        for label in labels:
            cell = by.get((model, label))
            ratio = ratios.get((model, label))
            if cell is None:
                tds.append('<td class="n skip">·</td>')
            elif ratio is None:
                tds.append(f'<td class="n failed" title="{esc(cell.error or "")}">'
                           f"{esc(cell.status.value)}</td>")
            else:
                shade = min(math.log2(ratio.value) / 4, 1.0) if ratio.value > 0 else 0
                colour = f"hsl({120 - 120 * max(shade, 0.0):.0f},60%,88%)"
                verdict = ratio_verdict(ratio)
                fastest = verdict == "fastest"
                tie = verdict in ("tie", "open")
                klass = " fast" if fastest else " tie" if tie else ""
                text = f"×{ratio.value:.2f}"
                if ratio.low is not None and ratio.high is not None:
                    text += f" [{ratio.low:.2f}–{ratio.high:.2f}]"
                mark = {"tie": " ≈", "open": " ?"}.get(verdict, "")
                title = ("the fastest backend" if fastest else
                         "a tie with the fastest, within ±3%" if verdict == "tie" else
                         "not decided: this run cannot tell it apart from the fastest, nor "
                         "call it a tie" if verdict == "open" else
                         f"paired over {ratio.rounds} rounds" if ratio.rounds else
                         "plain ratio of medians (fewer than two rounds)")
                tds.append(f'<td class="n{klass}" style="background:{colour}" '
                           f'title="{esc(title)}">{num(cell.p50 or 0.0)} ms{mark}<br>'
                           f"<small>{esc(text)}</small></td>")
        rows.append(f"<tr><td>{esc(model)}</td>{''.join(tds)}</tr>")
    rows.append("</tbody></table>")
    return rows


def _spread(rows: Sequence[Spread], devices: Sequence[str]) -> list[str]:
    """Model and backend down, devices across, with the slowest/fastest ratio per row."""
    out = ['<table class="heat spread"><thead><tr><th>model</th><th>backend</th>'
           + "".join(f"<th>{esc(d)}</th>" for d in devices)
           + "<th>slowest/fastest</th></tr></thead><tbody>"]
    for row in rows:
        best = min((v for v in row.p50.values() if v), default=None)
        tds = []
        for device in devices:
            value = row.p50.get(device)
            if value is None or best is None:
                tds.append('<td class="n skip">·</td>')
                continue
            shade = min(math.log2(value / best) / 4, 1.0)
            fast = " fast" if device == row.fastest else ""
            tds.append(f'<td class="n{fast}" style="background:hsl({120 - 120 * shade:.0f},'
                       f'60%,88%)">{num(value)} ms</td>')
        ratio = "–" if row.ratio is None else f"×{row.ratio:.2f}"
        name = row.model if row.test == "default" else f"{row.model}/{row.test}"
        out.append(f"<tr><td>{esc(name)}</td><td>{esc(row.label)}</td>{''.join(tds)}"
                   f'<td class="n ratio">{esc(ratio)}</td></tr>')
    out.append("</tbody></table>")
    return out


def matrix_html(
    cells: Sequence[Cell],
    *,
    title: str = "benchlab matrix",
    skipped: Sequence[tuple[str, str]] = (),
    facts: Mapping[str, Any] | None = None,
    changes: Mapping[tuple[str, str], str] | None = None,
    sections: Sequence[str] = (),
    skipped_summary: Sequence[str] = (),
    instructions: Mapping[str, str | None] | None = None,
) -> str:
    """The whole report as one HTML string (inline CSS and SVG, no scripts, no network).

    ``skipped`` are the combinations listed as not run, with their reason;
    ``skipped_summary`` lines follow them (``Results.skipped_summary``: the frameworks the
    user did not name that cannot run a kind of model, one line per kind).

    ``sections`` are the workloads' own sections, placed after the table of every cell: the
    text generators' (:mod:`benchlab.report.generation_html`) and the load scenarios'
    (:mod:`benchlab.report.scenario_html`); empty ones are left out.

    ``changes`` maps ``(model, backend label)`` to a note on a cell whose runtime version
    changed since that job's previous run (see :func:`runtime_change_notes`).

    ``instructions`` maps a device label to its int8 instructions
    (:func:`benchlab.report.answers.device_instructions`), named in the answers section.
    """
    changes = changes or {}
    spread = device_spread(cells)
    answers = answer_spread_html(cells, instructions)
    devices = devices_of(cells)
    cells = per_device(cells)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body><main>",
        f"<h1>{esc(title)}</h1>",
    ]
    if facts:
        parts.append('<p class="facts">' + "".join(
            f"<span><b>{esc(k)}</b>: {esc(v)}</span>" for k, v in facts.items()) + "</p>")
    emulated = sorted({c.device for c in cells if c.emulated})
    if emulated:
        parts.append(f'<p class="emulated"><b>Emulated CPU</b> ({esc(", ".join(emulated))}): '
                     "latency under emulation says nothing about the hardware; the accuracy "
                     "measured there is the emulated core's own.</p>")
    ok = sum(c.ok for c in cells)
    parts.append(f'<p class="sub">{len(cells)} cells, {ok} measured, {len(cells) - ok} failed, '
                 f"{len(skipped)} not run. Latency is per inference; items/s = batch × "
                 "requests per call ÷ p50; error columns compare each backend's outputs with "
                 "the reference (PyTorch fp32 for zoo models).</p>")
    if cells:
        parts += ["<h2>Latency at a glance</h2>", '<div class="wide">', *_heat(cells), "</div>",
                  '<p class="sub">p50 per cell; ×: times the model\'s fastest backend, the '
                  "ratio of the two backends' process medians paired round by round (each "
                  "round measured every cell once, so a drift of the machine cancels), with "
                  "its 95% interval; ≈: a tie with the fastest (the interval inside ×0.97–"
                  "×1.03); ?: not decided (the interval holds ×1 but is wider).</p>"]
        if len(devices) > 1:
            parts += ["<h2>Across devices</h2>", '<div class="wide">',
                      *_spread(spread, devices), "</div>",
                      f'<p class="sub">{len(devices)} devices; p50 per device, shaded by how '
                      "far it is from the fastest device of its row; ×: the slowest device's "
                      "p50 ÷ the fastest's.</p>"]
        if answers:  # the same rows' accuracy: do the devices give the same answer?
            parts.append(answers)
        parts += ["<h2>All cells</h2>",
                  '<p class="sub">±95%: where the median of the next identical run is '
                  "expected, 19 times in 20 (from how the cell's processes spread; "
                  "docs/statistics.md); ¹: one process, so only its own precision.</p>"]
        if changes:
            parts += ['<p class="changed-note">◆ The runtime changed since the previous run of '
                      "these cells, so a number that moved there may have moved with the "
                      "release:</p><ul>", *(f"<li><b>{esc(model)} @ {esc(label)}</b>: "
                                            f"{esc(note)}</li>"
                                            for (model, label), note in changes.items()),
                      "</ul>"]
        parts += ['<div class="wide">', *_table(cells, changes), "</div>"]
        unit_notes = [(c, note) for c in cells for note in c.unit_notes]
        if unit_notes:
            parts += ['<p class="changed-note">Some numbers are not in the table because their '
                      "unit is not one its column converts from (the column headers give the "
                      'units):</p><ul class="unit-notes">',
                      *(f"<li><b>{esc(c.model)} @ {esc(c.label)}</b>: {esc(note)}</li>"
                        for c, note in unit_notes), "</ul>"]
    parts += [section for section in sections if section]
    if skipped or skipped_summary:
        parts += ["<h2>Not run</h2><ul>",
                  *(f'<li class="skip"><b>{esc(label)}</b>: {esc(reason)}</li>'
                    for label, reason in skipped),
                  *(f'<li class="skip">{esc(line)}</li>' for line in skipped_summary), "</ul>"]
    for model in dict.fromkeys(c.model for c in cells):
        parts += model_section(model, [c for c in cells if c.model == model and c.ok])
    why = diagnosis_html(cells)
    if why:
        parts.append(why)
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def runtime_change_notes(
    results: Sequence[Any], previous: Mapping[str, Any]
) -> dict[tuple[str, str], str]:
    """Notes for the cells whose runtime version differs from their job's previous run.

    ``previous`` maps job keys to the last earlier measurement of that job (the store's
    ``previous_points``); the note names both versions and both medians.
    """
    from benchlab.report.history import RuntimeChange
    from benchlab.report.matrix import cells_of, per_device, summary_ms

    notes: dict[tuple[str, str], str] = {}
    cells = per_device(cells_of(results))
    for result, cell in zip(results, cells, strict=True):
        before = previous.get(result.identity.key)
        if before is None or before.runtime_version == cell.runtime_version:
            continue
        change = RuntimeChange(0, before.runtime_version, cell.runtime_version)
        now = f", now {num(cell.p50)} ms" if cell.p50 is not None else ""
        notes[(cell.model, cell.label)] = (
            f"runtime {change.text} since {before.started_at[:10]} "
            f"(p50 then {num(summary_ms(before.summary) or 0.0)} ms{now})")
    return notes


def write_matrix_html(
    results: Sequence[Any],
    path: Path,
    *,
    title: str = "benchlab matrix",
    skipped: Sequence[tuple[str, str]] = (),
    previous: Mapping[str, Any] | None = None,
    skipped_summary: Sequence[str] = (),
) -> Path:
    """Write the matrix report of ``results`` (with raw samples) to ``path``; returns it.
    ``skipped`` and ``skipped_summary``: what was not run (see :func:`matrix_html`).

    ``previous``: the last earlier measurement of each job (``ResultStore.previous_points``),
    so that cells whose runtime version changed since are marked.
    """
    from benchlab.report.generation import generation_rows
    from benchlab.report.generation_html import generation_html
    from benchlab.report.matrix import matrix_cells
    from benchlab.report.scenario import scenario_rows
    from benchlab.report.scenario_html import scenario_html

    facts: dict[str, Any] = {}
    for result in results:
        env = result.environment
        facts = {"host": env.get(EnvKey.HOSTNAME, "?"), "CPU": env.get(EnvKey.CPU_MODEL, "?"),
                 "CPUs allowed": len(env.get(EnvKey.CPUS_ALLOWED, []) or []) or "?",
                 "started": (result.started_at or "")[:19]}
        break
    changes = runtime_change_notes(results, previous) if previous else {}
    page = matrix_html(matrix_cells(results), title=title, skipped=skipped, facts=facts,
                       changes=changes, skipped_summary=skipped_summary,
                       instructions=device_instructions(results),
                       sections=(generation_html(generation_rows(results)),
                                 scenario_html(scenario_rows(results))))
    return write_page(path, page)
