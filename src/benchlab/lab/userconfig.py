"""The user's config file: ``$XDG_CONFIG_HOME/benchlab/lab.toml`` (``~/.config/benchlab/lab.toml``).

Two tables, both optional and both editable by hand:

* ``[report]``: the lab token ``benchlab run --report-to`` sends (:mod:`benchlab.lab.reporter`);
* ``[run]``: saved defaults of ``benchlab run``'s options, FAI-PEP's ``~/.aibench/git/config.txt``
  (its ``run_bench.py`` saves the options it was given there and ``--reset_options`` forgets
  them). Here they are saved on purpose, with ``benchlab config set KEY VALUE``; ``benchlab
  config show`` lists them; ``benchlab config reset`` (or ``run --reset-options``) forgets them.
  An option given on the command line wins over its saved value.

The ``[run]`` keys are :data:`SAVED_OPTIONS`' (run's option names with underscores). An unknown
key or a value of the wrong kind, set or found in the file, is a :class:`UsageError` naming the
file and the key. Writing changes the ``[run]`` table only: the rest of the file (the token,
comments) stays as it was. The environment is only read (``XDG_CONFIG_HOME``, ``HOME``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from benchlab.errors import UsageError

__all__ = [
    "SAVED_OPTIONS",
    "SavedOption",
    "config_path",
    "read_run_defaults",
    "reset_run_defaults",
    "save_run_default",
]

_RUN = "run"
_ENERGY_METERS = ("auto", "rapl", "nvml", "battery", "monsoon")


@dataclass(frozen=True)
class SavedOption:
    """A ``run`` option whose default can be saved: what its value is and what it means."""

    help: str
    #: ``str``; ``path`` (saved absolute, so a run from another folder finds it); ``list`` (the
    #: option is repeatable: ``config set target a b``)
    kind: str = "str"
    choices: tuple[str, ...] = ()


SAVED_OPTIONS: Mapping[str, SavedOption] = MappingProxyType({
    "db": SavedOption("the store: a SQLite file or a database URL", "path"),
    "target": SavedOption("the devices to run on (repeatable, as --target)", "list"),
    "energy": SavedOption("the power meter", choices=_ENERGY_METERS),
    "monsoon_map": SavedOption("which Monsoon each device is wired to (a file)", "path"),
    "json_dir": SavedOption("a folder for one JSON file per result", "path"),
    "simple_json_dir": SavedOption("a flat folder for one JSON file per job", "path"),
    "report_to": SavedOption("the lab server results are posted to (a URL)"),
    "user_identifier": SavedOption("the name the results are found by"),
    "user_string": SavedOption("who runs the benchmarks, as the lab shows it"),
    "platform_sig": SavedOption("the device's platform name"),
    "hash_platform_mapping": SavedOption("a JSON file of device hash → platform name", "path"),
})


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/benchlab/lab.toml``, or ``~/.config/benchlab/lab.toml``.
    ``environ`` (default :data:`os.environ`) is only read."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    # A relative XDG value is invalid per the spec and must be ignored.
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"
    return base / "benchlab" / "lab.toml"


def _table(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the config file: {exc}") from None
    table = data.get(_RUN, {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [{_RUN}] must be a table of saved options")
    return table


def _checked(path: Path, key: str, value: Any) -> str | list[str]:
    """``value`` of ``key`` as run takes it, or a :class:`UsageError` naming the file and key."""
    option = SAVED_OPTIONS.get(key)
    if option is None:
        raise UsageError(f"{path}: [{_RUN}] {key}: not an option whose default can be saved "
                         f"(known: {', '.join(SAVED_OPTIONS)})")
    if option.kind == "list":
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v for v in values):
            raise UsageError(f"{path}: [{_RUN}] {key}: expected a list of non-empty strings, "
                             f"not {value!r}")
        return list(values)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{path}: [{_RUN}] {key}: expected a non-empty string, not {value!r}")
    if option.choices and value not in option.choices:
        raise UsageError(f"{path}: [{_RUN}] {key}: {value!r} is not one of "
                         f"{', '.join(option.choices)}")
    return value


def read_run_defaults(path: Path | None = None) -> dict[str, str | list[str]]:
    """The saved defaults of ``run``'s options, checked (``{}`` without a file)."""
    where = path or config_path()
    return {key: _checked(where, key, value) for key, value in _table(where).items()}


def save_run_default(key: str, values: Sequence[str],
                     path: Path | None = None) -> str | list[str]:
    """Save ``values`` as the default of ``run``'s option ``key`` (``json-dir`` or
    ``json_dir``); a path is saved absolute. Returns the value saved."""
    where = path or config_path()
    name = key.replace("-", "_")
    option = SAVED_OPTIONS.get(name)
    if option is not None and option.kind != "list" and len(values) != 1:
        raise UsageError(f"{where}: [{_RUN}] {name}: takes one value, not {len(values)}")
    raw: Any = list(values) if option is not None and option.kind == "list" else (
        values[0] if values else "")
    if option is not None and option.kind == "path" and isinstance(raw, str) and raw \
            and "://" not in raw and not raw.lstrip().startswith("{"):
        raw = str(Path(raw).expanduser().absolute())
    value = _checked(where, name, raw)
    table = _table(where)
    table[name] = value
    _write_run_table(where, table)
    return value


def reset_run_defaults(path: Path | None = None) -> list[str]:
    """Forget every saved default (the ``[run]`` table); returns the keys that were saved."""
    where = path or config_path()
    table = _table(where)
    if table:
        _write_run_table(where, {})
    return sorted(table)


_HEADER = re.compile(r"^\s*\[")


def _write_run_table(path: Path, table: Mapping[str, Any]) -> None:
    """Replace the ``[run]`` table of ``path`` with ``table`` (none when empty), leaving every
    other line as it is; written atomically, readable by its owner only (it may hold a token)."""
    lines = path.read_text().splitlines() if path.is_file() else []
    kept: list[str] = []
    inside = False
    for line in lines:
        if _HEADER.match(line):
            inside = line.strip().replace(" ", "") == f"[{_RUN}]"
        if not inside:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    if table:
        kept += ([""] if kept else []) + [f"[{_RUN}]"]
        # JSON's strings and lists of strings are TOML's basic strings and arrays.
        kept += [f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in
                 table.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".lab-", suffix=".toml")
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(kept) + ("\n" if kept else ""))
    os.replace(tmp, path)
