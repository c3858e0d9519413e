"""The results as terminal tables: latency first, then cost and accuracy (or all at once).

At a terminal's width the latency table comes first and is never cut: model, backend, p50, the
interval where the next run's median lands, the ratio to the model's fastest backend (paired by
round, :func:`benchlab.report.matrix.fastest_ratios`) and how many processes the cell got; the
other columns follow in a cost table and an accuracy table. ``--wide`` prints one table with
every column. Its columns are :class:`benchlab.report.columns.Column` objects, drawn by
:func:`benchlab.report.columns.rich_table` as every terminal table is: the key columns fold, and
a table still too wide for the terminal is drawn in parts, so no number or header is cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.table import Table

from benchlab.report.columns import Column, job_name, legend, rich_table
from benchlab.schema.diagnosis import coverage_warning
from benchlab.schema.metrics import milliseconds
from benchlab.report.matrix import (
    Cell,
    cells_of,
    devices_of,
    fastest_ratios,
    other_metric_names,
    ratio_verdict,
)
from benchlab.schema.result import LATENCY_KEY, Metric, Result, Status, StopReason, Summary
from benchlab.schema.units import convert

if TYPE_CHECKING:
    from benchlab.stats.runstats import PairedRatio

__all__ = [
    "FLAG_TAGS",
    "TABLE_PARTS",
    "device_flags",
    "format_ms",
    "ratio_text",
    "results_table",
    "warning_tag",
]

_STATUS_STYLE = {
    Status.OK: "green",
    Status.FAILED: "red",
    Status.TIMEOUT: "yellow",
    Status.USER_ERROR: "magenta",
}


def format_ms(value: float | None, unit: str = "ms") -> str:
    """A time value converted to milliseconds with sensible precision, or ``-``.

    A value that is not a time keeps its own unit (``12 MB``) rather than pose as ms.
    """
    if value is None:
        return "-"
    ms = convert(value, unit, "ms")
    if ms is None:
        return f"{value:.4g} {unit}"
    return milliseconds(ms)


_TAGS = (
    ("high variability", "noisy"),
    ("trend", "trend"),
    ("multimodal", "modes"),
    ("distinct levels", "levels"),
    ("too few", "few"),
)


def warning_tag(warning: str) -> str:
    """A one-word label for a statistics warning, for narrow table cells."""
    lowered = warning.lower()
    return next((tag for needle, tag in _TAGS if needle in lowered), "warn")


#: Short tags for the notes column; drift is already tagged from the latency warnings.
FLAG_TAGS = {"temperature_above_gate": "hot", "not_cooled": "not-cooled",
             "frequency_changed": "freq"}


def device_flags(result: Result) -> list[dict[str, str]]:
    """The result's device flags that have a tag (:data:`FLAG_TAGS`)."""
    return [f for f in result.device_flags if isinstance(f, dict) and f.get("flag") in FLAG_TAGS]


def _summary(result: Result, key: str) -> Summary | None:
    return result.summaries.get(key)


def _shown(summary: Summary | None, value: float | None, spec: str = "") -> str:
    """A cell value already in its column's unit; ``?`` when the metric exists in a unit the
    column cannot show (the notes say which), ``-`` when it does not exist."""
    if value is None:
        return "?" if summary is not None else "-"
    return format(value, spec) if spec else format_ms(value)


def _sci(value: float | None) -> str:
    return "-" if value is None else f"{value:.1e}" if value else "0"


def ratio_text(ratio: PairedRatio | None) -> str:
    """``×1.51 [1.18–1.80]``; ``≈ [0.99–1.02]`` for a tie within ±3%; ``×1.04? [0.95–1.13]``
    when the interval holds 1 but is wider than that; ``×1.00`` for the fastest itself."""
    if ratio is None:
        return "-"
    verdict = ratio_verdict(ratio)
    if verdict == "fastest":
        return "×1.00"
    if verdict == "plain":
        return f"×{ratio.value:.2f}"
    span = f"[{ratio.low:.2f}–{ratio.high:.2f}]"
    if verdict == "decided":
        return f"×{ratio.value:.2f} {span}"
    if verdict == "tie":
        return f"≈ {span}"
    return f"×{ratio.value:.2f}? {span}"


