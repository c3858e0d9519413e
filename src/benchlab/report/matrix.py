"""The model × backend matrix: one cell per job; latency, memory, size and accuracy side by side.

:func:`matrix_cells` reads results (from a sweep or the store) into :class:`Cell` rows that the
terminal table and the HTML report both draw, so the two always agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from benchlab.plugins import ConfigLabels
from benchlab.report.columns import Column, job_name, rich_table
from benchlab.schema.diagnosis import Coverage, LayerTable
from benchlab.report.svg import median
from benchlab.schema.metrics import METRICS, milliseconds
from benchlab.schema.units import convert, dimension_of
from benchlab.schema.result import LATENCY_KEY, DetailKey, EnvKey, Metric, Result, Status, Summary

if TYPE_CHECKING:
    from benchlab.stats.runstats import PairedRatio

__all__ = [
    "COLUMN_UNITS",
    "Cell",
    "Spread",
    "cell_of",
    "cells_of",
    "config_label",
    "device_spread",
    "device_spread_table",
    "devices_of",
    "fastest_ratios",
    "matrix_cells",
    "other_metric_names",
    "pareto_front",
    "per_device",
    "ratio_verdict",
    "summary_in",
    "summary_ms",
    "unit_note",
]

#: The unit each of a cell's measured columns is shown in (every reporter states these).
COLUMN_UNITS: dict[Metric, str] = {metric: METRICS[metric].unit for metric in (
    Metric.LATENCY, Metric.FIRST_INFERENCE, Metric.LOAD_TIME, Metric.COMPILE_TIME,
    Metric.MEMORY_PEAK, Metric.MEMORY_LOAD, Metric.MODEL_SIZE, Metric.CODE_SIZE,
    Metric.ENERGY_PER_INFERENCE, Metric.POWER)}


def config_label(framework: str, config: Mapping[str, Any],
                 labels: ConfigLabels | None = None) -> str:
    """``executorch[xnnpack,int8]``, ``onnxruntime[int8,threads=4]``: the framework with its
    options, each shown as its declaration says (``key=value`` unless declared bare:
    :class:`~benchlab.plugins.ConfigLabels`). ``labels``: one shared across a
    table, so each framework's declaration is looked up once."""
    return (labels or ConfigLabels())(framework, config)


