"""What reports show of a generative test: one row per job, the generation metrics apart.

A generative job's ``latency`` is a whole generation; what people read is TTFT, TPOT and the
two rates (docs/generative.md has the definitions). :func:`generation_rows` reads them from
results, converted into the columns' units; :func:`generation_table` is the terminal's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.schema import DetailKey, Metric, Result, Summary
from benchlab.units import convert

__all__ = ["GenerationRow", "generation_rows", "generation_table"]


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


def _text(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def generation_table(results: Sequence[Result]) -> Any:
    """The terminal's generation table (a rich ``Table``), or ``None`` without such results."""
    from rich.markup import escape
    from rich.table import Table

    rows = generation_rows(results)
    if not rows:
        return None
    table = Table(title="generation", header_style="bold", expand=False, caption=(
        "p50 over generations; TTFT: prompt → first token; TPOT: ms per token after the first; "
        "ITL: gaps between tokens; rates in tokens/s; ±95% of TPOT where the next run's median "
        "is expected; agree: greedy tokens equal to the PyTorch reference's (teacher-forced); "
        "parts@: first position where free greedy decoding differs; ppl: perplexity of the "
        "reference text (docs/generative.md)"))
    columns = ["model/test", "framework", "prec", "status", "P G D", "TTFT", "TPOT", "±95%",
               "ITL p90", "ITL p99", "prefill/s", "decode/s", "load", "MiB", "size", "agree",
               "parts@", "ppl"]
    for name in columns:
        table.add_column(name, justify="left" if name in columns[:5] else "right",
                         no_wrap=True)
    for row in rows:
        table.add_row(
            escape(f"{row.model}/{row.test}"), row.framework, row.precision, row.status, row.workload,
            _text(row.ttft, ".2f"), _text(row.tpot, ".3f"),
            "-" if row.tpot_ci is None else f"{row.tpot_ci:.1%}",
            _text(row.itl_p90, ".3f"), _text(row.itl_p99, ".3f"),
            _text(row.prefill_rate, ".0f"), _text(row.decode_rate, ".1f"),
            _text(row.load, ".0f"), _text(row.memory_peak, ".0f"), _text(row.size, ".1f"),
            "-" if row.token_agreement is None else f"{row.token_agreement:.0%}",
            _text(row.first_divergence, ".0f"), _text(row.perplexity, ".4g"))
    return table