def _ratios(cells: Sequence[Cell]) -> dict[int, str]:
    """Each cell's "× fastest" text, keyed by ``id(cell)``; contests are one model's test on
    one device."""
    groups: dict[tuple[str, str, str], list[Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.model, cell.test, cell.device), []).append(cell)
    out: dict[int, str] = {}
    for group in groups.values():
        ratios = fastest_ratios(group)
        for cell in group:
            out[id(cell)] = ratio_text(ratios.get((cell.model, cell.label)))
    return out


def _procs(result: Result) -> str:
    """How many processes, and a word when a raced cell stopped with its answer open."""
    count = str(result.repetitions or "-")
    stop = result.stop_reason
    if stop in (StopReason.PROCESS_CAP, StopReason.RACE_BUDGET):
        return f"{count} open"
    if stop is StopReason.MACHINE_FLOOR:
        return f"{count} floor"
    return count


def cell_notes(result: Result, cell: Cell) -> str:
    """The one-word tags of the notes column, comma-separated."""
    latency = _summary(result, LATENCY_KEY)
    notes: list[str] = ["error"] if result.error else []
    if latency is not None:
        notes += [warning_tag(w) for w in latency.warnings]
    if result.stop_reason is StopReason.TIME_BUDGET_EXHAUSTED:
        notes.append("budget")
    notes += [FLAG_TAGS[f["flag"]] for f in device_flags(result)]
    if cell.unit_notes:
        notes.append("unit")
    if cell.delegation is not None and coverage_warning(cell.delegation):
        notes.append("fallback")
    if cell.layers is not None and cell.layers.first_diverging is not None:
        notes.append("layer")
    return ",".join(dict.fromkeys(notes))


_MAX_OTHER_COLUMNS = 4

#: The parts a narrow terminal gets, one table each, in order; ``all`` is one wide table.
TABLE_PARTS = ("latency", "cost", "accuracy")


@dataclass(frozen=True, slots=True)
class _Row:
    """One job as the main table reads it: its result, its cell and its "× fastest" text."""

    result: Result
    cell: Cell
    ratio: str

    def summary(self, metric: Metric) -> Summary | None:
        return self.result.summaries.get(metric.key)


def _model_test(row: _Row) -> str:
    ident = row.result.identity
    return job_name(ident.model_name, ident.test_identifier)


def _ci(row: _Row) -> str:
    latency = row.summary(Metric.LATENCY)
    if latency is None:
        return "-"
    return f"{latency.ci_rel_halfwidth * 100:.1f}%" + ("" if latency.predicts_next_run else "¹")


def _measured(metric: Metric, value: Callable[[Cell], float | None], spec: str = "",
              ) -> Callable[[_Row], str]:
    return lambda row: _shown(row.summary(metric), value(row.cell), spec)


def _other(name: str) -> Column[_Row]:
    """A metric with no column of its own, headed by its name, in the unit it came in."""
    def text(row: _Row) -> str:
        found = row.cell.other.get(name)
        return "-" if found is None else f"{found[0]:.4g} {found[1]}"

    return Column(name, text)


def _samples(row: _Row) -> str:
    latency = row.summary(Metric.LATENCY)
    return "-" if latency is None else str(latency.count)


def _instructions(row: _Row) -> str:
    counted = _summary(row.result, Metric.INSTRUCTIONS.key)
    return "-" if counted is None else f"{counted.p50:,.0f}"


def _q_l(cell: Cell) -> str:
    if cell.quant_sqnr is None or cell.lowering_sqnr is None:
        return "-"
    return f"{cell.quant_sqnr:.1f}/{cell.lowering_sqnr:.1f}"


_TIMES = "times in ms"

