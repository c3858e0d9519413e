"""Runner-side ExecuTorch backend: the only module of the adapter that imports ExecuTorch.

One timed iteration is a call of the runtime's method object on torch tensors made once in
:meth:`ExecuTorchBackend.prepare`; the returned output tensors are part of the call (the
runtime allocates them), converting them to numpy is not.

Delegation coverage (:meth:`ExecuTorchBackend.delegation`) is read from the program file
itself by :mod:`benchlab.frameworks.executorch.program`.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

# The compiled runtime itself, not its public wrapper: ``portable_lib`` and
# ``executorch.runtime`` import ``executorch.exir`` (the whole export stack, torchao
# included) for one warning class, about 6 s of every runner process on this machine against
# 0.01 s for the extension (docs/performance.md §9). torch is imported first because the
# extension links against libtorch, as the wrapper's own comment says.
from executorch.extension.pybindings import _portable_lib as portable_lib

from benchlab.schema.diagnosis import Coverage
from benchlab.frameworks.executorch.program import pte_coverage
from benchlab.runner.accuracy import to_arrays
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.runner.backend import ProfilingUnavailable
from benchlab.schema.result import DetailKey

__all__ = ["ExecuTorchBackend"]

# ExecuTorch ScalarType codes (c10 numbering) → numpy dtype names.
_SCALAR_TYPES = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
    7: "float64", 11: "bool",
}
_VERSION = importlib.metadata.version("executorch")

class ExecuTorchBackend:
    """A program's method in the ExecuTorch runtime, its threadpool sized to ``threads``."""

    def __init__(self, config: RunnerConfig) -> None:
        config.model_file("executorch needs a .pte program file")
        self._config, self._options = config, config.options
        self._method_name = str(self._options.get("method", "forward"))
        self._method: Any = None
        self._program: Any = None
        self._args: list[torch.Tensor] = []
        self._threads_note: str | None = None
        self._size_threadpool(config.threads)

    def _size_threadpool(self, threads: int | None) -> None:
        """Resize the runtime's shared threadpool, which the XNNPACK delegate runs on.

        ``_unsafe_reset_threadpool`` is unsafe only while another thread uses the pool;
        this process has not run anything yet. Releases without it keep their own choice.
        """
        if not threads:
            return
        reset = getattr(portable_lib, "_unsafe_reset_threadpool", None)
        if reset is None:
            self._threads_note = (f"executorch {_VERSION} cannot size its threadpool from "
                                  f"Python; {threads} thread(s) asked, the runtime chose")
            return
        reset(int(threads))

    def load(self) -> None:
        """Load the program and its method (delegate initialisation happens here)."""
        program = portable_lib._load_program(
            str(self._config.model_path), enable_etdump=False, debug_buffer_size=0,
            program_verification=portable_lib.Verification.InternalConsistency)
        names = [program.get_method_name(i) for i in range(program.num_methods())]
        if self._method_name not in names:
            raise ValueError(f"the program has no method {self._method_name!r} "
                             f"(methods: {', '.join(sorted(names))})")
        self._method = program.load_method(self._method_name)
        self._program = program  # the method borrows from it

    def _input_dtypes(self) -> list[str | None]:
        """The dtype of each tensor input the method declares (``None`` where unknown)."""
        meta = self._method.method_meta()
        dtypes: list[str | None] = []
        for index in range(meta.num_inputs()):
            try:
                dtypes.append(_SCALAR_TYPES.get(int(meta.input_tensor_meta(index).dtype())))
            except Exception:  # noqa: BLE001 - a non-tensor input has no tensor metadata
                dtypes.append(None)
        return dtypes

    def input_specs(self) -> list[InputConfig]:
        """Inputs from the method's metadata (memory-planned shapes), named ``input0``...

        A ``.pte`` does not record input names; the zoo's reference files use the same
        ``input<i>`` naming, and inputs are bound by position anyway.
        """
        meta = self._method.method_meta()
        specs = []
        for index in range(meta.num_inputs()):
            try:
                tensor = meta.input_tensor_meta(index)
                dtype = _SCALAR_TYPES[int(tensor.dtype())]
            except Exception as error:  # noqa: BLE001 - non-tensor inputs, exotic dtypes
                raise ValueError(
                    f"cannot derive input {index} of {self._method_name!r} from the program "
                    f"({error}); give the inputs (name, shape, dtype) in the spec's test"
                ) from error
            specs.append(InputConfig(name=f"input{index}", shape=list(tensor.sizes()),
                                     dtype=dtype))
        return specs

    def prepare(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """Bind inputs by position (programs carry no input names), cast to the declared dtype."""
        dtypes = self._input_dtypes()
        if len(inputs) != len(dtypes):
            raise ValueError(f"{self._method_name!r} takes {len(dtypes)} inputs; got "
                             f"{len(inputs)} ({', '.join(inputs)})")
        self._args = [
            torch.from_numpy(np.ascontiguousarray(array, dtype=dtype or array.dtype))
            for array, dtype in zip(inputs.values(), dtypes, strict=True)
        ]
        method, args = self._method, self._args
        return lambda: method(args)

    def outputs(self) -> list[np.ndarray]:
        """One more execution; outputs as numpy arrays in the method's output order."""
        return to_arrays(list(self._method(self._args)))

    def profile_ops(self, iterations: int) -> list[dict[str, float]]:
        """Not available: the PyPI wheel is built without ExecuTorch's event tracer."""
        raise ProfilingUnavailable(
            f"executorch {_VERSION} (PyPI wheel) is built without the event tracer, so "
            "load_program(enable_etdump=True) records no ETDump per-operator events; a runtime "
            "built with EXECUTORCH_ENABLE_EVENT_TRACER=ON (e.g. executor_runner on the target) "
            "gives them"
        )

    def delegation(self) -> Coverage:
        """The partitions the delegate took and the operators left out (:func:`pte_coverage`)."""
        return pte_coverage(str(self._config.model_path), self._options.get("delegate"),
                            self._method_name)

    def info(self) -> dict[str, Any]:
        """ExecuTorch version, threadpool size, delegate and precision of the file, the file."""
        get_threads = getattr(portable_lib, "_threadpool_get_thread_count", None)
        details: dict[str, Any] = {
            "runtime": "executorch",
            DetailKey.RUNTIME_VERSION: _VERSION,
            DetailKey.THREADS: int(get_threads()) if get_threads else self._config.threads,
            "delegate": self._options.get("delegate"),
            DetailKey.PRECISION: str(self._options.get("precision", "fp32")),
            "model_file": os.path.basename(str(self._config.model_path)),
        }
        if self._threads_note:
            details["threads_note"] = self._threads_note
        return details
