"""The ``pytorch`` framework's option values, shared by its adapter and its runner backend.

Plain constants only: the runner process imports this beside ``backend.py``.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MODES", "ENTRY_MODES", "MODES", "PRECISIONS"]

MODES = ("eager", "torchscript", "export", "aoti", "compile")
#: Modes measured when no configuration is requested (compile is opt-in: see the adapter).
DEFAULT_MODES = ("eager", "torchscript", "export", "aoti")
#: Modes that build the model from ``model.entry`` instead of reading a file.
ENTRY_MODES = ("eager", "compile")
PRECISIONS = ("fp32", "bf16")
