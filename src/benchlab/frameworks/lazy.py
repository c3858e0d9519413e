"""Module ``__getattr__`` hooks that load a framework's harness-side names on first use.

A runner process imports ``benchlab.frameworks.<rt>.backend``, which runs the ``__init__`` of
``benchlab.frameworks`` and of ``benchlab.frameworks.<rt>`` first. Those stay empty but for
this hook, so the ``import_time`` the runner reports holds the runtime's import alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["names_from"]


def names_from(package: str, module: str) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package`` that answers with the attributes of ``module``."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # dunder probes (copy, pickle, inspect) load nothing
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            loaded = importlib.import_module(module)
        except AttributeError as exc:
            # Raised as it is, ``from package import Name`` would turn an AttributeError inside
            # the adapter into "cannot import name": say where it happened instead.
            raise ImportError(f"importing {module} failed: {exc!r}", name=module) from exc
        try:
            return getattr(loaded, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
