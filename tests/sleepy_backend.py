"""A forward-pass backend whose every call sleeps ``service_ms`` (an option, default 2): a
known service time for the load-scenario tests, in this process and (from PYTHONPATH) in
runner processes. Its outputs are its input."""

from __future__ import annotations

import time
from typing import Any

import numpy as np


class SleepyBackend:
    def __init__(self, config: Any) -> None:
        self.service_s = float(config.options.get("service_ms", 2.0)) / 1e3
        self.inputs: dict[str, np.ndarray] = {}

    def load(self) -> None:
        pass

    def input_specs(self) -> list[Any]:
        from benchlab.runner.config import InputConfig

        return [InputConfig(name="x", shape=[1, 4])]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Any:
        self.inputs = inputs
        return lambda: time.sleep(self.service_s)

    def outputs(self) -> list[np.ndarray]:
        return [next(iter(self.inputs.values()))]

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        return {}

    def info(self) -> dict[str, Any]:
        return {}
