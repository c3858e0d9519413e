"""What reports show of a load-scenario test: one row per job, LoadGen's figures apart.

A scenario job's ``latency`` is each sample's own inference time under the load; what people
read is the scenario's result (docs/scenarios.md): the percentile LoadGen computed and its
early-stopping estimate, the server's QPS at the bound, the offline throughput, and whether
LoadGen judged the run valid. :func:`scenario_rows` reads them from results;
:func:`scenario_table` is the terminal's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.report.columns import Column, job_columns, legend, rich_table, shown_columns
from benchlab.schema.scenario import PERCENTILES
from benchlab.schema.result import DetailKey, Metric, Result

__all__ = ["SCENARIO_COLUMNS", "SCENARIO_LEGEND", "TOKEN_COLUMNS", "ScenarioRow",
           "scenario_columns", "scenario_rows", "scenario_table", "validity", "verdict_text"]


@dataclass(frozen=True, slots=True)
class ScenarioRow:
    """One scenario job's figures (medians over its processes; ``None``: not measured).

    ``valid`` counts the processes LoadGen judged valid, of ``processes``; ``why`` is its
    reason for the last invalid one; ``runs`` are the LoadGen runs of the job's last process
    (a server search: one per rate tried, each ``target_qps``, ``percentile_ms``, ``valid``).
    """

    model: str
    test: str
    framework: str
    status: str
    scenario: str
    percentile: str
    latency_bound_ms: float | None
    latency_ms: float | None
    early_stopping_ms: float | None
    server_qps: float | None
    throughput: float | None
    sample_p50_ms: float | None
    valid: int
    processes: int
    why: str
    over_capacity: str | None
    runs: tuple[dict[str, Any], ...]
    #: A generative test's token bounds and figures (``None`` for forward passes).
    ttft_bound_ms: float | None = None
    tpot_bound_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    goodput: float | None = None
    tokens_per_second: float | None = None

    @property
    def generative(self) -> bool:
        """Whether the scenario's queries were generations (LoadGen timed their tokens)."""
        return self.ttft_p99_ms is not None or self.tpot_p99_ms is not None


def _p50(result: Result, metric: Metric) -> float | None:
    summary = result.summaries.get(metric.key)
    return None if summary is None else float(summary.p50)


def _row(result: Result) -> ScenarioRow:
    facts: Any = result.details.get(DetailKey.SCENARIO) or {}
    valid = result.summaries.get(Metric.SCENARIO_VALID.key)
    name = str(facts.get("name", ""))
    return ScenarioRow(
        model=result.identity.model_name, test=result.identity.test_identifier,
        framework=result.identity.framework, status=str(result.status),
        scenario=str(facts.get("label", name)),
        percentile=f"p{PERCENTILES[name]}" if name in PERCENTILES else "",
        latency_bound_ms=facts.get("latency_bound_ms"),
        latency_ms=_p50(result, Metric.SCENARIO_LATENCY),
        early_stopping_ms=_p50(result, Metric.EARLY_STOPPING_LATENCY),
        server_qps=_p50(result, Metric.SERVER_QPS),
        throughput=_p50(result, Metric.THROUGHPUT),
        sample_p50_ms=_p50(result, Metric.LATENCY),
        valid=round(valid.mean * valid.count) if valid is not None else 0,
        processes=valid.count if valid is not None else 0,
        why=str(facts.get("why_invalid") or ""),
        over_capacity=facts.get("over_capacity"),
        runs=tuple(facts.get("runs") or ()),
        ttft_bound_ms=facts.get("ttft_bound_ms"), tpot_bound_ms=facts.get("tpot_bound_ms"),
        ttft_p99_ms=_p50(result, Metric.SCENARIO_TTFT),
        tpot_p99_ms=_p50(result, Metric.SCENARIO_TPOT),
        goodput=_p50(result, Metric.GOODPUT),
        tokens_per_second=_p50(result, Metric.TOKEN_THROUGHPUT),
    )


def scenario_rows(results: Sequence[Result]) -> list[ScenarioRow]:
    """A row for every result of a load-scenario test, in order."""
    return [_row(r) for r in results if r.details.get(DetailKey.SCENARIO)]


def validity(row: ScenarioRow) -> str:
    """``valid``, ``INVALID`` or ``2/3 valid``: LoadGen's verdict over the job's processes."""
    if row.processes and row.valid == row.processes:
        return "valid"
    if row.valid == 0:
        return "INVALID"
    return f"{row.valid}/{row.processes} valid"


