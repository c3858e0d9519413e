"""A runner backend with a work knob, for in-process A/B tests: each call spins ``work`` loop
steps times ``1 + slowdown`` (both runner options), so two configurations of it are two
"variants" of one runtime with a known difference. Imported by the runner by module name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchlab.runner.config import InputConfig, RunnerConfig


class SpinBackend:
    """A :class:`benchlab.runner.loop.RuntimeBackend` whose call is integer work."""

    def __init__(self, config: RunnerConfig) -> None:
        options = config.options
        self.steps = int(int(options.get("work", 20_000)) * (1 + float(options.get("slowdown", 0))))

    def load(self) -> None:
        """Nothing to load."""

    def input_specs(self) -> list[InputConfig]:
        """One tiny input."""
        return [InputConfig(name="x", shape=[1])]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """The timed call."""
        steps = self.steps

        def call() -> int:
            total = 0
            for i in range(steps):
                total += i * i % 7
            return total

        return call

    def outputs(self) -> list[np.ndarray]:
        """No outputs."""
        return []

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        """None."""
        return {}

    def info(self) -> dict[str, Any]:
        """No runtime to describe."""
        return {}
