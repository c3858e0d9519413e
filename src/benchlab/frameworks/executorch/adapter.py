"""The ``executorch`` framework: ``.pte`` programs in the ExecuTorch runtime, via the runner.

Options:

``delegate``
    ``xnnpack`` (the file keyed ``pte_xnnpack``, lowered to the XNNPACK delegate) or
    ``portable`` (``pte_portable``: ExecuTorch's portable reference kernels, no delegate).
``precision``
    ``fp32`` (default) or ``int8`` (``pte_<delegate>_int8``, e.g. the zoo's
    ``pte_xnnpack_int8``).
``file``
    An explicit model file key; wins over the delegate/precision zoo keys.
``threads``
    The size of ExecuTorch's shared threadpool, which XNNPACK runs on (default: the test's
    ``threads``; unset leaves the runtime's own choice, one thread per core).
``method``
    The program's method to run (default ``forward``).
``runner``
    ``python`` (ExecuTorch's Python runtime, in benchlab's runner), ``native`` (benchlab's own
    C++ runner over the runtime libraries of ExecuTorch's 1.5 wheel, built for the target's
    CPU, bundled with glibc on a phone: :mod:`benchlab.frameworks.executorch.native`) or
    ``auto`` (default: ``python`` where the target has Python, ``native`` where it has
    none). ``binary=`` runs a user's own ``executor_runner`` instead.

A delegate or int8 request is strict: the file it names must exist, so an int8 configuration
never quietly measures the fp32 program. The adapter never imports ExecuTorch;
:mod:`benchlab.frameworks.executorch.backend` does, in the runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlab.frameworks.base import (
    Invocation,
    JobContext,
    KeptFiles,
    RunnerFramework,
    Staging,
    Unsupported,
    runner_invocation,
)
from benchlab.frameworks.common import (
    file_keys_with_suffix,
    is_generative,
    key_precision,
    select_file_key,
)
from benchlab.frameworks.executorch.native import (
    RUNNERS,
    is_native_output,
    kept_native_files,
    native_invocation,
    parse_native_output,
    stage_native_files,
    uses_native_runner,
)
from benchlab.frameworks.native import executor_runner_argv, parse_executor_runner
from benchlab.frameworks.options import (
    FILE,
    NATIVE_TOOL_OPTIONS,
    THREADS,
    FrameworkOption,
    precision_option,
)
from benchlab.protocol.lines import ParsedOutput
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult

__all__ = [
    "DELEGATES",
    "PRECISIONS",
    "SUFFIXES",
    "ZOO_CONFIGS",
    "ExecuTorchFramework",
    "resolved_variant",
    "select_pte_file",
    "zoo_key",
]

SUFFIXES = (".pte",)
DELEGATES = ("xnnpack", "portable")
PRECISIONS = ("fp32", "int8")
#: The zoo's ExecuTorch file keys and the configuration that runs each, in default order.
ZOO_CONFIGS: dict[str, dict[str, str]] = {
    "pte_xnnpack": {"delegate": "xnnpack"},
    "pte_xnnpack_int8": {"delegate": "xnnpack", "precision": "int8"},
    "pte_portable": {"delegate": "portable"},
}


def zoo_key(delegate: str, precision: str) -> str:
    """The zoo's file key of a delegate/precision pair (``pte_xnnpack_int8``)."""
    return f"pte_{delegate}" + ("_int8" if precision == "int8" else "")


