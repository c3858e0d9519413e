"""Tables for ``results list``, ``results history``, ``track`` and ``doctor``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from benchlab.report.terminal import format_ms

__all__ = [
    "RuntimeChange",
    "doctor_tables",
    "history_table",
    "runs_table",
    "runtime_changes",
    "track_table",
]


@dataclass(frozen=True, slots=True)
class RuntimeChange:
    """A point of a history measured with another runtime version than the point before it."""

    index: int
    before: str | None
    after: str | None

    @property
    def text(self) -> str:
        """``1.31.1 → 1.32.0``, with ``?`` for a version that was not recorded."""
        return f"{self.before or '?'} → {self.after or '?'}"


def runtime_changes(points: Sequence[Any]) -> list[RuntimeChange]:
    """Where the runtime version differs from the previous point's (``points`` oldest first).

    A number that moved at one of these points may have moved with the release, not with the
    model or the code under test; every history view marks them.
    """
    return [
        RuntimeChange(i, points[i - 1].runtime_version, point.runtime_version)
        for i, point in enumerate(points)
        if i and point.runtime_version != points[i - 1].runtime_version
    ]


def runs_table(runs: Sequence[Any]) -> Table:
    """Recent runs with their state and result counts."""
    table = Table(title="benchlab runs", header_style="bold")
    for name in ("id", "uuid", "created", "status", "ok", "failed", "description"):
        table.add_column(name)
    for run in runs:
        table.add_row(
            str(run.id), run.uuid[:8], run.created_at[:19], run.status.value,
            str(run.ok_count), str(run.failed_count), run.description,
        )
    return table


def history_table(points: Sequence[Any], title: str) -> Table:
    """One row per measurement of a model × framework: median, CI and spread over time, and
    the runtime version, marked ◆ where it changed."""
    changes = {change.index: change for change in runtime_changes(points)}
    table = Table(title=title, header_style="bold")
    for name in ("when", "run", "test", "device", "runtime", "p50 ms", "95% CI ms", "p90 ms",
                 "n"):
        table.add_column(name)
    for i, p in enumerate(points):
        s = p.summary
        change = changes.get(i)
        runtime = escape(p.runtime_version or "-")
        if change is not None:
            runtime = f"[bold yellow]◆ {escape(change.text)}[/]"
        table.add_row(
            p.started_at[:19], str(p.run_id), p.test_identifier, p.device, runtime,
            format_ms(s.p50, s.unit),
            f"{format_ms(s.ci_low, s.unit)}–{format_ms(s.ci_high, s.unit)}",
            format_ms(s.p90, s.unit), str(s.count),
        )
    if changes:
        table.caption = ("◆ the runtime's version changed at this row: a step there may come "
                         "from the release, not from the model or your change")
    return table


def track_table(report: Any) -> Table:
    """One row per measured commit of a ``track``: its change against the reference, marked
    ``← step`` where a step was first seen."""
    table = Table(title=f"track against {report.reference[:12]}", header_style="bold")
    for name in ("commit", "change", "95% CI", "pairs"):
        table.add_column(name)
    culprits = dict(report.culprits)
    for p in report.points:
        mark = " [red]← step[/]" if p.commit in culprits else ""
        table.add_row(p.commit[:12] + mark, f"{p.change:+.2%}",
                      f"[{p.ci_low:+.2%}, {p.ci_high:+.2%}]", str(len(p.log_ratios)))
    return table


def doctor_tables(diagnosis: Any) -> list[Table]:
    """Frameworks and targets (with their devices), then where results and artifacts live."""
    plugins = Table(title="frameworks and targets", header_style="bold")
    for name in ("kind", "name", "available", "version", "why not / device"):
        plugins.add_column(name, overflow="fold")
    from benchlab.targets.environment import device_summary

    for p in diagnosis.plugins:
        detail = p.reason or (device_summary(p.device) if p.device else "")
        mark = "[green]yes[/]" if p.ok else "[red]no[/]"
        plugins.add_row(p.kind, p.name, mark, p.version or "-", detail)
    paths = Table(title="storage", header_style="bold", show_header=False)
    paths.add_column("what")
    paths.add_column("where", overflow="fold")
    paths.add_row("results store", diagnosis.store if diagnosis.store_ok
                  else f"[red]{diagnosis.store}[/]")
    paths.add_row("artifact cache", str(diagnosis.cache_dir))
    return [plugins, paths]
