"""A runtime backend that does nothing, so that timing it measures only the runner's loop.

``bench/overhead.py`` runs :func:`benchlab.runner.loop.measure` with
``backend="noop_backend:NoopBackend"``; the runner imports it by module name, so ``bench/`` has
to be on ``sys.path`` (it is when a script in ``bench/`` is run directly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchlab.runner.config import InputConfig, RunnerConfig

__all__ = ["NoopBackend", "noop"]


def noop() -> None:
    """The inference call: returns at once (the bare reference loop calls this same function)."""


class NoopBackend:
    """A :class:`benchlab.runner.loop.RuntimeBackend` with no runtime and no model."""

    def __init__(self, config: RunnerConfig) -> None:
        self._config = config

    def load(self) -> None:
        """Nothing to load."""

    def input_specs(self) -> list[InputConfig]:
        """One tiny input, so the runner has something to synthesise."""
        return [InputConfig(name="x", shape=[1])]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """The timed call ignores its inputs."""
        return noop

    def outputs(self) -> list[np.ndarray]:
        """The no-op returns nothing."""
        return []

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        """Nothing measured beyond the loop."""
        return {}

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """No operators to profile."""
        return [{} for _ in range(iterations)]

    def info(self) -> dict[str, Any]:
        """What the detail line reports."""
        return {"runtime": "noop", "runtime_version": "0", "threads": 1}
