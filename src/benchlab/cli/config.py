"""``benchlab config set|show|reset``: run's saved option defaults (:mod:`benchlab.lab.userconfig`),
and :func:`with_saved_defaults`, which lays them under what ``run``'s command line gives."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from benchlab.cli.output import console

__all__ = ["config_app", "with_saved_defaults"]

config_app = typer.Typer(
    help="Saved defaults of run's options, in the config file beside the lab token "
         "($XDG_CONFIG_HOME/benchlab/lab.toml, table [run]).",
    no_args_is_help=True)


@config_app.command("set")
def config_set(
    key: Annotated[str, typer.Argument(help="The run option, e.g. user_identifier or json-dir (see 'benchlab config show').")],  # noqa: E501
    values: Annotated[list[str], typer.Argument(help="Its value (target: one or more).")],
) -> None:
    """Save a default for one of run's options; the command line still wins over it."""
    from benchlab.lab.userconfig import config_path, save_run_default

    saved = save_run_default(key, values)
    console.print(f"{escape(key.replace('-', '_'))} = {escape(repr(saved))} "
                  f"(in {escape(str(config_path()))})", highlight=False)


@config_app.command("show")
def config_show() -> None:
    """The config file, the saved defaults, and the options that can be saved."""
    from benchlab.lab.userconfig import SAVED_OPTIONS, config_path, read_run_defaults

    path = config_path()
    saved = read_run_defaults(path)
    console.print(f"config file: {escape(str(path))}", highlight=False)
    for key, option in SAVED_OPTIONS.items():
        shown = repr(saved[key]) if key in saved else "-"
        console.print(f"{key:22} {escape(shown):40} {escape(option.help)}", highlight=False)


@config_app.command("reset")
def config_reset() -> None:
    """Forget every saved default (the lab token stays)."""
    from benchlab.lab.userconfig import config_path, reset_run_defaults

    forgotten = reset_run_defaults()
    console.print(f"forgot {', '.join(forgotten) or 'nothing'} (in "
                  f"{escape(str(config_path()))})", highlight=False)


def with_saved_defaults(ctx: typer.Context, *, reset: bool = False) -> dict[str, Any]:
    """``run``'s parameters with the saved defaults in place of the options the command line
    did not give; with ``reset`` (``--reset-options``) the saved ones are forgotten first."""
    from benchlab.lab.userconfig import SAVED_OPTIONS, read_run_defaults, reset_run_defaults

    params = dict(ctx.params)
    if reset:
        reset_run_defaults()
        return params
    for key, value in read_run_defaults().items():
        source = ctx.get_parameter_source(key)
        if key in params and (source is None or source.name == "DEFAULT"):
            params[key] = Path(value) if SAVED_OPTIONS[key].kind == "path" and key not in (
                "db", "monsoon_map") and isinstance(value, str) else value
    return params
