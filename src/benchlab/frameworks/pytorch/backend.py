"""Runner-side PyTorch backend: the only module of the adapter that imports torch."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchlab.runner.accuracy import to_arrays
from benchlab.runner.config import InputConfig, RunnerConfig

__all__ = ["PyTorchBackend", "build_from_entry"]


def build_from_entry(entry: str) -> Any:
    """Call the factory named by ``pkg.module:factory`` or ``path/to/file.py:factory``."""
    target, _, func = entry.rpartition(":")
    if not target or not func:
        raise ValueError(f"entry {entry!r} must look like 'package.module:factory'")
    if target.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(target).stem, target)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {target}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, func)()


class PyTorchBackend:
    """Eager modules (from an entry point) and TorchScript files, timed under inference mode."""

    def __init__(self, config: RunnerConfig) -> None:
        self._config = config
        self._mode = str(config.options.get("mode", "eager"))
        if config.threads:
            torch.set_num_threads(config.threads)
        self._model: Any = None
        self._inputs: list[torch.Tensor] = []

    def load(self) -> None:
        """Build the eager model or load the TorchScript file."""
        if self._mode == "eager":
            if not self._config.entry:
                raise ValueError("eager mode needs the model's 'entry' (pkg.module:factory)")
            model = build_from_entry(self._config.entry)
        elif self._mode == "torchscript":
            if not self._config.model_path:
                raise ValueError("torchscript mode needs a model file")
            model = torch.jit.load(self._config.model_path, map_location="cpu")
        else:
            raise ValueError(f"unknown pytorch mode {self._mode!r}")
        self._model = model.eval()

    def input_specs(self) -> list[InputConfig]:
        """Eager zoo models describe their inputs with an ``example_shapes`` attribute."""
        shapes = getattr(self._model, "example_shapes", None)
        if not shapes:
            raise ValueError("the spec gives no inputs and the model declares none")
        return [InputConfig(name=f"input{i}", shape=list(s)) for i, s in enumerate(shapes)]

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Inputs become tensors once; each call runs the model under inference mode."""
        self._inputs = [torch.from_numpy(array) for array in inputs.values()]
        model, args = self._model, self._inputs

        def call() -> Any:
            with torch.inference_mode():
                return model(*args)

        self._call = call
        return call

    def outputs(self) -> list[np.ndarray]:
        """One more call, its tensors as numpy arrays."""
        return to_arrays(self._call())

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        """Nothing beyond the loop's own measurements."""
        return {}

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Self CPU time per aten operator, one profiler session per iteration."""
        from torch.profiler import ProfilerActivity, profile

        per_iteration: list[dict[str, float]] = []
        for _ in range(iterations):
            with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU]) as prof:
                self._model(*self._inputs)
            ops: dict[str, float] = {}
            for event in prof.key_averages():
                if event.self_cpu_time_total > 0:
                    ops[event.key] = ops.get(event.key, 0.0) + event.self_cpu_time_total / 1000.0
            per_iteration.append(ops)
        return per_iteration

    def info(self) -> dict[str, Any]:
        """torch version, mode and the thread count actually in effect."""
        return {
            "runtime": "torch",
            "runtime_version": torch.__version__,
            "mode": self._mode,
            "threads": torch.get_num_threads(),
        }
