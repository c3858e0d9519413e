"""The ``executorch`` framework: ``.pte`` programs in the ExecuTorch runtime, via the runner.

The adapter (harness side) is in ``adapter.py``; ``backend.py`` runs inside the runner
process. This package loads the adapter only when one of its names is asked for, so a runner
process importing ``backend`` pays for the runtime alone, not for the harness's modules.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DELEGATES",
    "ExecuTorchFramework",
    "PRECISIONS",
    "SUFFIXES",
    "ZOO_CONFIGS",
    "resolved_variant",
    "select_pte_file",
    "zoo_key",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module(f"{__name__}.adapter"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
