"""Tables for ``results list``, ``results history`` and ``doctor``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from benchlab.report.terminal import format_ms

__all__ = ["doctor_tables", "history_table", "runs_table"]


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
    """One row per measurement of a model × framework: median, CI and spread over time."""
    table = Table(title=title, header_style="bold")
    for name in ("when", "run", "test", "device", "p50 ms", "95% CI ms", "p90 ms", "n"):
        table.add_column(name)
    for p in points:
        s = p.summary
        table.add_row(
            p.started_at[:19], str(p.run_id), p.test_identifier, p.device,
            format_ms(s.p50, s.unit),
            f"{format_ms(s.ci_low, s.unit)}–{format_ms(s.ci_high, s.unit)}",
            format_ms(s.p90, s.unit), str(s.count),
        )
    return table


def doctor_tables(diagnosis: Any) -> list[Table]:
    """Frameworks and targets (with their devices), then where results and artifacts live."""
    plugins = Table(title="frameworks and targets", header_style="bold")
    for name in ("kind", "name", "available", "version", "why not / device"):
        plugins.add_column(name, overflow="fold")
    from benchlab.doctor import device_summary

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
