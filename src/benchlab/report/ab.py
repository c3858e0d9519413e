"""Reports of a comparison: a terminal table, Markdown for a pull request, and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from benchlab.plugins import ConfigLabels
from benchlab.report.columns import Column, job_name, legend, rich_table, shown_columns
from benchlab.report.matrix import config_label
from benchlab.report.svg import median
from benchlab.schema.comparison import Comparison, MetricComparison, Outcome
from benchlab.schema.metrics import metric_info
from benchlab.schema.result import LATENCY_KEY

__all__ = ["OUTCOME_LOOKS", "OutcomeLook", "comparison_json", "comparison_markdown",
           "comparison_table", "effective_outcome", "fidelity_cell", "fidelity_lines",
           "fidelity_text", "modes_text", "regime_text"]

@dataclass(frozen=True)
class OutcomeLook:
    """How one outcome is shown: its Markdown mark, terminal style and HTML colour."""

    mark: str
    style: str
    colour: str


OUTCOME_LOOKS = {
    Outcome.REGRESSION: OutcomeLook("🔴 regression", "red", "#c62828"),
    Outcome.IMPROVEMENT: OutcomeLook("🟢 improvement", "green", "#2e7d32"),
    Outcome.NO_CHANGE: OutcomeLook("⚪ no change", "dim", "#6d6d6d"),
    Outcome.UNDECIDED: OutcomeLook("🟡 undecided", "yellow", "#b07d00"),
}


def effective_outcome(metric: MetricComparison) -> Outcome:
    """The outcome that counts: a regression the verify re-run did not confirm is undecided."""
    if metric.verified is False:
        return Outcome.UNDECIDED
    return metric.estimate.outcome


def _verdict(metric: MetricComparison) -> str:
    text = OUTCOME_LOOKS[metric.estimate.outcome].mark
    if metric.verified is True:
        text += " (verified)"
    elif metric.verified is False:
        text = "🟡 not confirmed by the verify re-run"
    return text


def _pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def _level(comparison: Comparison) -> str:
    level = comparison.metrics[0].estimate.ci_level if comparison.metrics else 0.95
    return f"{level:.1%}"


def modes_text(comparison: Comparison) -> str:
    """``mode in-process: both sides in one fresh process...; mode process-pairs: ...``."""
    return "; ".join(f"mode {mode.value}: {mode.description}" for mode in comparison.modes)


def fidelity_cell(metric: MetricComparison) -> str:
    """``1.01 / 0.99``: each side's A/B latency over its solo latency; ``solo`` in process
    pairs, where each side runs alone by construction."""
    if not metric.mode.interleaved:
        return "solo"
    if not metric.fidelity:
        return "-"
    return " / ".join(f"{f.ratio:.2f}" + ("" if f.faithful else "!") for f in metric.fidelity)


def regime_text(metric: MetricComparison) -> str:
    """Each side's threading settings as its runtime reported them (once when both agree),
    then what the session saw itself (``process_threads``: OS threads with both loaded)."""
    sides = {side: ", ".join(f"{k} {v}" for k, v in sorted(facts.items()) if v is not None)
             for side, facts in sorted(metric.regime.items()) if isinstance(facts, dict)}
    seen = [f"{k.replace('_', ' ')} {v}" for k, v in sorted(metric.regime.items())
            if not isinstance(v, dict) and v is not None]
    if len(set(sides.values())) == 1:
        parts = [next(iter(sides.values()))]
    else:
        parts = [f"{side}: {text}" for side, text in sides.items()]
    return "; ".join(p for p in (*parts, *seen) if p)


def fidelity_text(metric: MetricComparison) -> str:
    """One sentence: how each side ran in the mode against itself alone, and the regime."""
    if not metric.mode.interleaved:
        return f"{metric.job}: process pairs, each side alone in its own process"
    said = "; ".join(f.describe() + ("" if f.faithful else " (outside the tolerance)")
                     for f in metric.fidelity) or "fidelity not measured"
    regime = regime_text(metric)
    return f"{metric.job}: {metric.mode.value}, {said}" + (f"; regime: {regime}" if regime
                                                           else "")


def fidelity_lines(comparison: Comparison) -> list[str]:
    """:func:`fidelity_text` of every latency metric (the only one interleaving decides on)."""
    return [fidelity_text(m) for m in comparison.metrics if m.metric == LATENCY_KEY]


@dataclass(frozen=True)
class _Line:
    """A row of the terminal's table: one metric of a job, and whether it is the job's first
    (the job is named once, above its metrics)."""

    metric: MetricComparison
    first: bool


def _job_text(metric: MetricComparison, labels: ConfigLabels) -> str:
    """The job as the run's tables name it: ``mobilenet_v2 @ executorch[xnnpack,int8]`` for
    ``mobilenet_v2/default @ executorch[delegate=xnnpack,precision=int8]`` (the test left out
    when it is ``default``, each option shown as its framework declares: :func:`config_label`)."""
    prefix = f"{metric.model}/{metric.test} @ "
    if not metric.job.startswith(prefix):
        return metric.job
    framework = metric.job.removeprefix(prefix)
    name, bracket, options = framework.partition("[")
    if bracket and options.endswith("]"):
        config = dict(part.partition("=")[::2] for part in options[:-1].split(","))
        framework = config_label(name, config, labels)
    return f"{job_name(metric.model, metric.test)} @ {framework}"


def _metric_text(metric: MetricComparison) -> str:
    """``latency ms``: the registry's label when the medians are in its unit, else the
    metric's name and unit."""
    info = metric_info(metric.metric)
    if info is not None and info.unit == metric.unit:
        return info.label
    return f"{metric.metric.removeprefix('NET ')} {metric.unit}".strip()


