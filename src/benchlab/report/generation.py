"""What reports show of a generative test: one row per job, the generation metrics apart.

A generative job's ``latency`` is a whole generation; what people read is TTFT, TPOT and the
two rates (docs/generative.md has the definitions). :func:`generation_rows` reads them from
results, converted into the columns' units; :func:`generation_table` is the terminal's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.report.columns import Column, job_name, legend, rich_table, shown_columns
from benchlab.schema.result import DetailKey, Metric, Result, Summary
from benchlab.schema.units import convert

__all__ = [
    "GENERATION_COLUMNS", "GENERATION_LEGEND", "GenerationRow", "generation_rows",
    "generation_table", "model_label",
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


def model_label(row: GenerationRow) -> str:
    """The row's model as the generation table names it: the model alone when its test is the
    workload's own (``generate[p128 g64 d0]``, which the P G D column shows) or ``default``,
    else ``model/test``."""
    if row.workload and row.test == f"generate[{row.workload}]":
        return row.model
    return job_name(row.model, row.test)


_M = Metric

#: The generation table's columns, in the terminal and the HTML report alike; the terminal
#: shows those not marked ``wide`` unless ``--wide`` asks for every column.
GENERATION_COLUMNS: tuple[Column[GenerationRow], ...] = (
    Column.words("model/test", model_label, key=True),
    Column.words("framework", lambda r: r.framework, key=True),
    Column.words("prec", lambda r: r.precision),
    Column.words("status", lambda r: r.status, wide=True),
    Column.words("P G D", lambda r: r.workload),
    Column.metric(_M.TTFT, lambda r: r.ttft, legend="TTFT: prompt handed over → first token"),
    Column.metric(_M.TPOT, lambda r: r.tpot, legend="TPOT: ms per token after the first"),
    Column("±95%", lambda r: _percent(r.tpot_ci, ".1%"),
           legend="±95%: where the next run's TPOT median is expected"),
    Column.metric(_M.INTER_TOKEN_LATENCY, lambda r: r.itl_p90, "ITL p90 ms", wide=True,
                  legend="ITL: every gap between tokens"),
    Column.metric(_M.INTER_TOKEN_LATENCY, lambda r: r.itl_p99, "ITL p99 ms", wide=True,
                  legend="ITL: every gap between tokens"),
    Column.metric(_M.PREFILL_RATE, lambda r: r.prefill_rate, wide=True,
                  legend="rates in tokens/s"),
    Column.metric(_M.DECODE_RATE, lambda r: r.decode_rate, legend="rates in tokens/s"),
    Column.metric(_M.LOAD_TIME, lambda r: r.load, wide=True),
    Column.metric(_M.MEMORY_PEAK, lambda r: r.memory_peak, wide=True),
    Column.metric(_M.MODEL_SIZE, lambda r: r.size, wide=True),
    Column.metric(_M.TOKEN_AGREEMENT, lambda r: r.token_agreement,
                  legend="agree: the reference's greedy tokens reproduced (teacher-forced)"),
    Column.metric(_M.FIRST_DIVERGENCE, lambda r: r.first_divergence, wide=True,
                  legend="parts@: where free greedy decoding first differs"),
    Column.metric(_M.PERPLEXITY, lambda r: r.perplexity, wide=True,
                  legend="ppl: perplexity of the reference text"),
)

_LEAD = ("Each iteration is one greedy generation of G tokens after a prompt of P tokens, the "
         "cache first filled to depth D; p50 over generations.")
_TAIL = "(docs/generative.md)."

#: What the generation table's columns mean: the HTML's words (every column).
GENERATION_LEGEND = legend(GENERATION_COLUMNS, _LEAD, _TAIL)


def generation_table(results: Sequence[Result], *, wide: bool = False) -> Any:
    """The terminal's generation table (a rich ``Table``), or ``None`` without such results:
    who ran it, P G D, TTFT, TPOT with its interval, the decode rate and the agreement with
    the reference; ``wide``: every column of :data:`GENERATION_COLUMNS`. The caption says what
    the shown columns mean."""
    shown = shown_columns(GENERATION_COLUMNS, wide)
    return rich_table(shown, generation_rows(results), title="generation",
                      caption=legend(shown, _LEAD, _TAIL))
