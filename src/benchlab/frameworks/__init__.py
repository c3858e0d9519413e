"""Framework adapters: one per inference runtime, registered as ``benchlab.frameworks``.

Each runtime's package holds ``adapter.py`` (the harness side: which files, which options, the
runner command) and ``backend.py`` (the runner side, the only module that imports the runtime).
Names here load on first use: a runner process imports ``benchlab.frameworks.<rt>.backend``,
and this package must not pull the harness's modules into the ``import_time`` it reports.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Framework", "Invocation", "JobContext", "Unsupported"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("benchlab.frameworks.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
