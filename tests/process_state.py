"""The process-wide settings a test can leave behind for every later test in the pytest process.

torch keeps its intra-op thread count, matmul precision, default dtype, grad mode and
deterministic-algorithm flag per process. A test that runs a backend in-process (the PyTorch
backend calls ``torch.set_num_threads``, as it must in its runner process) changes them for all
the tests after it, so a test's numbers could depend on what ran before it: the kind of test that
passes alone and fails in the suite. ``conftest.py`` snapshots these settings around every test,
puts them back, and lists the tests that changed them in the session summary.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["TorchSettings"]


@dataclass(frozen=True)
class TorchSettings:
    """torch's process-wide settings that change numerics or speed of later tests."""

    num_threads: int
    matmul_precision: str
    default_dtype: Any
    grad_enabled: bool
    deterministic: bool
    mkldnn_enabled: bool

    @classmethod
    def read(cls) -> TorchSettings | None:
        """This process's settings, or None when torch has not been imported (never imports it)."""
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(torch, "get_num_threads"):
            return None
        return cls(
            num_threads=torch.get_num_threads(),
            matmul_precision=torch.get_float32_matmul_precision(),
            default_dtype=torch.get_default_dtype(),
            grad_enabled=torch.is_grad_enabled(),
            deterministic=torch.are_deterministic_algorithms_enabled(),
            mkldnn_enabled=torch.backends.mkldnn.enabled,
        )

    def changed(self, now: TorchSettings) -> list[str]:
        """``name: before -> now`` for every setting that differs."""
        return [f"{f.name}: {getattr(self, f.name)} -> {getattr(now, f.name)}"
                for f in fields(self) if getattr(self, f.name) != getattr(now, f.name)]

    def restore(self) -> None:
        """Put these settings back in this process."""
        import torch

        torch.set_num_threads(self.num_threads)
        torch.set_float32_matmul_precision(self.matmul_precision)
        torch.set_default_dtype(self.default_dtype)
        torch.set_grad_enabled(self.grad_enabled)
        torch.use_deterministic_algorithms(self.deterministic)
        torch.backends.mkldnn.enabled = self.mkldnn_enabled