def verdict_text(row: ScenarioRow) -> str:
    """LoadGen's verdict with, when not valid, why; and how far over capacity it ran."""
    verdict = validity(row)
    if row.why and verdict != "valid":
        verdict += f": {row.why}"
    if row.over_capacity:
        verdict += f" ({row.over_capacity})"
    return verdict


_M = Metric

#: The scenario table's columns, in the terminal and the HTML report alike; the terminal shows
#: those not marked ``wide`` unless ``--wide`` asks for every column.
SCENARIO_COLUMNS: tuple[Column[ScenarioRow], ...] = (
    *job_columns(),
    Column.words("status", lambda r: r.status, wide=True),
    Column.words("scenario", lambda r: r.scenario, key=True),
    Column.words("pct", lambda r: r.percentile, wide=True),
    Column.metric(_M.SCENARIO_LATENCY, lambda r: r.latency_ms,
                  legend="latency: the scenario's percentile as LoadGen computes it (p90 "
                         "single-stream; p99 of whole queries multi-stream; p99 server, "
                         "queueing included)"),
    Column.metric(_M.EARLY_STOPPING_LATENCY, lambda r: r.early_stopping_ms, wide=True,
                  legend="ES: its early-stopping estimate"),
    Column.metric(_M.SERVER_QPS, lambda r: r.server_qps,
                  legend="QPS: the highest server rate whose p99 met the bound"),
    Column.metric(_M.THROUGHPUT, lambda r: r.throughput,
                  legend="samples/s: LoadGen's throughput"),
    Column.metric(_M.LATENCY, lambda r: r.sample_p50_ms, "sample p50 ms", wide=True,
                  legend="sample p50: one inference (a generation: arrival to last token) "
                         "under the load"),
    Column("LoadGen", verdict_text, number=False, wrap=True,
           css=lambda r: "" if validity(r) == "valid" else "fail"),
)


#: The columns of a generative test under load, shown when a row has them.
TOKEN_COLUMNS: tuple[Column[ScenarioRow], ...] = (
    Column.metric(_M.SCENARIO_TTFT, lambda r: r.ttft_p99_ms,
                  legend="TTFT/TPOT p99: a generative test's token latencies as LoadGen "
                         "measured them"),
    Column.metric(_M.SCENARIO_TPOT, lambda r: r.tpot_p99_ms,
                  legend="TTFT/TPOT p99: a generative test's token latencies as LoadGen "
                         "measured them"),
    Column.metric(_M.GOODPUT, lambda r: r.goodput, wide=True,
                  legend="goodput: queries/s within every bound"),
    Column.metric(_M.TOKEN_THROUGHPUT, lambda r: r.tokens_per_second, wide=True),
)


def scenario_columns(rows: Sequence[ScenarioRow]) -> tuple[Column[ScenarioRow], ...]:
    """The table's columns: :data:`SCENARIO_COLUMNS`, with :data:`TOKEN_COLUMNS` before the
    verdict when a row is a generative test's."""
    if not any(row.generative for row in rows):
        return SCENARIO_COLUMNS
    return (*SCENARIO_COLUMNS[:-1], *TOKEN_COLUMNS, SCENARIO_COLUMNS[-1])


_LEAD = ("MLPerf LoadGen issued the queries and judged each run; medians over the job's "
         "processes.")
_TAIL = "(docs/scenarios.md)."

#: What the scenario table's columns mean: the HTML's words (every column).
SCENARIO_LEGEND = legend((*SCENARIO_COLUMNS, *TOKEN_COLUMNS), _LEAD, _TAIL)


def scenario_table(results: Sequence[Result], *, wide: bool = False) -> Any:
    """The terminal's scenario table (a rich ``Table``), or ``None`` without such results:
    who ran it, the scenario, its latency, QPS and throughput, a generative test's p99 token
    times and LoadGen's verdict; ``wide``: every column of :func:`scenario_columns`. The
    caption says what the shown columns mean."""
    rows = scenario_rows(results)
    shown = shown_columns(scenario_columns(rows), wide)
    return rich_table(shown, rows, title="load scenarios (MLPerf LoadGen)",
                      caption=legend(shown, _LEAD, _TAIL))
