"""Packages whose public names are imported on first use (PEP 562 module ``__getattr__``).

``benchlab`` and ``benchlab.report`` list where each public name lives and import that module
when the name is first asked for: a runner process, ``benchlab --help`` and a script that only
stores results do not pay for the reporters' rich or the API's pydantic models.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["names_at_homes"]


def names_at_homes(package: str, homes: Mapping[str, str],
                   namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: name → ``getattr(import_module(homes[name]), name)``,
    kept in ``namespace`` (the package's ``globals()``) so the next access is a plain one.

    An unknown name raises ``AttributeError`` (not ``ImportError``), which lets ``from package
    import submodule`` fall back to importing the submodule.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
