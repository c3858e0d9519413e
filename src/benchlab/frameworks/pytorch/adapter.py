"""The ``pytorch`` framework: eager, TorchScript, torch.export, AOTInductor and torch.compile.

Options (all optional):

``mode``
    ``eager`` (builds ``model.entry``), ``torchscript`` (a ``.pt``/``.pth``/``.ptl`` file),
    ``export`` (a ``torch.export.save`` ``.pt2``, keyed ``pt2``), ``aoti`` (an AOTInductor
    package, keyed ``aoti``) or ``compile`` (``model.entry`` wrapped in ``torch.compile``).
    Without a request every mode the model's files allow is measured, except ``compile``:
    a cold compile costs 15–50 s per process, so it runs only when asked for.
``precision``
    ``fp32`` (the default) or ``bf16`` (``torch.autocast`` to bfloat16 around each call);
    eager and compile modes only.
``backend`` / ``compile_mode``
    ``torch.compile``'s ``backend`` (default ``inductor``) and ``mode`` (default none);
    ``compile_mode`` because ``mode`` already picks benchlab's pytorch mode.
``file``
    Which model file a file-based mode runs (a ``model.files`` key).

This module never imports torch; :mod:`benchlab.frameworks.pytorch.backend` does, in the
runner process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlab.frameworks.base import (
    Invocation,
    JobContext,
    RunnerFramework,
    Unsupported,
    runner_invocation,
)
from benchlab.frameworks.common import file_keys_with_suffix, select_file_key
from benchlab.frameworks.options import FILE, THREADS, FrameworkOption, precision_option
from benchlab.frameworks.pytorch.options import DEFAULT_MODES, ENTRY_MODES, MODES, PRECISIONS
from benchlab.spec.types import FrameworkConfig, ModelDef

__all__ = ["MODES", "PRECISIONS", "PyTorchFramework", "model_file_key"]

TORCHSCRIPT_SUFFIXES = (".pt", ".pth", ".ptl", ".torchscript")
PT2_SUFFIXES = (".pt2",)
#: The zoo's file keys (see ``benchlab.exporting.formats.FORMAT_FILES``).
PT2_KEY, AOTI_KEY = "pt2", "aoti"


def _name(model: ModelDef, key: str) -> str:
    ref = model.files[key]
    return (ref.filename or ref.location).lower()


def model_file_key(
    model: ModelDef, mode: str, options: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """``(key, None)`` of the file a file-based ``mode`` runs, or ``(None, why not)``."""
    if mode == "torchscript":
        key, why = select_file_key(model, options, preferred=None, suffixes=TORCHSCRIPT_SUFFIXES)
        if key is None and "file" not in options:
            why = f"no TorchScript file ({'/'.join(TORCHSCRIPT_SUFFIXES)}) among model.files"
        return key, why
    if mode == "aoti":
        # An AOTInductor package is a .pt2 too; only its key (or file=) tells it apart.
        key, why = select_file_key(model, options, preferred=AOTI_KEY, suffixes=(), strict=True)
        return key, None if key else (
            f"aoti mode needs an AOTInductor package: {why}; make one with "
            "`benchlab zoo export --formats aoti`"
        )
    if "file" in options or PT2_KEY in model.files:
        key, why = select_file_key(model, options, preferred=PT2_KEY, suffixes=PT2_SUFFIXES)
        return key, why
    # Any other .pt2, but never an AOTInductor package (the zoo's NAME.aoti.pt2), which
    # torch.export.load cannot read.
    keys = [
        k for k in file_keys_with_suffix(model, PT2_SUFFIXES)
        if k != AOTI_KEY and not _name(model, k).endswith(".aoti.pt2")
    ]
    if keys:
        return keys[0], None
    return None, (
        f"export mode needs a torch.export .pt2 file (model.files key {PT2_KEY!r}); model.files: "
        f"{', '.join(model.files) or 'none'}"
    )


class PyTorchFramework(RunnerFramework):
    """Runs a model in PyTorch in one of :data:`MODES` (see the module docstring)."""

    name = "pytorch"
    backend = "benchlab.frameworks.pytorch.backend:PyTorchBackend"
    requires = ("torch", "torch", None)
    generative_backend = "benchlab.frameworks.pytorch.generative:TorchDecoder"
    generative_options = frozenset({"threads", "mode"})
    declared_options = (
        FrameworkOption("mode", str, "eager and compile build model.entry (compile wraps it in "
                        "torch.compile); torchscript, export and aoti run a file. Without "
                        "options every mode the model's files allow runs, but compile",
                        default="eager", choices=MODES, bare=True),
        precision_option(PRECISIONS, "bf16: torch.autocast to bfloat16 around each call "
                         "(eager and compile modes)"),
        FrameworkOption("backend", str, "torch.compile's backend (compile mode)",
                        default="inductor"),
        FrameworkOption("compile_mode", str, "torch.compile's mode (compile mode; default: "
                        "torch's own)"),
        THREADS,
        FILE,
    )

    def why_not(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        mode = str(options.get("mode", "eager"))
        if mode not in MODES:
            return f"unknown pytorch mode {mode!r}; choose one of {', '.join(MODES)}"
        precision = str(options.get("precision", "fp32"))
        if precision not in PRECISIONS:
            return f"pytorch precision {precision!r} is not one of {', '.join(PRECISIONS)}"
        if precision != "fp32" and mode not in ENTRY_MODES:
            return f"precision={precision} applies to eager and compile modes, not {mode!r}"
        if mode in ENTRY_MODES:
            if not model.entry:
                return (f"{mode} mode needs model.entry (a 'pkg.module:factory' that builds "
                        "the model)")
            return None
        return model_file_key(model, mode, options)[1]

    def defaults(self, model: ModelDef) -> list[FrameworkConfig] | Unsupported:
        """Every default mode the model supports."""
        return [FrameworkConfig(self.name, {"mode": m}) for m in DEFAULT_MODES
                if self.why_not(model, {"mode": m}) is None] or Unsupported(
            "pytorch needs model.entry (eager, compile), a TorchScript file, a torch.export "
            f".pt2 or an AOTInductor package; this model has format {model.format!r}")

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition; entry modes pass no model file."""
        if ctx.test.generate is not None:
            return [self.generative_invocation(ctx)]
        options = ctx.config.options
        mode = str(options.get("mode", "eager"))
        path = None
        if mode not in ENTRY_MODES:
            key, why = model_file_key(ctx.spec.model, mode, options)
            if key is None:
                raise ValueError(why)
            path = ctx.files.get(f"files.{key}")
        return [runner_invocation(ctx, backend=self.backend, model_path=path, options=options)]
