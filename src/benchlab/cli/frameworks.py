"""``benchlab frameworks``: the options each framework takes, from the declarations the
harness checks every configuration against (:func:`benchlab.framework_options`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from benchlab.cli.output import console

if TYPE_CHECKING:
    from benchlab.frameworks.options import FrameworkOption

__all__ = ["frameworks"]


def frameworks(
    framework: Annotated[list[str], typer.Argument(help="Only these frameworks (default: every registered one).", show_default=False)] = None,  # type: ignore[assignment]  # noqa: E501
) -> None:
    """The options each framework takes (-f name:key=value): type, default, allowed values
    and meaning. Any other key is refused before anything runs."""
    from benchlab.plugins import framework_options

    for listed in framework_options(framework or ()):
        if listed.error is not None:
            console.print(f"[bold]{escape(listed.framework)}[/]: cannot be loaded: "
                          f"{escape(listed.error)}", highlight=False, soft_wrap=True)
        elif listed.options is None:
            console.print(f"[bold]{escape(listed.framework)}[/] declares no options: whatever "
                          "it is given passes to it unchecked", highlight=False, soft_wrap=True)
        elif not listed.options:
            console.print(f"[bold]{escape(listed.framework)}[/] takes no options",
                          highlight=False)
        else:
            console.print(_table(listed.framework, listed.options))


def _table(framework: str, options: tuple[FrameworkOption, ...]) -> Table:
    bare = any(option.bare for option in options)
    table = Table(title=framework, title_justify="left", header_style="bold",
                  caption="(bare): tables show the value alone, not key=value" if bare else None,
                  caption_justify="left")
    for column in ("option", "type", "default", "allowed", "meaning"):
        table.add_column(column, no_wrap=column == "option", overflow="fold")
    for option in options:
        table.add_row(escape(option.name + (" (bare)" if option.bare else "")),
                      option.type_name, escape(option.default_text), escape(option.allowed),
                      escape(option.help))
    return table
