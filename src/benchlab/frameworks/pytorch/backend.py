"""Runner-side PyTorch backend: the only module of the adapter that imports torch.

Where the time goes, per mode (``load_time`` is :meth:`PyTorchBackend.load`):

* ``eager`` / ``torchscript``: building the module / ``torch.jit.load``.
* ``export``: ``torch.export.load`` and unlifting it to a ``GraphModule`` (``.module()``).
* ``aoti``: ``aoti_load_package``: unzipping the package, loading its shared library and,
  in every fresh process, torch probing the CPU's vector ISA by compiling and running small
  test programs (about 2 s here). The model's own C++ compilation happened at export time
  (``benchlab zoo export --formats aoti``).
* ``compile``: building the module and wrapping it, which is cheap because ``torch.compile``
  compiles lazily. The first call compiles (Dynamo tracing, Inductor code generation, a C++
  build); :meth:`PyTorchBackend.prepare` makes that call on the real inputs and reports its
  time as ``compile_time``, so ``first_inference`` is the first call of the compiled code. A
  warm Inductor cache (``/tmp/torchinductor_$USER``) shortens compile_time a lot; the details
  say how many compiled graphs came from the cache.

``import_time`` covers importing torch and, for compile and aoti, the compiler stacks
(``torch._dynamo``, ``torch._inductor``: about 2 s more).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchlab.frameworks.pytorch.options import ENTRY_MODES, MODES, PRECISIONS
from benchlab.runner.accuracy import to_arrays
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.runner.backend import ProfilingUnavailable
from benchlab.schema.result import DetailKey

__all__ = ["PyTorchBackend", "build_from_entry"]

# Inductor names each compiled graph's profiler event after its hash; one stable key instead.
_COMPILED_GRAPH = re.compile(r"^## Call CompiledFxGraph \w+ ##$")


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


def _widen(value: Any) -> Any:
    """bfloat16 tensors (autocast outputs) as float32, which numpy can hold."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.dtype == torch.bfloat16 else value
    if isinstance(value, dict):
        return {k: _widen(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_widen(v) for v in value]
    return value


def _declared_specs(module: Any) -> list[InputConfig] | None:
    """Inputs from the factory contract's ``example_shapes`` / ``example_dtypes``."""
    shapes = getattr(module, "example_shapes", None)
    if not shapes:
        return None
    dtypes = getattr(module, "example_dtypes", None) or ["float32"] * len(shapes)
    return [
        InputConfig(name=f"input{i}", shape=list(s), dtype=str(d))
        for i, (s, d) in enumerate(zip(shapes, dtypes, strict=False))
    ]


def _exported_specs(program: Any) -> list[InputConfig] | None:
    """Inputs of an ``ExportedProgram`` from the example inputs saved with it."""
    examples = getattr(program, "example_inputs", None)
    if not examples:
        return None
    args, kwargs = examples
    tensors = [t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor)]
    names = list(program.graph_signature.user_inputs)
    if len(names) != len(tensors):
        names = [f"input{i}" for i in range(len(tensors))]
    return [
        InputConfig(name=n, shape=list(t.shape), dtype=str(t.dtype).removeprefix("torch."))
        for n, t in zip(names, tensors, strict=True)
    ]


