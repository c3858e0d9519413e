"""The ``onnxruntime`` framework: ``.onnx`` models in an ONNX Runtime session, via the runner."""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.frameworks.base import (
    Invocation,
    JobContext,
    RunnerFramework,
    Unsupported,
    runner_invocation,
)
from benchlab.frameworks.common import distribution_availability, file_key_with_suffix
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import Availability

__all__ = ["OnnxRuntimeFramework"]


class OnnxRuntimeFramework(RunnerFramework):
    """Options: ``providers``, ``graph_optimization_level``, ``intra_op_threads``,
    ``inter_op_threads``."""

    name = "onnxruntime"
    backend = "benchlab.frameworks.onnxruntime.backend:OnnxRuntimeBackend"

    def availability(self) -> Availability:
        """onnxruntime is importable (not imported)."""
        return distribution_availability("onnxruntime", "onnxruntime")

    def configurations(
        self, model: ModelDef, requested: Sequence[FrameworkConfig]
    ) -> list[FrameworkConfig] | Unsupported:
        """The CPU provider with full graph optimisation unless configured otherwise."""
        if file_key_with_suffix(model, (".onnx",)) is None:
            return Unsupported(f"no .onnx file among model.files (model format {model.format!r})")
        return list(requested) or [FrameworkConfig(self.name, {})]

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition."""
        path = self.model_file(ctx, (".onnx",))
        return [runner_invocation(ctx, backend=self.backend, model_path=path,
                                  options=ctx.config.options)]
