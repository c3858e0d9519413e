"""What reports show of a generative test: one row per job, the generation metrics apart.

A generative job's ``latency`` is a whole generation; what people read is TTFT, TPOT and the
two rates (docs/generative.md has the definitions). :func:`generation_rows` reads them from
results, converted into the columns' units; :func:`generation_table` is the terminal's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.report.columns import Column, job_columns, rich_table
from benchlab.schema.result import DetailKey, Metric, Result, Summary
from benchlab.schema.units import convert

__all__ = [
    "GENERATION_COLUMNS", "GENERATION_LEGEND", "GenerationRow", "generation_rows",
    "generation_table",
]


@dataclass(frozen=True, slots=True)
class GenerationRow:
    """One generative job's figures: times in ms, rates in tokens/s, memory and size in MiB
    (``None``: not measured). ``tpot_ci`` is the TPOT interval's half-width over its median."""

    model: str
    test: str
    framework: str
    precision: str
    status: str
    workload: str
    ttft: float | None
    tpot: float | None
    tpot_ci: float | None
    itl_p90: float | None
    itl_p99: float | None
    prefill_rate: float | None
    decode_rate: float | None
    load: float | None
    memory_peak: float | None
    size: float | None
    token_agreement: float | None
    first_divergence: float | None
    perplexity: float | None


def _value(summary: Summary | None, unit: str, stat: str = "p50") -> float | None:
    if summary is None:
        return None
    raw = float(getattr(summary, stat))
    return raw if not unit else convert(raw, summary.unit, unit)


def _row(result: Result) -> GenerationRow:
    sums = result.summaries

    def get(metric: Metric, unit: str, stat: str = "p50") -> float | None:
        return _value(sums.get(metric.key), unit, stat)

    tpot = sums.get(Metric.TPOT.key)
    ci = None
    if tpot is not None and tpot.p50 > 0:
        ci = (tpot.ci_high - tpot.ci_low) / 2 / tpot.p50
    work: Any = result.details.get(DetailKey.GENERATION) or {}
    workload = (f"p{work.get('prompt_tokens')} g{work.get('new_tokens')} "
                f"d{work.get('depth', 0)}") if work else ""
    ident = result.identity
    return GenerationRow(
        model=ident.model_name, test=ident.test_identifier, framework=ident.framework,
        precision=str(result.details.get(DetailKey.PRECISION, "")), status=str(result.status),
        workload=workload, ttft=get(Metric.TTFT, "ms"), tpot=get(Metric.TPOT, "ms"),
        tpot_ci=ci, itl_p90=get(Metric.INTER_TOKEN_LATENCY, "ms", "p90"),
        itl_p99=get(Metric.INTER_TOKEN_LATENCY, "ms", "p99"),
        prefill_rate=get(Metric.PREFILL_RATE, ""), decode_rate=get(Metric.DECODE_RATE, ""),
        load=get(Metric.LOAD_TIME, "ms"), memory_peak=get(Metric.MEMORY_PEAK, "MiB"),
        size=get(Metric.MODEL_SIZE, "MiB"), token_agreement=get(Metric.TOKEN_AGREEMENT, ""),
        first_divergence=get(Metric.FIRST_DIVERGENCE, "", "min"),
        perplexity=get(Metric.PERPLEXITY, ""),
    )


def generation_rows(results: Sequence[Result]) -> list[GenerationRow]:
    """A row for every result of a generative test (those that time tokens), in order."""
    return [_row(r) for r in results
            if Metric.TTFT.key in r.summaries or r.details.get(DetailKey.GENERATION)]


def _percent(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


#: The generation table's columns, in the terminal and the HTML report alike.
GENERATION_COLUMNS: tuple[Column[GenerationRow], ...] = (
    *job_columns(),
    Column.words("prec", lambda r: r.precision),
    Column.words("status", lambda r: r.status),
    Column.words("P G D", lambda r: r.workload),
    Column.metric(Metric.TTFT, lambda r: r.ttft),
    Column.metric(Metric.TPOT, lambda r: r.tpot),
    Column("±95%", lambda r: _percent(r.tpot_ci, ".1%")),
    Column.metric(Metric.INTER_TOKEN_LATENCY, lambda r: r.itl_p90, "ITL p90 ms"),
    Column.metric(Metric.INTER_TOKEN_LATENCY, lambda r: r.itl_p99, "ITL p99 ms"),
    Column.metric(Metric.PREFILL_RATE, lambda r: r.prefill_rate),
    Column.metric(Metric.DECODE_RATE, lambda r: r.decode_rate),
    Column.metric(Metric.LOAD_TIME, lambda r: r.load),
    Column.metric(Metric.MEMORY_PEAK, lambda r: r.memory_peak),
    Column.metric(Metric.MODEL_SIZE, lambda r: r.size),
    Column.metric(Metric.TOKEN_AGREEMENT, lambda r: r.token_agreement),
    Column.metric(Metric.FIRST_DIVERGENCE, lambda r: r.first_divergence),
    Column.metric(Metric.PERPLEXITY, lambda r: r.perplexity),
)


#: What the generation table's columns mean: the terminal's caption and the HTML's words.
GENERATION_LEGEND = (
    "Each iteration is one greedy generation of G tokens after a prompt of P tokens, the cache "
    "first filled to depth D; p50 over generations. TTFT: prompt handed over → first token; "
    "TPOT: ms per token after the first; ITL: every gap between tokens; rates in tokens/s; "
    "±95%: where the next run's TPOT median is expected; agree: the reference's greedy tokens "
    "reproduced (teacher-forced); parts@: where free greedy decoding first differs; ppl: "
    "perplexity of the reference text (docs/generative.md).")


def generation_table(results: Sequence[Result]) -> Any:
    """The terminal's generation table (a rich ``Table``), or ``None`` without such results."""
    return rich_table(GENERATION_COLUMNS, generation_rows(results), title="generation",
                      caption=GENERATION_LEGEND)
