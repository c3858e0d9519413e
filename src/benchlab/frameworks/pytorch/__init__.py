"""The ``pytorch`` framework: eager modules and TorchScript files, measured by the runner."""

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

__all__ = ["PyTorchFramework"]

TORCHSCRIPT_SUFFIXES = (".pt", ".pth", ".ptl", ".torchscript")
MODES = ("eager", "torchscript")


class PyTorchFramework(RunnerFramework):
    """Runs a model in PyTorch: ``mode`` is ``eager`` (needs ``model.entry``) or ``torchscript``."""

    name = "pytorch"
    backend = "benchlab.frameworks.pytorch.backend:PyTorchBackend"

    def availability(self) -> Availability:
        """torch is importable (not imported)."""
        return distribution_availability("torch", "torch")

    def _why_not(self, model: ModelDef, mode: str) -> str | None:
        if mode not in MODES:
            return f"unknown pytorch mode {mode!r}; choose one of {', '.join(MODES)}"
        if mode == "eager" and not model.entry:
            return "eager mode needs model.entry (a 'pkg.module:factory' that builds the model)"
        if mode == "torchscript" and file_key_with_suffix(model, TORCHSCRIPT_SUFFIXES) is None:
            return f"no TorchScript file ({'/'.join(TORCHSCRIPT_SUFFIXES)}) among model.files"
        return None

    def configurations(
        self, model: ModelDef, requested: Sequence[FrameworkConfig]
    ) -> list[FrameworkConfig] | Unsupported:
        """Every mode the model supports by default, or the modes requested."""
        if requested:
            configs = list(requested)
        else:
            configs = [
                FrameworkConfig(self.name, {"mode": m})
                for m in MODES
                if self._why_not(model, m) is None
            ]
            if not configs:
                return Unsupported(
                    "pytorch needs model.entry (eager) or a TorchScript file; this model has "
                    f"format {model.format!r}"
                )
        for config in configs:
            reason = self._why_not(model, str(config.options.get("mode", "eager")))
            if reason:
                return Unsupported(reason)
        return configs

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition."""
        mode = str(ctx.config.options.get("mode", "eager"))
        path = self.model_file(ctx, TORCHSCRIPT_SUFFIXES) if mode == "torchscript" else None
        return [
            runner_invocation(ctx, backend=self.backend, model_path=path, options=ctx.config.options)
        ]
