"""The results as terminal tables: latency first, then cost and accuracy (or all at once).

At a terminal's width the latency table comes first and is never cut: model, backend, p50, the
interval where the next run's median lands, the ratio to the model's fastest backend (paired by
round, :func:`benchlab.report.matrix.fastest_ratios`) and how many processes the cell got; the
other columns follow in a cost table and an accuracy table. ``--wide`` prints one table with
every column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from benchlab.schema.diagnosis import coverage_warning
from benchlab.schema.metrics import milliseconds
from benchlab.report.matrix import (
    Cell,
    cell_of,
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


_MAX_OTHER_COLUMNS = 4


#: The parts a narrow terminal gets, one table each, in order; ``all`` is one wide table.
TABLE_PARTS = ("latency", "cost", "accuracy")

_COST_COLUMNS = ("status", "p90", "n", "load", "first", "MiB", "size", "mJ", "W")
_KEYS = ("model/test", "framework", "device")
_LEFT = frozenset({"model/test", "framework", "device", "status", "notes", "prec", "× fastest"})
_CAPTIONS = {
    "latency": "p50 in ms; ±95%: where the next identical run's median is expected (95%, from "
               "the spread between processes; ¹: one process, its own precision only); × "
               "fastest: p50 over the model's fastest backend, paired by round, with its 95% "
               "interval (≈: a tie within ±3%; ?: not decided); procs: fresh processes, and "
               "why a raced cell stopped when its answer is still open",
    "cost": "times in ms, memory and size in MiB, energy per inference in mJ, power in W",
    "accuracy": "err: max |output − reference|; L2rel: ‖output − reference‖ / ‖reference‖; KL: "
                "KL divergence of the classes, nats; q/l dB: SQNR of the int8 error's "
                "quantization and lowering parts; deleg: share of operators the delegate or "
                "provider took (or its partitions)",
}


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


def results_table(results: Sequence[Result], title: str = "benchlab results",
                  part: str = "all") -> Table | None:
    """One row per job, the columns of ``part``: ``latency`` (p50, ±95%, × fastest, processes,
    notes), ``cost`` (status, p90, n, load, first inference, memory, size, energy, and metrics
    with no column of their own), ``accuracy`` (precision and the error columns, when any job
    reports them; ``None`` when none does) or ``all`` of them in one wide table.

    Times are in milliseconds; ``±95%`` is the half-width of the interval where the next
    identical run's median is expected, relative to the median (``¹``: one process, so only
    that process's own precision); ``notes`` tags warnings whose full text
    :func:`benchlab.report.terminal.result_notes` gives. The key columns (model/test,
    framework, device) fold rather than push the numbers off a narrow terminal; numbers are
    never cut.
    """
    if part not in (*TABLE_PARTS, "all"):
        raise ValueError(f"part must be one of {TABLE_PARTS} or 'all', not {part!r}")
    cells = {id(r): cell_of(r) for r in results}
    extra = [
        ("prec", any(c.precision != "fp32" or c.size is not None for c in cells.values())),
        ("size", any(c.size is not None for c in cells.values())),
        ("mJ", any(c.energy is not None for c in cells.values())),
        ("W", any(c.power is not None for c in cells.values())),
        ("err", any(c.error_max_abs is not None for c in cells.values())),
        ("L2rel", any(c.error_l2_rel is not None for c in cells.values())),
        ("SQNR", any(c.sqnr is not None for c in cells.values())),
        ("top1", any(c.top1 is not None for c in cells.values())),
        ("KL", any(c.kl_divergence is not None for c in cells.values())),
        ("q/l dB", any(c.quant_sqnr is not None for c in cells.values())),
        ("deleg", any(c.delegation is not None for c in cells.values())),
    ]
    shown = [name for name, present in extra if present]
    device = ["device"] if len(devices_of(list(cells.values()))) > 1 else []
    # Metrics with no column of their own (a FAI-PEP postprocess's accuracy): a few, by name.
    other = other_metric_names(list(cells.values()))[:_MAX_OTHER_COLUMNS]
    latency_part = ["p50", "±95%", "× fastest", "procs", "notes"]
    cost_part = ["status", "p90", "n", "load", "first", "MiB",
                 *[c for c in shown if c in _COST_COLUMNS], *other]
    accuracy_part = [c for c in shown if c not in _COST_COLUMNS]
    if part == "all":
        columns = ["model/test", "framework", *device, *(["prec"] if "prec" in shown else []),
                   "status", "p50", "p90", "±95%", "× fastest", "procs", "n", "load", "first",
                   "MiB", *[c for c in shown if c != "prec"], *other, "notes"]
        caption = "; ".join(_CAPTIONS.values())
    else:
        chosen = {"latency": latency_part, "cost": cost_part, "accuracy": accuracy_part}[part]
        if not chosen:
            return None
        columns = ["model/test", "framework", *device, *chosen]
        caption = _CAPTIONS[part]
    table = Table(title=title, caption=caption, header_style="bold", expand=False)
    for name in columns:
        table.add_column(name, justify="left" if name in _LEFT else "right",  # type: ignore[arg-type]
                         no_wrap=name not in (*_KEYS, "notes"),
                         overflow="fold" if name in (*_KEYS, "notes") else "ellipsis",
                         min_width=len(name) if name not in _KEYS else None)
    ratios = _ratios(list(cells.values())) if "× fastest" in columns else {}
    for result in results:
        ident, cell = result.identity, cells[id(result)]
        name = ident.model_name
        if ident.test_identifier != "default":
            name += f"/{ident.test_identifier}"
        latency = _summary(result, LATENCY_KEY)
        ci = "-"
        if latency is not None:
            ci = f"{latency.ci_rel_halfwidth * 100:.1f}%"
            ci += "" if latency.predicts_next_run else "¹"
        style = _STATUS_STYLE.get(result.status, "")
        values = {
            "model/test": escape(name), "framework": escape(cell.label),
            "device": escape(cell.device),
            "prec": escape(cell.precision), "status": f"[{style}]{result.status.value}[/]",
            "p50": _shown(latency, cell.p50), "p90": _shown(latency, cell.p90), "±95%": ci,
            "× fastest": ratios.get(id(cell), "-"), "procs": _procs(result),
            "n": str(latency.count) if latency else "-",
            "load": _shown(_summary(result, Metric.LOAD_TIME.key), cell.load),
            "first": _shown(_summary(result, Metric.FIRST_INFERENCE.key), cell.first),
            "MiB": _shown(_summary(result, Metric.MEMORY_PEAK.key), cell.memory_peak, ".0f"),
            "size": _shown(_summary(result, Metric.MODEL_SIZE.key), cell.size, ".2f"),
            "mJ": _shown(_summary(result, Metric.ENERGY_PER_INFERENCE.key), cell.energy, ".4g"),
            "W": _shown(_summary(result, Metric.POWER.key), cell.power, ".3g"),
            "err": _sci(cell.error_max_abs),
            "L2rel": _sci(cell.error_l2_rel),
            "SQNR": f"{cell.sqnr:.1f}" if cell.sqnr is not None else "-",
            "KL": _sci(cell.kl_divergence),
            "top1": f"{cell.top1:.0%}" if cell.top1 is not None else "-",
            "q/l dB": "-" if cell.quant_sqnr is None or cell.lowering_sqnr is None
            else f"{cell.quant_sqnr:.1f}/{cell.lowering_sqnr:.1f}",
            "deleg": escape(cell.delegation.summary()) if cell.delegation else "-",
            "notes": cell_notes(result, cell),
            **{name: f"{cell.other[name][0]:.4g} {cell.other[name][1]}" if name in cell.other
               else "-" for name in other},
        }
        table.add_row(*(values[c] for c in columns))
    return table
