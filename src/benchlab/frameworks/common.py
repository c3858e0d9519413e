"""Small helpers shared by the framework adapters (no runtime imports here)."""

from __future__ import annotations

import importlib.metadata
import importlib.util

from benchlab.spec.types import ModelDef
from benchlab.targets.base import Availability

__all__ = ["distribution_availability", "file_key_with_suffix"]


def distribution_availability(module: str, distribution: str) -> Availability:
    """Whether ``module`` can be imported, found without importing it."""
    if importlib.util.find_spec(module) is None:
        return Availability(
            ok=False, reason=f"{distribution} is not installed (pip install 'benchlab[{module}]')"
        )
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return Availability(ok=True, version=version)


def file_key_with_suffix(model: ModelDef, suffixes: tuple[str, ...]) -> str | None:
    """The key of the first model file whose name ends with one of ``suffixes``."""
    for key, ref in model.files.items():
        if (ref.filename or ref.location).lower().endswith(suffixes):
            return key
    return None
