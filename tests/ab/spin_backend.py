"""A runner backend with a work knob, for in-process A/B tests: each call spins ``work`` loop
steps times ``1 + slowdown`` (both runner options), so two configurations of it are two
"variants" of one runtime with a known difference. Imported by the runner by module name.

``crowded`` stands in for runtimes whose idle pools take the machine from a neighbour: while
another SpinBackend is alive in the same process, each call spins ``1 + crowded`` times as
long, so an interleaved session runs it slower than it runs alone, by a known factor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from benchlab.runner.config import InputConfig, RunnerConfig


class SpinBackend:
    """A :class:`benchlab.runner.loop.RuntimeBackend` whose call is integer work."""

    #: The instances alive in this process (a test fake's bookkeeping, see the module text).
    alive: set[int] = set()

    def __init__(self, config: RunnerConfig) -> None:
        options = config.options
        self.steps = int(int(options.get("work", 20_000)) * (1 + float(options.get("slowdown", 0))))
        self.crowded = float(options.get("crowded", 0))
        SpinBackend.alive.add(id(self))

    def __del__(self) -> None:
        SpinBackend.alive.discard(id(self))

    def load(self) -> None:
        """Nothing to load."""

    def input_specs(self) -> list[InputConfig]:
        """One tiny input."""
        return [InputConfig(name="x", shape=[1])]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """The timed call."""
        steps, crowded, alive = self.steps, self.crowded, SpinBackend.alive

        def call() -> int:
            total = 0
            n = int(steps * (1 + crowded)) if len(alive) > 1 else steps
            for i in range(n):
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
