"""Where every CLI command group writes: results to stdout, progress and errors to stderr.

One pair for the whole CLI (``benchlab``, ``benchlab lab``, ``benchlab zoo``), so a command
group never opens its own and the two streams stay what a pipe expects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape

from benchlab.report.terminal import make_console
from benchlab.schema.labels import labels_line

__all__ = ["console", "err_console", "print_results", "progress_printer"]

console = make_console()
"""Results: tables, reports, JSON."""
err_console = make_console(stderr=True)
"""Progress, warnings and errors."""


def progress_printer(quiet: bool) -> Callable[[str], None] | None:
    """A long command's progress callback (compare's, track's): each line dimmed on stderr;
    ``None`` with --quiet."""
    return None if quiet else (lambda text: err_console.print(f"[dim]{escape(text)}[/]"))


def print_results(results: list[Any], title: str, *, warnings: bool = True,
                  wide: bool = False) -> None:
    """A run's results as ``run`` and ``results show`` print them: the labels, the tables
    (latency first; ``wide``: one table of every column), generation, scenario, device and
    accuracy spreads, then the notes, the emulation line and the noise line."""
    from benchlab.report.answers import answer_spread_table
    from benchlab.report.generation import generation_table
    from benchlab.report.matrix import device_spread_table
    from benchlab.report.scenario import scenario_table
    from benchlab.report.tables import TABLE_PARTS
    from benchlab.report.terminal import emulation_line, noise_line, result_notes, results_table

    labels = labels_line(results)
    if labels:  # a line of its own: in the tables' title it would wrap in a narrow terminal
        console.print(escape(labels), highlight=False, soft_wrap=True)
    # Latency first and never cut; the rest in tables of their own (all at once with --wide).
    # Every table fits the terminal: too narrow for one, it is drawn in parts.
    for part in ("all",) if wide else TABLE_PARTS:
        table = results_table(results, title=title if part in ("all", "latency") else part,
                              part=part)
        if table is not None:
            console.print(table)
    for table in (generation_table(results, wide=wide), scenario_table(results, wide=wide)):
        if table is not None:
            console.print(table)
    spread = device_spread_table(results)
    if spread is not None:
        console.print(spread)
    # The same rows' accuracy: whether the devices' instruction sets changed the answer.
    answers = answer_spread_table(results)
    if answers is not None:
        console.print(answers)
    for note in result_notes(results, warnings=warnings):
        console.print(f"[dim]· {escape(note)}[/]", highlight=False)
    emulated = emulation_line(results)
    if emulated:
        console.print(f"[bold]{escape(emulated)}[/]", highlight=False, soft_wrap=True)
    noise = noise_line(results)
    if noise:
        more = "" if warnings else " (every warning: --warnings)"
        console.print(f"{escape(noise)}{more}", highlight=False, soft_wrap=True)
