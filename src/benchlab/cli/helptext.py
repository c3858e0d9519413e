"""How ``benchlab … --help`` reads: the panels the long option lists are grouped into, and the
root group (:class:`HelpGroup`) that tidies every command's help once typer has built them.

* Help text is plain text. Typer draws it through rich markup, where ``table [run]`` or
  ``[name=]`` would be taken for a style tag and vanish; every command's, option's and
  argument's help is escaped when the command tree is built, so it is shown as written.
* FAI-PEP's underscore spellings (``--user_identifier`` beside ``--user-identifier``) stay
  accepted, but as hidden options of their own that fill the same parameter, so the option
  column is no wider than benchlab's names; the command's help ends with a line naming them.
  An underscore spelling that is an option's only one (``--wipe_cache BOOL``) stays shown.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from rich.markup import escape
from typer.core import HAS_RICH, TyperGroup

__all__ = [
    "DECIDE",
    "FAIPEP",
    "GENERATORS",
    "LAB",
    "MEASURE",
    "MEASURE_MORE",
    "OUTPUT",
    "SCENARIOS",
    "WHAT_TO_RUN",
    "WHERE",
    "HelpGroup",
    "faipep_spellings",
]

# The panels the options of run, compare and track are grouped under (typer draws them in the
# order their first option comes in the command's signature; the rest stay under "Options").
WHAT_TO_RUN = "What to run"
GENERATORS = "Text generators"
SCENARIOS = "Load scenarios"
WHERE = "Where: targets and devices"
MEASURE = "How to measure"
MEASURE_MORE = "What else to measure"
DECIDE = "How to decide"
OUTPUT = "Results and output"
LAB = "The lab"
FAIPEP = "FAI-PEP compatibility"


class HelpGroup(TyperGroup):
    """The ``benchlab`` group. Typer builds the whole tree of click commands before this, its
    root (``get_command``, on every invocation and in ``CliRunner``), so its construction is
    where each command's help is tidied, the commands added later included."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rich = HAS_RICH and self.rich_markup_mode == "rich"
        for command in _tree(self):
            _hide_faipep_spellings(command)
            if rich:  # without rich, click prints the text as it is: nothing to escape
                _escape_help(command)


def faipep_spellings(command: Any) -> dict[str, str]:
    """The hidden FAI-PEP spellings ``command`` accepts, each with benchlab's option it
    fills (``{"--user_identifier": "--user-identifier"}``)."""
    return {spelling: getattr(param, "faipep_of", "")
            for param in command.params if getattr(param, "faipep_of", "")
            for spelling in param.opts}


def _tree(group: Any) -> Iterator[Any]:
    yield group
    for command in getattr(group, "commands", {}).values():
        yield from _tree(command)


def _is_faipep(spelling: str) -> bool:
    return spelling.startswith("--") and "_" in spelling


def _hide_faipep_spellings(command: Any) -> None:
    """Each option's underscore spellings moved to a hidden option of their own (a copy of
    the option: same parameter name, so the parser files its value under the same key, and
    the same flag or value semantics), which hands no value of its own to the command."""
    named = []
    for param in list(command.params):
        if param.param_type_name != "option":
            continue
        faipep = [o for o in param.opts if _is_faipep(o)]
        if not faipep or len(faipep) == len(param.opts):
            continue
        param.opts = [o for o in param.opts if o not in faipep]
        alias = copy.copy(param)
        alias.opts, alias.secondary_opts = faipep, []
        alias.hidden, alias.expose_value = True, False
        alias.faipep_of = param.opts[0]
        command.params.append(alias)
        named += [o if o.replace("_", "-") in param.opts else f"{o} ({param.opts[0]})"
                  for o in faipep]
    if named:
        note = f"FAI-PEP's spellings work too: {', '.join(named)}."
        command.epilog = f"{command.epilog}\n\n{note}" if command.epilog else note


def _escape_help(command: Any) -> None:
    for owner in (command, *command.params):
        for field in ("help", "short_help", "epilog"):
            text = getattr(owner, field, None)
            if text:
                setattr(owner, field, escape(text))