def _value(metric: MetricComparison, value: float) -> str:
    """A side's median: four digits, or every digit of a count up to seven (a counted
    change of 0.01% shows)."""
    return f"{value:.7g}" if metric.unit == "count" else f"{value:.4g}"


def _comparison_columns(comparison: Comparison) -> list[Column[_Line]]:
    level = comparison.metrics[0].estimate.ci_level if comparison.metrics else 0.95
    labels = ConfigLabels()
    return [
        Column.words("job", lambda r: _job_text(r.metric, labels) if r.first else "", key=True),
        Column.words("metric", lambda r: _metric_text(r.metric), key=True),
        Column.words("mode", lambda r: r.metric.mode.value, wide=True),
        Column("n", lambda r: str(r.metric.estimate.n_pairs), wide=True,
               legend="n: process pairs or sessions"),
        Column.words("fidelity", lambda r: fidelity_cell(r.metric), wide=True,
                     legend="fidelity: each side's A/B latency over its solo latency "
                            "(control / treatment)"),
        Column("control", lambda r: _value(r.metric, median(r.metric.control)),
               legend="control, treatment: medians, in the metric's unit"),
        Column("treatment", lambda r: _value(r.metric, median(r.metric.treatment)),
               legend="control, treatment: medians, in the metric's unit"),
        Column("change", lambda r: _pct(r.metric.estimate.change),
               legend="change: Hodges-Lehmann over the paired log-ratios; minimum effect "
                      f"{comparison.min_effect:.1%}"),
        Column(f"{level:.1%} CI", lambda r: f"[{_pct(r.metric.estimate.ci_low)}, "
                                            f"{_pct(r.metric.estimate.ci_high)}]"),
        Column("q", lambda r: "-" if r.metric.estimate.q_value is None
               else f"{r.metric.estimate.q_value:.3g}", wide=True,
               legend="q: Benjamini-Hochberg"),
        Column("verdict", lambda r: _verdict(r.metric), number=False, wrap=True,
               style=lambda r: OUTCOME_LOOKS[effective_outcome(r.metric)].style),
    ]


