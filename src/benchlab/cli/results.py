"""``benchlab results``: list, show, export and plot past runs from the store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from benchlab.cli.options import DbOption
from benchlab.cli.output import console, print_results
from benchlab.schema.labels import with_labels
from benchlab.schema.result import LATENCY_KEY

__all__ = ["results_app"]

results_app = typer.Typer(help="List, show and export past runs.", no_args_is_help=True)


@results_app.command("list")
def results_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="How many runs.")] = 20,
) -> None:
    """List recent runs."""
    from benchlab.report.history import runs_table
    from benchlab.store import open_store

    with open_store(db) as store:
        console.print(runs_table(store.list_runs(limit)))


@results_app.command("show")
def results_show(
    run_ref: Annotated[str, typer.Argument(help="Run id, UUID prefix or 'latest'.")] = "latest",
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    warnings: Annotated[bool, typer.Option("--warnings", help="Print every cell's noise warnings in full.")] = False,  # noqa: E501
    wide: Annotated[bool, typer.Option("--wide", help="Every column, as 'run --wide' shows them.")] = False,  # noqa: E501
) -> None:
    """Show the results of one run."""
    from benchlab.store import open_store

    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, with_samples=as_json)
    if as_json:
        sys.stdout.write(json.dumps([r.to_dict() for r in results], indent=1, default=str) + "\n")
        return
    print_results(results, f"run {record.id} ({record.status.value}, {record.created_at[:19]})",
                   warnings=warnings, wide=wide)


@results_app.command("export")
def results_export(
    output: Annotated[Path, typer.Argument(help="File to write: .csv or .parquet.")],
    run_ref: Annotated[str, typer.Option("--run", help="Run id, UUID prefix or 'latest'.")] = "latest",  # noqa: E501
    db: DbOption = None,
    samples: Annotated[bool, typer.Option("--samples", help="Raw samples instead of summaries.")] = False,  # noqa: E501
) -> None:
    """Export one run's summaries (or raw samples) to CSV or Parquet."""
    from benchlab.report.export import export_results
    from benchlab.store import open_store

    with open_store(db) as store:
        results = store.results(store.get_run(run_ref).id, with_samples=samples)
    path = export_results(results, output, samples=samples)
    console.print(f"wrote {len(results)} results to {path}")


@results_app.command("html")
def results_html(
    output: Annotated[Path, typer.Argument(help="HTML file to write.")],
    run_ref: Annotated[str, typer.Option("--run", help="Run id, UUID prefix or 'latest'.")] = "latest",  # noqa: E501
    db: DbOption = None,
) -> None:
    """Write one run's matrix report: tables, latency distributions, latency vs error, ops."""
    from benchlab.report.matrix_html import write_matrix_html
    from benchlab.store import open_store

    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, with_samples=True)
        previous = store.previous_points(results)
    path = write_matrix_html(results, output, title=with_labels(f"benchlab run {record.id}",
                                                                 results),
                             previous=previous)
    console.print(f"wrote {path}")


@results_app.command("history")
def results_history(
    model: Annotated[str, typer.Argument(help="Model name.")],
    framework: Annotated[str, typer.Argument(help="Framework name.")],
    db: DbOption = None,
    metric: Annotated[str, typer.Option(help="Metric key.")] = LATENCY_KEY,
    limit: Annotated[int, typer.Option(help="How many points.")] = 50,
    html: Annotated[Optional[Path], typer.Option(help="Also write the history as an HTML plot here.")] = None,  # noqa: UP007,E501
) -> None:
    """The history of one model × framework: the median over time, with its CI, and where the
    runtime's version changed."""
    from benchlab.report.history import history_table
    from benchlab.store import open_store

    with open_store(db) as store:
        points = store.history(model, framework, metric_key=metric, limit=limit)
    title = f"{model} @ {framework}: {metric}"
    console.print(history_table(points, title=title))
    if html is not None:
        from benchlab.report.history_html import write_history_html

        console.print(f"report: {write_history_html(points, html, title=title)}")