class PyTorchBackend:
    """A model in one of the pytorch modes, timed under inference mode."""

    def __init__(self, config: RunnerConfig) -> None:
        self._config = config
        options = config.options
        self._mode = str(options.get("mode", "eager"))
        if self._mode not in MODES:
            raise ValueError(f"unknown pytorch mode {self._mode!r}")
        self._precision = str(options.get("precision", "fp32"))
        if self._precision not in PRECISIONS:
            raise ValueError(f"pytorch precision must be one of {', '.join(PRECISIONS)}")
        if self._precision != "fp32" and self._mode not in ENTRY_MODES:
            raise ValueError(f"precision={self._precision} needs eager or compile mode")
        if config.threads:
            torch.set_num_threads(config.threads)
        # Import the compiler stacks here, where import_time is measured, so that load_time
        # and compile_time hold only the work on this model (Inductor alone takes ~2 s).
        if self._mode == "compile":
            importlib.import_module("torch._dynamo")
            importlib.import_module("torch._inductor.compile_fx")
        self._aoti_load: Callable[[str], Any] | None = None
        if self._mode == "aoti":
            from torch._inductor import aoti_load_package

            self._aoti_load = aoti_load_package
        self._model: Any = None
        self._source: Any = None  # the eager module behind a compiled one
        self._exported: Any = None
        self._inputs: list[torch.Tensor] = []
        self._call: Callable[[], Any] | None = None
        self._compile_ms: float | None = None

    def _file(self) -> str:
        if not self._config.model_path:
            raise ValueError(f"{self._mode} mode needs a model file")
        return self._config.model_path

    def load(self) -> None:
        """Build, load or wrap the model (see the module docstring for what each mode times)."""
        if self._mode in ENTRY_MODES:
            if not self._config.entry:
                raise ValueError(f"{self._mode} mode needs the model's 'entry' (pkg.module:factory)")
            model = build_from_entry(self._config.entry).eval()
            if self._mode == "compile":
                self._source = model
                options = self._config.options
                model = torch.compile(
                    model,
                    backend=str(options.get("backend", "inductor")),
                    mode=options.get("compile_mode"),
                )
        elif self._mode == "torchscript":
            model = torch.jit.load(self._file(), map_location="cpu").eval()
        elif self._mode == "export":
            self._exported = torch.export.load(self._file())
            # An unlifted exported module refuses .eval(): it keeps the mode it was exported in.
            model = self._exported.module()
        else:
            assert self._aoti_load is not None
            model = self._aoti_load(self._file())
        self._model = model

    def input_specs(self) -> list[InputConfig]:
        """The model's declared inputs: ``example_shapes``, a .pt2's saved example inputs, or
        the ``example_shapes`` of ``entry``'s model for file modes that cannot tell."""
        specs = _declared_specs(self._source if self._source is not None else self._model)
        if specs is None and self._exported is not None:
            specs = _exported_specs(self._exported)
        if specs is None and self._mode not in ENTRY_MODES and self._config.entry:
            specs = _declared_specs(build_from_entry(self._config.entry))
        if not specs:
            raise ValueError("the spec gives no inputs and the model declares none")
        return specs

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Inputs become tensors once; each call runs the model under inference mode.

        In compile mode the first call, which compiles, happens here and is timed apart.
        """
        self._inputs = [torch.from_numpy(array) for array in inputs.values()]
        model, args = self._model, self._inputs
        if self._precision == "bf16":
            def call() -> Any:
                with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                    return model(*args)
        else:
            def call() -> Any:
                with torch.inference_mode():
                    return model(*args)

        self._call = call
        if self._mode == "compile":
            # Same grad mode, autocast state and shapes as the timed calls, so the guards
            # hold and nothing recompiles later.
            started = time.perf_counter_ns()
            call()
            self._compile_ms = (time.perf_counter_ns() - started) / 1e6
        return call

    def outputs(self) -> list[np.ndarray]:
        """One more call, its tensors as numpy arrays (bfloat16 widened to float32)."""
        assert self._call is not None
        return to_arrays(_widen(self._call()))

    def extra_metrics(self) -> dict[str, tuple[float, str]]:
        """``compile_time`` in compile mode: the first, compiling call."""
        if self._compile_ms is None:
            return {}
        return {"compile_time": (self._compile_ms, "ms")}

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Self CPU time per operator, one profiler session per iteration of the timed call."""
        if self._mode == "aoti":
            raise ProfilingUnavailable(
                "AOTInductor runs generated C++ kernels that torch.profiler cannot attribute "
                "to operators"
            )
        from torch.profiler import ProfilerActivity, profile

        assert self._call is not None
        per_iteration: list[dict[str, float]] = []
        for _ in range(iterations):
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                self._call()
            ops: dict[str, float] = {}
            for event in prof.key_averages():
                if event.self_cpu_time_total > 0:
                    key = "CompiledFxGraph" if _COMPILED_GRAPH.match(event.key) else event.key
                    ops[key] = ops.get(key, 0.0) + event.self_cpu_time_total / 1000.0
            per_iteration.append(ops)
        return per_iteration

    def layer_outputs(
        self, inputs: dict[str, np.ndarray], reference: str | None
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[tuple[str, str]], str]:
        """Every export-graph node's output here and in the reference (the entry's fp32 model,
        or the ``reference`` .pt2); see :mod:`benchlab.frameworks.pytorch.layers`."""
        from benchlab.frameworks.pytorch.layers import capture_layers

        entry = self._config.entry
        return capture_layers(
            self._mode, torch.bfloat16 if self._precision == "bf16" else None, self._model, inputs,
            reference, (lambda: build_from_entry(entry).eval()) if entry else None,
            self.outputs,
        )

    def _compile_info(self) -> dict[str, Any]:
        options = self._config.options
        info: dict[str, Any] = {
            "compile_backend": str(options.get("backend", "inductor")),
            "compile_mode": options.get("compile_mode"),
        }
        try:  # private counters: report them while they exist, never fail a run over them
            from torch._dynamo.utils import counters

            info["compiled_graphs"] = int(counters["stats"]["unique_graphs"])
            info["inductor_cache_hits"] = int(counters["inductor"]["fxgraph_cache_hit"])
            info["inductor_cache_misses"] = int(counters["inductor"]["fxgraph_cache_miss"])
        except (ImportError, KeyError, TypeError):
            pass
        return info

    def info(self) -> dict[str, Any]:
        """torch version, mode, precision and the thread count actually in effect."""
        info: dict[str, Any] = {
            "runtime": "torch",
            DetailKey.RUNTIME_VERSION: torch.__version__,
            DetailKey.EXECUTION_MODE: self._mode,
            DetailKey.PRECISION: self._precision,
            DetailKey.THREADS: torch.get_num_threads(),
        }
        if self._mode == "compile":
            info.update(self._compile_info())
        elif self._mode == "aoti" and hasattr(self._model, "get_metadata"):
            info["aoti_cpu_isa"] = self._model.get_metadata().get("AOTI_CPU_ISA")
        return info