@dataclass(frozen=True, slots=True)
class Cell:
    """One model × framework configuration: the numbers the matrix shows, or why it failed.

    Times are milliseconds, memory and sizes MiB, energy per inference mJ and power W
    (:data:`COLUMN_UNITS`), converted from each
    sample's own unit. A metric whose unit does not convert is ``None`` here and explained in
    ``unit_notes``, never shown under the wrong unit. Accuracy fields are ``None`` when the job
    had no reference to compare against. ``ops`` holds per-operator median milliseconds when
    operators were timed; ``ops_unavailable`` says why they could not be.
    """

    model: str
    test: str
    framework: str
    label: str
    status: Status
    error: str | None = None
    device: str = ""  #: :attr:`benchlab.schema.result.JobIdentity.device_label`
    #: How the device's CPU was emulated (its environment's ``emulated``), or None.
    emulated: str | None = None
    precision: str = "fp32"
    p50: float | None = None
    p90: float | None = None
    ci_rel: float | None = None
    latencies: tuple[float, ...] = ()
    #: Each process's median latency in ms, in process (round) order.
    process_p50s: tuple[float, ...] = ()
    load: float | None = None
    first: float | None = None
    compile: float | None = None
    memory_peak: float | None = None
    memory_load: float | None = None
    size: float | None = None
    code_size: float | None = None
    energy: float | None = None
    power: float | None = None
    params: int | None = None
    flops: int | None = None
    batch: int | None = None
    throughput: float | None = None
    error_max_abs: float | None = None
    error_mean_abs: float | None = None
    error_max_rel: float | None = None
    error_l2_rel: float | None = None
    cross_entropy: float | None = None
    kl_divergence: float | None = None
    sqnr: float | None = None
    cosine: float | None = None
    top1: float | None = None
    top5: float | None = None
    #: The int8 error split (docs/accuracy.md): what the recipe costs, what the kernels add.
    quant_sqnr: float | None = None
    lowering_sqnr: float | None = None
    quant_l2_rel: float | None = None
    lowering_l2_rel: float | None = None
    #: The rounding floor under the lowering part: one ulp of input change, same scale.
    floor_sqnr: float | None = None
    floor_l2_rel: float | None = None
    #: What the delegate or execution provider took, and the layer table when asked for.
    delegation: Coverage | None = None
    layers: LayerTable | None = None
    ops: Mapping[str, float] = field(default_factory=dict)
    ops_unavailable: str | None = None
    #: Whole-model metrics benchlab has no column for (a FAI-PEP postprocess's
    #: ``top1_accuracy``, a tool's own figures): metric → (median, unit as reported).
    other: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    runtime_version: str | None = None
    unit_notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the job produced measurements."""
        return self.status is Status.OK


def summary_in(summary: Summary | None, unit: str, attr: str = "p50") -> float | None:
    """A statistic of ``summary`` in ``unit``; ``None`` when its own unit does not convert."""
    if summary is None:
        return None
    return convert(getattr(summary, attr), summary.unit, unit)


def summary_ms(summary: Summary | None, attr: str = "p50") -> float | None:
    """A time statistic of ``summary`` in milliseconds; ``None`` when it is not a time."""
    return summary_in(summary, "ms", attr)


def unit_note(key: str, unit: str, column_unit: str) -> str:
    """Why a metric is missing from a column: its unit is not one the column converts from."""
    known = dimension_of(unit)
    what = f"a {known} unit" if known else "a unit benchlab does not know"
    return (f"{key} is in {unit!r} ({what}), not convertible to {column_unit}: not shown; "
            "its samples are stored as reported")


def _value(summary: Summary | None) -> float | None:
    return None if summary is None else summary.p50


def _precision(result: Result) -> str:
    """What the runtime reports it really used, else what the configuration asked for."""
    details, config = result.details, result.identity.framework_config
    reported = details.get(DetailKey.PRECISION)
    if reported:
        return str(reported)
    return str(config.get("precision", "fp32"))


def _batch(details: Mapping[str, Any]) -> int | None:
    inputs = details.get(DetailKey.INPUTS)
    if not isinstance(inputs, Mapping) or not inputs:
        return None
    shape = next(iter(inputs.values()))[0]
    return int(shape[0]) if isinstance(shape, list) and shape else None


def _ops(result: Result, notes: dict[str, str]) -> dict[str, float]:
    per_op: dict[str, list[float]] = {}
    for sample in result.samples:
        if sample.type != "NET" and sample.metric == Metric.LATENCY:
            ms = convert(sample.value, sample.unit, "ms")
            if ms is None:
                notes.setdefault(sample.key, unit_note(sample.key, sample.unit, "ms"))
                continue
            per_op.setdefault(sample.type, []).append(ms)
    return {op: median(values) for op, values in per_op.items()}


class _Columns:
    """Reads a result's summaries in the cell's column units, noting what does not convert."""

    def __init__(self, summaries: Mapping[str, Summary]) -> None:
        self.summaries = summaries
        self.notes: dict[str, str] = {}

    def get(self, metric: Metric, attr: str = "p50") -> float | None:
        summary = self.summaries.get(metric.key)
        unit = COLUMN_UNITS[metric]
        value = summary_in(summary, unit, attr)
        if summary is not None and value is None:
            self.notes.setdefault(metric.key, unit_note(metric.key, summary.unit, unit))
        return value


_KNOWN = {metric.key for metric in Metric}


def _other_metrics(summaries: Mapping[str, Summary]) -> dict[str, tuple[float, str]]:
    return {key.removeprefix("NET "): (summary.p50, summary.unit)
            for key, summary in summaries.items()
            if key.startswith("NET ") and key not in _KNOWN}


def other_metric_names(cells: Sequence[Cell]) -> list[str]:
    """The metrics without a column that any of ``cells`` has, in the order first seen."""
    return list(dict.fromkeys(name for cell in cells for name in cell.other))


def cells_of(results: Sequence[Result]) -> list[Cell]:
    """:func:`cell_of` of every result, in order, the labels from one
    :class:`~benchlab.plugins.ConfigLabels`."""
    labels = ConfigLabels()
    return [cell_of(result, labels) for result in results]


def cell_of(result: Result, labels: ConfigLabels | None = None) -> Cell:
    """One result as a :class:`Cell` (``labels``: as for :func:`config_label`)."""
    ident, details, s = result.identity, result.details, result.summaries
    columns = _Columns(s)
    latency = s.get(LATENCY_KEY)
    info = result.model_info
    p50 = columns.get(Metric.LATENCY)
    batch = _batch(details)
    requests = details.get(DetailKey.REQUESTS_PER_CALL) or 1
    throughput = None
    if p50 and batch:
        throughput = batch * float(requests) * 1000.0 / p50
    samples: tuple[float, ...] = ()
    if p50 is not None:
        converted = (convert(x.value, x.unit, "ms") for x in result.samples
                     if x.key == LATENCY_KEY)
        samples = tuple(v for v in converted if v is not None)
    ops = _ops(result, columns.notes)
    rounds: tuple[float, ...] = ()
    if latency is not None:
        in_ms = [convert(v, latency.unit, "ms") for v in latency.process_p50s]
        rounds = tuple(v for v in in_ms if v is not None)
    return Cell(
        model=ident.model_name, test=ident.test_identifier, framework=ident.framework,
        label=config_label(ident.framework, ident.framework_config, labels),
        status=result.status,
        error=result.error, device=ident.device_label,
        emulated=result.environment.get(EnvKey.EMULATED), precision=_precision(result), p50=p50,
        p90=columns.get(Metric.LATENCY, "p90"),
        ci_rel=latency.ci_rel_halfwidth if latency else None, latencies=samples,
        process_p50s=rounds,
        load=columns.get(Metric.LOAD_TIME), first=columns.get(Metric.FIRST_INFERENCE),
        compile=columns.get(Metric.COMPILE_TIME),
        memory_peak=columns.get(Metric.MEMORY_PEAK, "max"),
        memory_load=columns.get(Metric.MEMORY_LOAD), size=columns.get(Metric.MODEL_SIZE),
        code_size=columns.get(Metric.CODE_SIZE), energy=columns.get(Metric.ENERGY_PER_INFERENCE), power=columns.get(Metric.POWER),
        params=info.get("params"), flops=info.get("flops"), batch=batch, throughput=throughput,
        error_max_abs=_value(s.get(Metric.ERROR_MAX_ABS.key)),
        error_mean_abs=_value(s.get(Metric.ERROR_MEAN_ABS.key)),
        error_max_rel=_value(s.get(Metric.ERROR_MAX_REL.key)),
        error_l2_rel=_value(s.get(Metric.ERROR_L2_REL.key)),
        cross_entropy=_value(s.get(Metric.CROSS_ENTROPY.key)),
        kl_divergence=_value(s.get(Metric.KL_DIVERGENCE.key)),
        sqnr=_value(s.get(Metric.SQNR.key)),
        cosine=_value(s.get(Metric.COSINE_SIMILARITY.key)),
        top1=_value(s.get(Metric.TOP1_AGREEMENT.key)),
        top5=_value(s.get(Metric.TOP5_AGREEMENT.key)),
        quant_sqnr=_value(s.get(Metric.QUANTIZATION_SQNR.key)),
        lowering_sqnr=_value(s.get(Metric.LOWERING_SQNR.key)),
        quant_l2_rel=_value(s.get(Metric.QUANTIZATION_L2_REL.key)),
        lowering_l2_rel=_value(s.get(Metric.LOWERING_L2_REL.key)),
        floor_sqnr=_value(s.get(Metric.LOWERING_FLOOR_SQNR.key)),
        floor_l2_rel=_value(s.get(Metric.LOWERING_FLOOR_L2_REL.key)),
        delegation=Coverage.from_detail(details.get(DetailKey.DELEGATION)),
        layers=LayerTable.from_detail(details.get(DetailKey.LAYER_ERRORS)), ops=ops,
        ops_unavailable=details.get(DetailKey.OP_PROFILE_UNAVAILABLE),
        other=_other_metrics(s),
        warnings=tuple(latency.warnings) if latency else (),
        runtime_version=result.runtime_version,
        unit_notes=tuple(columns.notes.values()),
    )


def fastest_ratios(cells: Sequence[Cell]) -> dict[tuple[str, str], PairedRatio]:
    """(model, backend label) → its p50 over the model's fastest backend, paired by round.

    Process r of every cell ran in round r of the run (see :func:`benchlab.harness.planner.execute`),
    so the ratio of their medians cancels what the machine did during that round; the
    interval is over rounds. The fastest backend itself maps to a ratio of 1 with no
    interval. A cell with fewer rounds than two, or none, gets the plain ratio of p50s.
    """
    # Here, not at the top: the CLI imports this module and must not load numpy to start.
    from benchlab.stats.runstats import PairedRatio, paired_ratio

    out: dict[tuple[str, str], PairedRatio] = {}
    by_model: dict[str, list[Cell]] = {}
    for cell in cells:
        if cell.ok and cell.p50:
            by_model.setdefault(cell.model, []).append(cell)
    for model, mine in by_model.items():
        best = min(mine, key=lambda c: c.p50 or math.inf)
        for cell in mine:
            if cell is best:
                out[(model, cell.label)] = PairedRatio(1.0, None, None, 0.95, 0)
            elif len(cell.process_p50s) >= 2 and len(best.process_p50s) >= 2:
                out[(model, cell.label)] = paired_ratio(best.process_p50s, cell.process_p50s)
            else:
                out[(model, cell.label)] = PairedRatio(
                    (cell.p50 or 0.0) / (best.p50 or 1.0), None, None, 0.95, 0)
    return out


def ratio_verdict(ratio: PairedRatio) -> str:
    """``fastest`` for the model's fastest backend itself (as :func:`fastest_ratios` marks
    it), else :meth:`benchlab.stats.runstats.PairedRatio.verdict`: ``decided``, ``tie``, ``open``
    or ``plain``."""
    if ratio.rounds == 0 and ratio.value == 1.0 and ratio.low is None:
        return "fastest"
    return ratio.verdict()


def matrix_cells(results: Sequence[Result]) -> list[Cell]:
    """One :class:`Cell` per result, ordered by model, then framework label, then device."""
    cells = cells_of(results)
    order = {m: i for i, m in enumerate(dict.fromkeys(c.model for c in cells))}
    devices = {d: i for i, d in enumerate(dict.fromkeys(c.device for c in cells))}
    return sorted(cells, key=lambda c: (order[c.model], c.test, c.label, devices[c.device]))


def devices_of(cells: Sequence[Cell]) -> list[str]:
    """The devices the cells were measured on, in the order they first appear."""
    return list(dict.fromkeys(c.device for c in cells))


def per_device(cells: Sequence[Cell]) -> list[Cell]:
    """The cells labelled ``backend @ device`` when they span several devices (so charts and
    tables keyed by label keep one series per device), else unchanged."""
    if len(devices_of(cells)) < 2:
        return list(cells)
    return [replace(c, label=f"{c.label} @ {c.device}") for c in cells]


@dataclass(frozen=True, slots=True)
class Spread:
    """One model/test × backend across devices: each device's p50 (ms, ``None`` where the job
    failed or did not run there) and how many times slower the slowest device is than the
    fastest (``None`` with fewer than two measured devices)."""

    model: str
    test: str
    label: str
    p50: Mapping[str, float | None]
    ratio: float | None

    @property
    def fastest(self) -> str | None:
        """The device with the lowest p50."""
        measured = {d: v for d, v in self.p50.items() if v is not None}
        return min(measured, key=measured.__getitem__) if measured else None

    @property
    def slowest(self) -> str | None:
        """The device with the highest p50."""
        measured = {d: v for d, v in self.p50.items() if v is not None}
        return max(measured, key=measured.__getitem__) if measured else None


def device_spread(cells: Sequence[Cell]) -> list[Spread]:
    """The device axis of the matrix: for every model/test × backend, its p50 on each device
    and the slowest/fastest ratio, the spread of one model across the lab's devices."""
    devices = devices_of(cells)
    rows: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for cell in cells:
        row = rows.setdefault((cell.model, cell.test, cell.label), dict.fromkeys(devices))
        row[cell.device] = cell.p50 if cell.ok else None
    spread = []
    for (model, test, label), p50 in rows.items():
        measured = [v for v in p50.values() if v]
        ratio = max(measured) / min(measured) if len(measured) > 1 else None
        spread.append(Spread(model, test, label, p50, ratio))
    return spread


