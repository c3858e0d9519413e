"""Every ``benchlab … --help`` at 100 columns, drawn in this process (typer's CliRunner): each
command's, argument's and option's help whole (nothing taken for rich markup, nothing cut),
no line wider than the terminal, and FAI-PEP's underscore spellings accepted but not listed
beside benchlab's names."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from rich.cells import cell_len
from rich.text import Text
from typer.testing import CliRunner

from benchlab.cli.commands import app
from benchlab.cli.helptext import faipep_spellings

WIDTH = 100
TERMINALS = {
    "plain": {"COLUMNS": str(WIDTH)},
    "dumb": {"COLUMNS": str(WIDTH), "TERM": "dumb", "NO_COLOR": "1"},
}
# A panel's frame and the spaces rich lays text out with: none of them is a help's words.
_LAYOUT = re.compile(r"[\s│╭╮╰╯─]+")


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from _commands(sub, (*path, name))


def _flat(text: str) -> str:
    return _LAYOUT.sub("", text)


def _plain(help_text: str) -> str:
    """A help as the reader should see it: its markup (the escapes) read by rich."""
    return Text.from_markup(help_text).plain


def _shown(command: Any) -> Iterator[tuple[str, str]]:
    """(what, text) for every text ``command``'s help page must show whole."""
    if command.help:
        yield "help", command.help
    if command.epilog:
        yield "epilog", command.epilog
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            # The commands panel shows a command's first paragraph.
            yield name, (sub.short_help or sub.help or "").split("\n\n")[0]
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        for spelling in (*param.opts, *param.secondary_opts):
            yield param.name, spelling
        if param.help:
            yield param.name, param.help


COMMANDS = list(_commands(typer.main.get_command(app)))


def test_the_walk_finds_every_command() -> None:
    # Guards the test below: were the walk to find nothing, it would pass.
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "run", "compare", "track", "results show", "lab token create",
            "config set"} <= names


@pytest.mark.parametrize("terminal", list(TERMINALS))
def test_every_help_is_whole_at_100_columns(terminal: str) -> None:
    runner, problems = CliRunner(), []
    for path, command in COMMANDS:
        outcome = runner.invoke(app, [*path, "--help"], env=TERMINALS[terminal])
        where = f"benchlab {' '.join(path)} --help".replace("  ", " ")
        assert outcome.exit_code == 0, (where, outcome.output)
        problems += [f"{where}: a line of {cell_len(line)} columns: {line.strip()}"
                     for line in outcome.output.splitlines() if cell_len(line) > WIDTH]
        page = _flat(outcome.output)
        for what, text in _shown(command):
            # Help is plain text: no markup in it but the escapes that keep brackets shown.
            if _plain(text) != text.replace("\\[", "["):
                problems.append(f"{where}: {what}'s help has rich markup: {text!r}")
            if _flat(_plain(text)) not in page:
                problems.append(f"{where}: {what}'s help is not whole: {_plain(text)!r}")
    assert not problems, "\n".join(problems)


def test_brackets_in_help_survive() -> None:
    # The texts rich took for style tags before: each is shown as written.
    runner = CliRunner()
    top = runner.invoke(app, ["--help"], env=TERMINALS["dumb"]).output
    assert "table [run])" in top
    run = _flat(runner.invoke(app, ["run", "--help"], env=TERMINALS["dumb"]).output)
    assert "[name=]1x3x224x224[:dtype]" in run and "adb[:serial=X]" in run


def _option_column(page: str) -> set[str]:
    """The option names at the start of a panel's rows."""
    # "│ --db", or "│ *  --repo" and "│    --build" in a panel with a required option.
    return {m[1] for m in re.finditer(r"^│ (?:\*  |   )?(--[\w-]+)", page, re.M)}


@pytest.mark.parametrize("path", [("run",), ("compare",), ("track",)])
def test_faipep_spellings_are_accepted_and_named_once_below_the_options(
        path: tuple[str, ...]) -> None:
    command = dict(COMMANDS)[path]
    spellings = faipep_spellings(command)
    assert spellings, f"benchlab {path[0]} has no FAI-PEP spelling to check"
    page = CliRunner().invoke(app, [*path, "--help"], env=TERMINALS["dumb"]).output
    shown = _option_column(page)
    assert shown and not shown & set(spellings)
    note = _flat(page).split("FAI-PEP'sspellingsworktoo:")[1]
    params = {p.name: p for p in command.params if not getattr(p, "hidden", False)}
    for spelling, benchlab in spellings.items():
        assert spelling in note
        # The same value, and the command line as its source (saved defaults step aside).
        param = next(p for p in params.values() if benchlab in p.opts)
        value = [] if param.is_flag else ["x"]
        given = {}
        for written in (spelling, benchlab):
            ctx = command.make_context(path[-1], [written, *value], resilient_parsing=True)
            given[written] = (ctx.params[param.name], ctx.get_parameter_source(param.name).name)
        assert given[spelling] == given[benchlab] and given[spelling][1] == "COMMANDLINE"