def comparison_table(comparison: Comparison, *, wide: bool = False) -> Table:
    """One row per job × metric: both medians, the change with its interval, the verdict;
    ``wide`` adds the mode, the number of pairs or sessions, the fidelity and q. Drawn in
    parts when the terminal is too narrow for its numbers."""
    shown = shown_columns(_comparison_columns(comparison), wide)
    lines = [_Line(m, i == 0 or comparison.metrics[i - 1].job != m.job)
             for i, m in enumerate(comparison.metrics)]
    caption = escape(legend(shown, f"{modes_text(comparison)}."))
    title = f"{escape(comparison.treatment)} vs {escape(comparison.control)}"
    table = rich_table(shown, lines, title=title, caption=caption)
    if table is None:  # nothing compared: the headings alone, and the notes say why
        table = Table(title=title, caption=caption, header_style="bold")
        for column in shown:
            table.add_column(column.label)
    return table


def comparison_markdown(comparison: Comparison, top_ops: int = 5) -> str:
    """A Markdown summary fit for a pull-request comment or a CI job summary."""
    regressions = comparison.regressions
    head = (
        f"### benchlab: {len(regressions)} regression(s)" if regressions
        else "### benchlab: nothing was compared" if comparison.compared_nothing
        else "### benchlab: no regression"
    )
    lines = [
        head, "",
        f"**{comparison.treatment}** (treatment) vs **{comparison.control}** (control). "
        f"{modes_text(comparison).capitalize()}. Change = Hodges-Lehmann estimate with a "
        f"{_level(comparison)} interval (α split over {len(comparison.looks)} looks); "
        f"minimum effect {comparison.min_effect:.1%}; "
        f"Benjamini-Hochberg q across {len(comparison.metrics)} metrics.", "",
        "| job | metric | mode | n | fidelity | control | treatment | change | CI | q | verdict |",
        "|---|---|---|---:|---|---:|---:|---:|---|---:|---|",
    ]
    for m in comparison.metrics:
        e = m.estimate
        lines.append(
            f"| {m.job} | {m.metric.removeprefix('NET ')} | {m.mode.value} | {e.n_pairs} | "
            f"{fidelity_cell(m)} | {median(m.control):.4g} {m.unit} | "
            f"{median(m.treatment):.4g} {m.unit} | "
            f"{_pct(e.change)} | [{_pct(e.ci_low)}, {_pct(e.ci_high)}] | "
            f"{e.q_value:.3g} | {_verdict(m)} |" if e.q_value is not None else
            f"| {m.job} | {m.metric} | {m.mode.value} | {e.n_pairs} | {fidelity_cell(m)} | "
            f"- | - | "
            f"{_pct(e.change)} | - | - | "
            f"{_verdict(m)} |"
        )
    with_ops = [m for m in comparison.metrics if m.op_deltas]
    if with_ops:
        lines += ["", "<details><summary>Where the time went (per-operator medians)</summary>",
                  ""]
        for m in with_ops:
            lines += [f"**{m.job}**", "", "| operator | control | treatment | Δ | change |",
                      "|---|---:|---:|---:|---:|"]
            for op in m.op_deltas[:top_ops]:
                lines.append(
                    f"| {op.op} | {op.control:.4g} {op.unit} | {op.treatment:.4g} {op.unit} | "
                    f"{op.delta:+.4g} {op.unit} | {_pct(op.change)} |"
                )
            lines.append("")
        lines.append("</details>")
    fidelity = fidelity_lines(comparison)
    if fidelity:
        lines += ["", "Fidelity (each side in the A/B regime against itself alone):", "",
                  *[f"- {line}" for line in fidelity]]
    said = (*comparison.failed, *comparison.skipped, *comparison.notes)
    if said:
        lines += ["", *[f"- {note}" for note in said]]
    return "\n".join(lines) + "\n"


def comparison_json(comparison: Comparison) -> str:
    """The whole comparison as JSON: settings, raw per-process values, estimates, verdicts."""
    data: dict[str, Any] = asdict(comparison)
    data["exit_code"] = comparison.exit_code
    data["modes"] = {mode.value: mode.description for mode in comparison.modes}
    data["regressions"] = [m.job + " " + m.metric for m in comparison.regressions]
    data["compared_nothing"] = comparison.compared_nothing
    for out, metric in zip(data["metrics"], comparison.metrics, strict=True):
        for item, fidelity in zip(out["fidelity"], metric.fidelity, strict=True):
            item["faithful"] = fidelity.faithful
    return json.dumps(data, indent=1, default=str)