def _spread_columns(devices: Sequence[str]) -> list[Column[Spread]]:
    def p50(device: str) -> Column[Spread]:
        def text(row: Spread) -> str:
            value = row.p50[device]
            return "-" if value is None else milliseconds(value)

        def style(row: Spread) -> str:
            return "bold" if row.ratio is not None and row.fastest == device else ""

        return Column(device, text, style=style)

    return [Column.words("model/test", lambda r: job_name(r.model, r.test), key=True),
            Column.words("framework", lambda r: r.label, key=True),
            *(p50(device) for device in devices),
            Column("slow/fast", lambda r: "-" if r.ratio is None else f"×{r.ratio:.2f}")]


def device_spread_table(results: Sequence[Result], title: str = "across devices") -> Any:
    """The terminal's device axis (a rich ``Table``): models and backends down, devices
    across, each device's p50 in ms (the fastest in bold) and how many times slower the
    slowest device is than the fastest; ``None`` for results of one device. Too many devices
    for the terminal, it is drawn in parts, each with the model and backend."""
    cells = cells_of(results)
    devices = devices_of(cells)
    if len(devices) < 2:
        return None
    return rich_table(_spread_columns(devices), device_spread(cells), title=title,
                      caption="p50 in ms per device; slow/fast: the slowest device's p50 ÷ "
                              "the fastest's; bold: the fastest device")


def pareto_front(cells: Sequence[Cell]) -> set[str]:
    """Labels of the cells no other cell beats on both latency and SQNR (one model's cells)."""
    points = [(c.label, c.p50, c.sqnr) for c in cells
              if c.p50 is not None and c.sqnr is not None and math.isfinite(c.sqnr)]
    front = set()
    for label, lat, sq in points:
        dominated = any(
            (o_lat <= lat and o_sq >= sq) and (o_lat < lat or o_sq > sq)
            for o_label, o_lat, o_sq in points if o_label != label
        )
        if not dominated:
            front.add(label)
    return front