#: Every column the main table may have, by its label; ``results_table`` picks a part's.
#: Keys fold on a narrow terminal; numbers are never cut; each column's legend is said in
#: the caption only when the column is shown.
_COLUMNS: dict[str, Column[_Row]] = {c.label: c for c in (
    Column.words("model/test", _model_test, key=True),
    Column.words("framework", lambda r: r.cell.label, key=True),
    Column.words("device", lambda r: r.cell.device, key=True),
    Column.words("prec", lambda r: r.cell.precision),
    Column.words("status", lambda r: r.result.status.value,
                 style=lambda r: _STATUS_STYLE.get(r.result.status, "")),
    Column("p50", _measured(Metric.LATENCY, lambda c: c.p50), legend="p50 in ms"),
    Column("p90", _measured(Metric.LATENCY, lambda c: c.p90), legend=_TIMES),
    Column("±95%", _ci,
           legend="±95%: where the next identical run's median is expected (95%, from the "
                  "spread between processes; ¹: one process, its own precision only)"),
    Column.words("× fastest", lambda r: r.ratio,
                 legend="× fastest: p50 over the model's fastest backend, paired by round, "
                        "with its 95% interval (≈: a tie within ±3%; ?: not decided)"),
    Column("procs", lambda r: _procs(r.result),
           legend="procs: fresh processes, and why a raced cell stopped when its answer is "
                  "still open (floor: its interval cannot reach the goal on this machine)"),
    Column("n", _samples),
    Column("load", _measured(Metric.LOAD_TIME, lambda c: c.load), legend=_TIMES),
    Column("first", _measured(Metric.FIRST_INFERENCE, lambda c: c.first), legend=_TIMES),
    Column("MiB", _measured(Metric.MEMORY_PEAK, lambda c: c.memory_peak, ".0f"),
           legend="peak memory in MiB"),
    Column("size", _measured(Metric.MODEL_SIZE, lambda c: c.size, ".2f"),
           legend="size in MiB"),
    Column("code", _measured(Metric.CODE_SIZE, lambda c: c.code_size, ".1f"),
           legend="code: MiB of the runtime's libraries the process loaded (or a native "
                  "tool's binary and libraries)"),
    Column("instr", _instructions,
           legend="instr: instructions per counted call (median; under valgrind, or on an "
                  "emulated core where the result says so)"),
    Column("mJ", _measured(Metric.ENERGY_PER_INFERENCE, lambda c: c.energy, ".4g"),
           legend="energy per inference in mJ"),
    Column("W", _measured(Metric.POWER, lambda c: c.power, ".3g"), legend="power in W"),
    Column("err", lambda r: _sci(r.cell.error_max_abs),
           legend="err: max |output − reference|"),
    Column("L2rel", lambda r: _sci(r.cell.error_l2_rel),
           legend="L2rel: ‖output − reference‖ / ‖reference‖"),
    Column("SQNR", lambda r: "-" if r.cell.sqnr is None else f"{r.cell.sqnr:.1f}",
           legend="SQNR in dB"),
    Column("top1", lambda r: "-" if r.cell.top1 is None else f"{r.cell.top1:.0%}"),
    Column("KL", lambda r: _sci(r.cell.kl_divergence),
           legend="KL: KL divergence of the classes, nats"),
    Column("q/l dB", lambda r: _q_l(r.cell),
           legend="q/l dB: SQNR of the int8 error's quantization and lowering parts"),
    Column.words("deleg", lambda r: r.cell.delegation.summary() if r.cell.delegation else "-",
                 legend="deleg: share of operators the delegate or provider took (or its "
                        "partitions)"),
    Column("notes", lambda r: cell_notes(r.result, r.cell), number=False, wrap=True),
)}

#: The latency and cost parts' columns (the rest of the extra columns are the accuracy part's).
_LATENCY_COLUMNS = ("p50", "±95%", "× fastest", "procs", "notes")
_COST_COLUMNS = ("status", "p90", "n", "load", "first", "MiB", "size", "code", "instr", "mJ",
                 "W")


