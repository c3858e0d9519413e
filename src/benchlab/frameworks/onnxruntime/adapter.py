"""The ``onnxruntime`` framework: ``.onnx`` models in an ONNX Runtime session, via the runner.

``runner=python`` (and ``auto``, the default, on a target with Python) runs the Python binding
in benchlab's runner; ``runner=native`` (and ``auto`` on a target without Python, a phone)
runs benchlab's own C runner over the C library of ONNX Runtime's wheel, built for the
target's CPU, bundled with glibc on a phone (:mod:`benchlab.frameworks.onnxruntime.native`);
``binary=`` runs a user's ``onnxruntime_perf_test``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchlab.errors import UsageError
from benchlab.frameworks.base import (
    Invocation,
    JobContext,
    RunnerFramework,
    Unsupported,
    runner_invocation,
)
from benchlab.frameworks.common import (
    DECODER_ONNX_INT8_KEY,
    DECODER_ONNX_KEY,
    file_key_with_suffix,
    is_generative,
    select_file_key,
)
from benchlab.frameworks.native import parse_perf_test, perf_test_argv
from benchlab.frameworks.onnxruntime.native import (
    C_RUNNER,
    RUNNERS,
    is_native_output,
    native_invocation,
    parse_native_output,
)
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

__all__ = ["FP32_KEY", "INT8_KEY", "OnnxRuntimeFramework"]

#: The zoo's keys of the fp32 ONNX file and of its int8-quantized copy.
FP32_KEY, INT8_KEY = "onnx", "onnx_int8"


class OnnxRuntimeFramework(RunnerFramework):
    """An ONNX Runtime session in benchlab's runner, or ``onnxruntime_perf_test`` with
    ``binary=``; its options are ``declared_options`` (``benchlab frameworks onnxruntime``)."""

    name = "onnxruntime"
    backend = "benchlab.frameworks.onnxruntime.backend:OnnxRuntimeBackend"
    requires = ("onnxruntime", "onnxruntime", None)
    native_tool = "onnxruntime_perf_test"
    own_runner = C_RUNNER
    native_parser = staticmethod(parse_perf_test)
    # Two sessions with their own pools in one process run at about twice their solo
    # latency on 2 CPUs: the idle session's threads spin while the other runs. One global
    # pool serves both and leaves each at its solo latency (docs/detector.md, "Fidelity").
    shared_process_options = {"thread_pool": "global"}
    generative_backend = "benchlab.frameworks.onnxruntime.generative:OnnxRuntimeDecoder"
    generative_file = DECODER_ONNX_KEY
    generative_options = frozenset({"threads", "intra_op_threads", "graph_optimization_level",
                                    "precision"})
    generative_precisions = {"fp32": DECODER_ONNX_KEY, "int8": DECODER_ONNX_INT8_KEY}
    declared_options = (
        FrameworkOption("providers", str, "execution providers in order (A+B on the command "
                        "line); one not available here fails the job rather than falling "
                        "back to the CPU", default="CPUExecutionProvider", several=True),
        FrameworkOption("graph_optimization_level", str, "how far ONNX Runtime rewrites the "
                        "graph at load", default="all",
                        choices=("disable", "basic", "extended", "all")),
        FrameworkOption("intra_op_threads", int, "the intra-op pool's threads (default: "
                        "threads, else ONNX Runtime's own choice)", minimum=1),
        FrameworkOption("inter_op_threads", int, "the inter-op pool's threads", default=1,
                        minimum=1),
        FrameworkOption("thread_pool", str, "session: each session its own intra-op pool; "
                        "global: one pool per process, shared by every session (how compare "
                        "runs two sides in one process)", default="session",
                        choices=("session", "global")),
        FrameworkOption("spinning", bool, "whether idle intra-op threads spin "
                        "(session.intra_op.allow_spinning)", default=True),
        precision_option(("fp32", "int8"), f"which .onnx file: the {FP32_KEY!r} one, or the "
                         f"int8 {INT8_KEY!r} one, which must exist"),
        FILE,
        THREADS,
        FrameworkOption("execution_provider", str, "onnxruntime_perf_test's -e (with binary=)"),
        FrameworkOption("runner", str, "python: the Python binding; native: benchlab's C "
                        "runner over the wheel's C library, built for the target's CPU (the "
                        "CPU provider); auto: python where the target has Python, else native",
                        default="auto", choices=RUNNERS),
        *NATIVE_TOOL_OPTIONS,
    )


    def defaults(self, model: ModelDef) -> list[FrameworkConfig] | Unsupported:
        """The CPU provider with full graph optimisation, plus the int8 file when there is one
        (the zoo's ``onnx_int8``)."""
        return [FrameworkConfig(self.name, {})] + (
            [FrameworkConfig(self.name, {"precision": "int8"})]
            if INT8_KEY in model.files else [])

    def why_not(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """No ``.onnx`` file at all, or none for ``options``."""
        if file_key_with_suffix(model, (".onnx",)) is None:
            return f"no .onnx file among model.files (model format {model.format!r})"
        return _file_key(model, options)[1]

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition."""
        if ctx.test.generate is not None:
            return [self.generative_invocation(ctx)]
        key, why = _file_key(ctx.spec.model, ctx.config.options)
        if key is None:
            raise UsageError(why or "no .onnx file")
        if C_RUNNER.uses(ctx.python, ctx.config.options):
            precision = "int8" if key == INT8_KEY else str(
                ctx.config.options.get("precision", "fp32"))
            return [native_invocation(self, ctx, ctx.files[f"files.{key}"], precision)]
        binary = self.native_binary(ctx)
        if binary is not None:
            options = ctx.config.options
            return [self.native_invocation(ctx, perf_test_argv(
                binary, ctx.files[f"files.{key}"], iterations=ctx.test.iter,
                threads=options.get("threads", ctx.test.threads),
                execution_provider=options.get("execution_provider"),
                extra=self.native_flags(ctx),
            ))]
        precision = "int8" if key == INT8_KEY else str(ctx.config.options.get("precision", "fp32"))
        # The layer table of another file (the int8 one, say) compares with the fp32 model;
        # the fp32 file itself with its own unoptimised graph (the backend's default).
        fp32 = ctx.files.get(f"files.{FP32_KEY}") if key != FP32_KEY else None
        return [runner_invocation(ctx, backend=self.backend, model_path=ctx.files[f"files.{key}"],
                                  options={**ctx.config.options, "precision": precision},
                                  layer_reference=fp32)]

    def why_not_without_python(self, model: ModelDef,
                               options: Mapping[str, Any]) -> str | None:
        """Forward passes run through benchlab's runner (or a given
        ``onnxruntime_perf_test``); text generation, ``runner=python`` and options the runner
        cannot honour need the target's Python."""
        if options.get("binary"):
            return None
        if is_generative(model):
            return ("onnxruntime generates text in benchlab's Python runner only (benchlab's "
                    "ONNX Runtime runner runs forward passes), and the target has no Python")
        return C_RUNNER.why_not_without_python(options)

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """benchlab's native runner's lines and files; else as any runner framework."""
        if is_native_output(results):
            return parse_native_output(results)
        return super().parse(results)


def _file_key(model: ModelDef, options: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``precision=int8`` must run the int8 file, never silently the fp32 one."""
    precision = str(options.get("precision", "fp32"))
    if precision not in ("fp32", "int8"):
        return None, f"onnxruntime precision must be fp32 or int8, not {precision!r}"
    if precision == "int8":
        return select_file_key(model, options, preferred=INT8_KEY, suffixes=(".onnx",),
                               strict=True)
    return select_file_key(model, options, preferred=FP32_KEY, suffixes=(".onnx",))
