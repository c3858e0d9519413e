"""The runner side of a framework, and how the runner loads one: the :class:`RuntimeBackend`
protocol (the only code that imports a runtime), the exceptions a backend raises when it
cannot answer, and :func:`load_backend`, which imports it and names the runtime to install
when that import fails."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from benchlab.runner.config import InputConfig, RunnerConfig

__all__ = [
    "LayersUnavailable",
    "ProfilingUnavailable",
    "RuntimeBackend",
    "RuntimeMissing",
    "framework_of",
    "load_backend",
]


class ProfilingUnavailable(Exception):
    """Raised by :meth:`RuntimeBackend.profile_ops` when the runtime has no per-op timings.

    The message says why; the result records it instead of an empty per-op table.
    """


class LayersUnavailable(Exception):
    """Raised by a backend's ``layer_outputs`` when this configuration cannot expose its layers
    (a compiled model whose intermediate tensors never exist, no reference to compare with).

    The message says why; the layer table records it as its note instead of rows.
    """


class RuntimeBackend(Protocol):
    """The runner side of a framework: the only code that imports the runtime.

    The constructor imports the runtime; :meth:`load` loads the model (timed as load time);
    :meth:`prepare` binds inputs and returns the zero-argument call that is timed per iteration.

    Optional: ``extra_metrics() -> {name: (value, unit)}``, whole-model facts measured while
    loading (``compile_time``); a backend without it adds none. Two more explain a cell (see
    :mod:`benchlab.schema.diagnosis`):
    ``delegation() -> Coverage | None``, what the delegate or execution provider took; and
    ``layer_outputs(inputs, reference) -> (own, reference's, order, what the reference is)``,
    the intermediate outputs of the model and of a reference model (``reference`` is the
    configured reference model's path, or ``None`` for the backend's default) as dicts of
    arrays by tensor name, with the model's ``(name, op type)`` in execution order; it raises
    :class:`LayersUnavailable` where the configuration cannot expose its layers.
    """

    def __init__(self, config: RunnerConfig) -> None: ...

    def load(self) -> None:
        """Load the model file (or build the eager model)."""

    def input_specs(self) -> list[InputConfig]:
        """Inputs the model declares, used when the spec gives none."""

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Bind inputs and return the call that runs one inference."""

    def outputs(self) -> list[np.ndarray]:
        """The outputs for the prepared inputs, as numpy arrays in the model's output order.

        Called after timing, so a backend may simply run the model once more.
        """

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Per-iteration operator self-times in milliseconds, keyed by operator type.

        Raises :class:`ProfilingUnavailable` when the runtime cannot time operators.
        """

    def info(self) -> dict[str, Any]:
        """Runtime version and the effective configuration actually used (``precision`` too)."""


def load_backend(path: str, config: RunnerConfig) -> RuntimeBackend:
    """The backend class ``module:Class`` at ``path``, made with ``config`` (the runtime is
    imported here, which is what the runner's ``import_time`` measures)."""
    module_name, _, class_name = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as missing:
        if not missing.name or missing.name.split(".")[0] == "benchlab":
            raise
        raise RuntimeMissing(module_name, missing.name, config) from None
    return getattr(module, class_name)(config)


class RuntimeMissing(Exception):
    """The runtime a backend needs is not installed for this Python (a new board, a phone's
    Termux, a fresh venv): says which runtime, which module, and what to install."""

    def __init__(self, backend_module: str, module: str, config: RunnerConfig) -> None:
        framework = framework_of(backend_module)
        top = module.split(".")[0]
        # The harness says which runtime the framework drives (its ``requires``): that
        # module's pip name may differ from its import name (ai_edge_litert → ai-edge-litert);
        # any other module (a runtime's own dependency) goes by its import name.
        distribution = (config.runtime if config.runtime and top == config.runtime_module
                        else top.replace("_", "-"))
        super().__init__(
            f"{framework} needs {top!r}, not installed here: {sys.executable} -m pip install "
            f"{distribution} (Python {sys.version.split()[0]} on {os.uname().machine})")


def framework_of(backend_module: str) -> str:
    """The framework a backend module belongs to: ``benchlab.frameworks.<framework>.backend``
    names the one the user asked for; any other module names itself."""
    parts = backend_module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "frameworks" else backend_module