def select_pte_file(model: ModelDef, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The model file key a configuration runs, as ``(key, None)`` or ``(None, why not)``.

    ``file=KEY`` wins. A ``delegate`` or ``precision=int8`` names one zoo key, which must
    exist. Otherwise ``pte_xnnpack``, else the first ``.pte`` file (with ``precision=fp32``,
    the first whose key does not say int8).
    """
    delegate = options.get("delegate")
    precision = options.get("precision")
    if delegate is not None and delegate not in DELEGATES:
        return None, f"executorch delegate must be one of {', '.join(DELEGATES)}, not {delegate!r}"
    if precision is not None and precision not in PRECISIONS:
        return None, (f"executorch precision must be one of {', '.join(PRECISIONS)}, "
                      f"not {precision!r}")
    if "file" in options:
        return select_file_key(model, options, preferred=None, suffixes=SUFFIXES)
    keys = file_keys_with_suffix(model, SUFFIXES)
    if not keys:
        return None, f"no .pte file among model.files (model format {model.format!r})"
    if delegate is not None or precision == "int8":
        wanted = zoo_key(delegate or "xnnpack", precision or "fp32")
        return select_file_key(model, options, preferred=wanted, suffixes=SUFFIXES, strict=True)
    candidates = [k for k in keys if key_precision(k) == "fp32"] if precision == "fp32" else keys
    if not candidates:
        return None, "precision=fp32 asked, but every .pte file is keyed as int8"
    preferred = "pte_xnnpack" if "pte_xnnpack" in candidates else candidates[0]
    return select_file_key(model, options, preferred=preferred, suffixes=SUFFIXES, strict=True)


def resolved_variant(key: str, options: Mapping[str, Any]) -> dict[str, str]:
    """The delegate and precision a configuration runs: as asked, else as its file key says.

    A file under a non-zoo key has no known delegate (it is whatever it was lowered to), so
    none is claimed for it.
    """
    known = ZOO_CONFIGS.get(key, {})
    out = {"precision": str(options.get("precision") or known.get("precision")
                            or key_precision(key))}
    delegate = options.get("delegate") or known.get("delegate")
    if delegate:
        out["delegate"] = str(delegate)
    return out


class ExecuTorchFramework(RunnerFramework):
    """ExecuTorch's Python runtime; see the module docstring for its options."""

    name = "executorch"
    backend = "benchlab.frameworks.executorch.backend:ExecuTorchBackend"
    requires = ("executorch", "executorch", "executorch")
    native_tool = "executor_runner"
    native_parser = staticmethod(parse_executor_runner)
    # Text generators: the zoo's decoder program, its key/value cache inside (docs/generative.md).
    generative_backend = "benchlab.frameworks.executorch.generative:ExecuTorchDecoder"
    generative_file = "decoder_pte"
    #: fp32, and ExecuTorch's Llama export's 8-bit dynamic activations, 4-bit weights.
    generative_precisions = {"fp32": "decoder_pte", "8da4w": "decoder_pte_8da4w"}
    generative_options = frozenset({"threads", "precision"})
    declared_options = (
        FrameworkOption("delegate", str, "which program: pte_xnnpack (lowered to XNNPACK) or "
                        "pte_portable (the portable kernels); the file must exist (default: "
                        "pte_xnnpack, else the first .pte)", choices=DELEGATES, bare=True),
        precision_option((*PRECISIONS, "8da4w"),
                         "int8 runs pte_<delegate>_int8; a text generator runs fp32 or 8da4w "
                         "(8-bit dynamic activations, 4-bit weights)"),
        FILE,
        THREADS,
        FrameworkOption("method", str, "the program's method to run", default="forward"),
        FrameworkOption("runner", str, "python: ExecuTorch's Python runtime; native: "
                        "benchlab's runner over ExecuTorch 1.5's libraries, built for the "
                        "target's CPU; auto: python where the target has Python, else native",
                        default="auto", choices=RUNNERS),
        *NATIVE_TOOL_OPTIONS,
    )

    def why_not_generative(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """A known precision, then the base checks (its program present)."""
        precision = str(options.get("precision", "fp32"))
        if precision not in self.generative_precisions:
            return (f"executorch generates at precision "
                    f"{' or '.join(self.generative_precisions)}, not {precision!r}")
        return super().why_not_generative(model, options)

    def why_not_without_python(self, model: ModelDef,
                               options: Mapping[str, Any]) -> str | None:
        """Forward passes run through benchlab's runner (or a given ``executor_runner``);
        text generation and ``runner=python`` need the target's Python."""
        if options.get("binary"):
            return None
        if is_generative(model):
            return ("executorch generates text in benchlab's Python runner only (benchlab's "
                    "ExecuTorch runner runs forward passes), and the target has no Python")
        if str(options.get("runner", "auto")) == "python":
            return ("executorch: runner=python runs ExecuTorch's Python runtime, and the "
                    "target has no Python (runner=auto or native runs benchlab's runner)")
        return None

    def defaults(self, model: ModelDef) -> list[FrameworkConfig] | Unsupported:
        """One configuration per zoo ``.pte`` file present (else ``{}``)."""
        keys = file_keys_with_suffix(model, SUFFIXES)
        if not keys:
            return Unsupported(f"no .pte file among model.files (model format {model.format!r})")
        return [FrameworkConfig(self.name, dict(options))
                for key, options in ZOO_CONFIGS.items() if key in keys] or [
                    FrameworkConfig(self.name, {})]

    def why_not(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """The reason :func:`select_pte_file` finds no file for ``options``."""
        return select_pte_file(model, options)[1]

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition, told the delegate/precision of its file."""
        if ctx.test.generate is not None:
            return [self.generative_invocation(ctx)]
        options = ctx.config.options
        key, path = self.chosen_file(ctx, select_pte_file)
        if uses_native_runner(ctx.python, options):
            return [native_invocation(self, ctx, path, resolved_variant(key, options))]
        binary = self.native_binary(ctx)
        if binary is not None:
            return [self.native_invocation(ctx, executor_runner_argv(
                binary, path, iterations=ctx.test.iter,
                threads=options.get("threads", ctx.test.threads),
                extra=self.native_flags(ctx),
            ))]
        runner_options = {**options, **resolved_variant(key, options)}
        return [runner_invocation(ctx, backend=self.backend, model_path=path,
                                  options=runner_options)]

    def device_files(self, staging: Staging) -> dict[str, Path]:
        """With ``runner=native``: benchlab's runner for the target's CPU, its libraries and
        the reference's inputs (:func:`stage_native_files`)."""
        return stage_native_files(staging)

    def runs_native_runner(self, python: str, options: Mapping[str, Any]) -> bool:
        """``runner=native``, or ``auto`` where the target has no Python."""
        return uses_native_runner(python, options)

    def kept_files(self, staging: Staging) -> KeptFiles | None:
        """On a phone: benchlab's runner bundled with its libraries and glibc, kept there
        between jobs (:func:`kept_native_files`)."""
        return kept_native_files(staging)

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """benchlab's native runner's lines and files; else as any runner framework."""
        if is_native_output(results):
            return parse_native_output(results)
        return super().parse(results)
