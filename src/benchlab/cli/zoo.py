"""``benchlab zoo list | export | spec``: the built-in model zoo from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from benchlab.cli.output import console, err_console

if TYPE_CHECKING:
    from benchlab.spec.artifacts import ArtifactCache

__all__ = ["zoo_app"]

zoo_app = typer.Typer(help="The built-in model zoo: list, export, write specs.",
                      no_args_is_help=True)

CacheOption = Annotated[
    Optional[Path],  # noqa: UP007 - typer needs Optional here
    typer.Option("--cache-dir", help="Artifact cache directory."),
]


def _cache(cache_dir: Path | None) -> ArtifactCache:
    from benchlab.spec.artifacts import ArtifactCache, default_cache_dir

    return ArtifactCache(cache_dir or default_cache_dir())


@zoo_app.command("list")
def zoo_list() -> None:
    """Every zoo model: the set it is in, task, inputs, export formats."""
    from benchlab.zoo import DEFAULT_MODELS, SMALL_MODELS, ZOO

    table = Table(title="benchlab zoo", header_style="bold",
                  caption="set: default (what benchlab run measures), small (CI)")
    for column in ("model", "set", "task", "inputs", "weights", "formats", "description"):
        table.add_column(column, no_wrap=column not in ("description", "formats"))
    for name, model in ZOO.items():
        # Its own column: a mark glued to the name read as another name (mlps, convnets).
        group = "default" if name in DEFAULT_MODELS else "small" if name in SMALL_MODELS \
            else ""
        inputs = " ".join("x".join(map(str, s)) + ("" if d == "float32" else f":{d}")
                          for s, d in zip(model.input_shapes, model.dtypes))
        weights = "pretrained" if model.pretrained else "onnx graph" if model.onnx_resource \
            else "seeded"
        table.add_row(name, group, model.task, inputs, weights, " ".join(model.formats),
                      escape(model.description))
    console.print(table)


@zoo_app.command("export")
def zoo_export(
    names: Annotated[list[str], typer.Argument(help="Models, or all/default/small.")] = None,  # type: ignore[assignment]  # noqa: E501
    formats: Annotated[Optional[str], typer.Option(help="Comma-separated formats instead of each model's own (e.g. aoti).")] = None,  # noqa: UP007,E501
    force: Annotated[bool, typer.Option("--force", help="Export again even if cached (retries failures).")] = False,  # noqa: E501
    cache_dir: CacheOption = None,
) -> None:
    """Export models to every format their runtimes take, into the artifact cache (once).

    A format a converter rejects is listed with the reason and remembered (``--force``
    retries); the command still succeeds.
    """
    from benchlab.zoo import DEFAULT_MODELS, export_models
    from benchlab.exporting.formats import FORMAT_FILES

    wanted = [f.strip() for f in formats.split(",") if f.strip()] if formats else None
    exports = export_models(names or list(DEFAULT_MODELS), _cache(cache_dir),
                            formats=wanted, force=force, progress=lambda m: err_console.print(m))
    table = Table(title="zoo export", header_style="bold")
    for column in ("model", "params", "GFLOPs", "file", "MiB", "status"):
        table.add_column(column, no_wrap=column != "status")
    failed = 0
    for export in exports:
        params = export.metadata.get("params")
        flops = export.metadata.get("flops")
        fresh = {k for f in export.exported for k in FORMAT_FILES.get(f, (f,))}
        first = True
        for key, (path, _sha) in sorted(export.files.items()):
            state = "exported" if key in fresh else "cached"
            table.add_row(export.model.name if first else "",
                          f"{params:,}" if first and params else "",
                          f"{flops / 1e9:.3g}" if first and flops else "", key,
                          f"{path.stat().st_size / 2**20:.2f}", state)
            first = False
        for fmt, reason in sorted(export.failures.items()):
            failed += 1
            table.add_row(export.model.name if first else "", "", "", fmt, "",
                          f"[red]failed[/]: {escape(reason)}")
            first = False
    console.print(table)
    if failed:
        # A model a converter rejects is a finding, not a failure of the command.
        err_console.print(f"{failed} format(s) could not be exported; their cells will say why")


@zoo_app.command("spec")
def zoo_spec(
    name: Annotated[str, typer.Argument(help="Zoo model.")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write here instead of stdout.")] = None,  # noqa: UP007,E501
    cache_dir: CacheOption = None,
) -> None:
    """A benchlab spec for one zoo model (exported first), to copy and edit."""
    from benchlab.zoo import export_models, spec_document

    export = export_models([name], _cache(cache_dir), progress=lambda m: err_console.print(m))[0]
    text = json.dumps(spec_document(export), indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
        err_console.print(f"wrote {output}")
