"""The model × backend matrix: one cell per job; latency, memory, size and accuracy side by side.

:func:`matrix_cells` reads results (from a sweep or the store) into :class:`Cell` rows that the
terminal table and the HTML report both draw, so the two always agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchlab.report.svg import median
from benchlab.schema import LATENCY_KEY, DetailKey, Metric, Result, Status, Summary

__all__ = [
    "TO_MS",
    "Cell",
    "cell_of",
    "config_label",
    "matrix_cells",
    "pareto_front",
    "summary_ms",
]

#: Factors from a time unit to milliseconds (the terminal table uses them too).
TO_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}


def config_label(framework: str, config: Mapping[str, Any]) -> str:
    """``executorch[xnnpack,int8]``: the framework with its option values, short."""
    values = ",".join(str(v) for _, v in sorted(config.items()))
    return f"{framework}[{values}]" if values else framework


@dataclass(frozen=True, slots=True)
class Cell:
    """One model × framework configuration: the numbers the matrix shows, or why it failed.

    Times are milliseconds, memory and sizes MiB. Accuracy fields are ``None`` when the job
    had no reference to compare against. ``ops`` holds per-operator median milliseconds when
    operators were timed; ``ops_unavailable`` says why they could not be.
    """

    model: str
    test: str
    framework: str
    label: str
    status: Status
    error: str | None = None
    precision: str = "fp32"
    p50: float | None = None
    p90: float | None = None
    ci_rel: float | None = None
    latencies: tuple[float, ...] = ()
    load: float | None = None
    first: float | None = None
    compile: float | None = None
    memory_peak: float | None = None
    memory_load: float | None = None
    size: float | None = None
    params: int | None = None
    flops: int | None = None
    batch: int | None = None
    throughput: float | None = None
    error_max_abs: float | None = None
    error_mean_abs: float | None = None
    error_max_rel: float | None = None
    sqnr: float | None = None
    cosine: float | None = None
    top1: float | None = None
    top5: float | None = None
    ops: Mapping[str, float] = field(default_factory=dict)
    ops_unavailable: str | None = None
    warnings: tuple[str, ...] = ()
    runtime_version: str | None = None

    @property
    def ok(self) -> bool:
        """True when the job produced measurements."""
        return self.status is Status.OK


def summary_ms(summary: Summary | None, attr: str = "p50") -> float | None:
    """A time statistic of ``summary`` in milliseconds (as it is when the unit is unknown)."""
    if summary is None:
        return None
    factor = TO_MS.get(summary.unit)
    value = getattr(summary, attr)
    return value * factor if factor is not None else value


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


def _ops(result: Result) -> dict[str, float]:
    per_op: dict[str, list[float]] = {}
    for sample in result.samples:
        if sample.type != "NET" and sample.metric == Metric.LATENCY:
            factor = TO_MS.get(sample.unit, 1.0)
            per_op.setdefault(sample.type, []).append(sample.value * factor)
    return {op: median(values) for op, values in per_op.items()}


def cell_of(result: Result) -> Cell:
    ident, details, s = result.identity, result.details, result.summaries
    latency = s.get(LATENCY_KEY)
    info = result.model_info
    p50 = summary_ms(latency)
    batch = _batch(details)
    requests = details.get(DetailKey.REQUESTS_PER_CALL) or 1
    throughput = None
    if p50 and batch:
        throughput = batch * float(requests) * 1000.0 / p50
    factor = TO_MS.get(latency.unit, 1.0) if latency else 1.0
    samples = tuple(v * factor for v in result.samples_of(LATENCY_KEY))
    return Cell(
        model=ident.model_name, test=ident.test_identifier, framework=ident.framework,
        label=config_label(ident.framework, ident.framework_config), status=result.status,
        error=result.error, precision=_precision(result), p50=p50, p90=summary_ms(latency, "p90"),
        ci_rel=latency.ci_rel_halfwidth if latency else None, latencies=samples,
        load=summary_ms(s.get(Metric.LOAD_TIME.key)),
        first=summary_ms(s.get(Metric.FIRST_INFERENCE.key)),
        compile=summary_ms(s.get(Metric.COMPILE_TIME.key)),
        memory_peak=s[Metric.MEMORY_PEAK.key].max if Metric.MEMORY_PEAK.key in s else None,
        memory_load=_value(s.get(Metric.MEMORY_LOAD.key)),
        size=_value(s.get(Metric.MODEL_SIZE.key)),
        params=info.get("params"), flops=info.get("flops"), batch=batch, throughput=throughput,
        error_max_abs=_value(s.get(Metric.ERROR_MAX_ABS.key)),
        error_mean_abs=_value(s.get(Metric.ERROR_MEAN_ABS.key)),
        error_max_rel=_value(s.get(Metric.ERROR_MAX_REL.key)),
        sqnr=_value(s.get(Metric.SQNR.key)),
        cosine=_value(s.get(Metric.COSINE_SIMILARITY.key)),
        top1=_value(s.get(Metric.TOP1_AGREEMENT.key)),
        top5=_value(s.get(Metric.TOP5_AGREEMENT.key)), ops=_ops(result),
        ops_unavailable=details.get(DetailKey.OP_PROFILE_UNAVAILABLE),
        warnings=tuple(latency.warnings) if latency else (),
        runtime_version=result.runtime_version,
    )


def matrix_cells(results: Sequence[Result]) -> list[Cell]:
    """One :class:`Cell` per result, ordered by model, then framework label."""
    cells = [cell_of(r) for r in results]
    order = {m: i for i, m in enumerate(dict.fromkeys(c.model for c in cells))}
    return sorted(cells, key=lambda c: (order[c.model], c.test, c.label))


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
