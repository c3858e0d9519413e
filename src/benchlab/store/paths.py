"""Where the default results store lives on this machine."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["default_store_path"]

_STORE_FILENAME = "results.db"


def default_store_path(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user SQLite file used when no store is named.

    ``$XDG_DATA_HOME/benchlab/results.db`` when that variable holds an absolute path, else
    ``~/.local/share/benchlab/results.db``. The environment is only read; pass ``environ`` to
    resolve against another mapping. Nothing is created here.
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_DATA_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored, and following it would
    # make the store depend on the current directory.
    if xdg and Path(xdg).is_absolute():
        base = Path(xdg)
    else:
        home = env.get("HOME") or str(Path.home())
        base = Path(home) / ".local" / "share"
    return base / "benchlab" / _STORE_FILENAME