def _caption(columns: Sequence[Column[_Row]]) -> str:
    """What the shown columns mean, part by part: the latency columns' legends, the cost
    columns' units in one phrase (``times in ms, peak memory in MiB, ...``), the accuracy
    columns' legends."""
    latency = [c for c in columns if c.label in _LATENCY_COLUMNS]
    units = ", ".join(dict.fromkeys(c.legend for c in columns
                                    if c.label in _COST_COLUMNS and c.legend))
    accuracy = [c for c in columns if c.label not in (*_LATENCY_COLUMNS, *_COST_COLUMNS)]
    return "; ".join(filter(None, (legend(latency), units, legend(accuracy))))


def results_table(results: Sequence[Result], title: str = "benchlab results",
                  part: str = "all") -> Table | None:
    """One row per job, the columns of ``part``: ``latency`` (p50, ±95%, × fastest, processes,
    notes), ``cost`` (status, p90, n, load, first inference, memory, model size, the runtime's
    code size, energy, and metrics
    with no column of their own), ``accuracy`` (precision and the error columns, when any job
    reports them; ``None`` when none does) or ``all`` of them in one wide table.

    Times are in milliseconds; ``±95%`` is the half-width of the interval where the next
    identical run's median is expected, relative to the median (``¹``: one process, so only
    that process's own precision); ``notes`` tags warnings whose full text
    :func:`benchlab.report.terminal.result_notes` gives. The key columns (model/test,
    framework, device) fold rather than push the numbers off a narrow terminal, and a table
    still too wide is drawn in parts (:class:`benchlab.report.columns.FittedTable`); numbers
    and headers are never cut. The caption names only the shown columns' units and meanings.
    """
    if part not in (*TABLE_PARTS, "all"):
        raise ValueError(f"part must be one of {TABLE_PARTS} or 'all', not {part!r}")
    cells = cells_of(results)
    extra = [
        ("prec", any(c.precision != "fp32" or c.size is not None for c in cells)),
        ("size", any(c.size is not None for c in cells)),
        ("code", any(c.code_size is not None for c in cells)),
        ("instr", any(Metric.INSTRUCTIONS.key in r.summaries for r in results)),
        ("mJ", any(c.energy is not None for c in cells)),
        ("W", any(c.power is not None for c in cells)),
        ("err", any(c.error_max_abs is not None for c in cells)),
        ("L2rel", any(c.error_l2_rel is not None for c in cells)),
        ("SQNR", any(c.sqnr is not None for c in cells)),
        ("top1", any(c.top1 is not None for c in cells)),
        ("KL", any(c.kl_divergence is not None for c in cells)),
        ("q/l dB", any(c.quant_sqnr is not None for c in cells)),
        ("deleg", any(c.delegation is not None for c in cells)),
    ]
    shown = [name for name, present in extra if present]
    device = ["device"] if len(devices_of(cells)) > 1 else []
    # Metrics with no column of their own (a FAI-PEP postprocess's accuracy): a few, by name.
    other = {name: _other(name) for name in other_metric_names(cells)[:_MAX_OTHER_COLUMNS]}
    latency_part = list(_LATENCY_COLUMNS)
    cost_part = ["status", "p90", "n", "load", "first", "MiB",
                 *[c for c in shown if c in _COST_COLUMNS], *other]
    accuracy_part = [c for c in shown if c not in _COST_COLUMNS]
    if part == "all":
        names = ["model/test", "framework", *device, *(["prec"] if "prec" in shown else []),
                 "status", "p50", "p90", "±95%", "× fastest", "procs", "n", "load", "first",
                 "MiB", *[c for c in shown if c != "prec"], *other, "notes"]
    else:
        chosen = {"latency": latency_part, "cost": cost_part, "accuracy": accuracy_part}[part]
        if not chosen:
            return None
        names = ["model/test", "framework", *device, *chosen]
    columns = [other[name] if name in other else _COLUMNS[name] for name in names]
    ratios = _ratios(cells) if "× fastest" in names else {}
    rows = [_Row(result, cell, ratios.get(id(cell), "-"))
            for result, cell in zip(results, cells, strict=True)]
    return rich_table(columns, rows, title=title, caption=_caption(columns))
