"""The ``tflite`` framework: ``.tflite`` flatbuffers in the LiteRT interpreter, via the runner.

Options:

``threads``
    The interpreter's ``num_threads`` (default: the test's ``threads``; unset leaves LiteRT's
    own default, under which XNNPACK runs single-threaded).
``xnnpack``
    ``true`` applies LiteRT's default XNNPACK delegate; ``false`` runs the built-in kernels
    only (``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES``). Unset (the default): XNNPACK
    where the library has it, which the Python binding's and LiteRT-LM's do; Debian's
    TensorFlow Lite, which benchlab's runner loads on an ARMv8.0 phone, has none (there
    ``true`` is a "not run" line).
``precision``
    ``fp32`` (default) or ``int8``: the file keyed ``tflite_int8``, required to exist.
``file``
    An explicit model file key; wins over the precision's zoo key.
``runner``
    ``python``: the Python binding (``ai-edge-litert``); ``native``: benchlab's C runner over
    the TFLite C API of LiteRT-LM's library (on an ARM CPU without ``lrcpc``, of Debian's
    TensorFlow Lite), built for the target's CPU
    (:mod:`benchlab.frameworks.tflite.native`), which also gives per-operator times; ``auto``
    (default): python where the target has Python, else native (a phone).
``binary``
    Run a native LiteRT tool instead of benchlab's runner: ``benchmark_model``, or
    ``litert-benchmark`` (the CompiledModel benchmark ai-edge-litert installs; told apart by
    its name). A host path is pushed to the target; a path on the
    target is used as is. ``flags`` adds the tool's own flags, space-separated
    (``flags=--use_gpu=true``).

The adapter never imports LiteRT; :mod:`benchlab.frameworks.tflite.backend` does, in the runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchlab.frameworks.base import (
    Invocation,
    JobContext,
    RunnerFramework,
    Unsupported,
    runner_invocation,
    spec_command_invocations,
)
from benchlab.frameworks.common import (
    file_keys_with_suffix,
    is_generative,
    key_precision,
    select_file_key,
)
from benchlab.frameworks.native import benchmark_model_argv, parse_benchmark_model
from benchlab.frameworks.native.litert_benchmark import (
    is_litert_benchmark,
    litert_benchmark_argv,
    parse_litert_benchmark,
)
from benchlab.frameworks.native.own_runners import RUNNERS
from benchlab.frameworks.options import (
    FILE,
    NATIVE_TOOL_OPTIONS,
    THREADS,
    FrameworkOption,
    precision_option,
)
from benchlab.frameworks.tflite.native import (
    C_RUNNER,
    is_native_output,
    native_invocation,
    parse_native_output,
)
from benchlab.protocol.lines import ParsedOutput
from benchlab.spec.types import FrameworkConfig, ModelDef
from benchlab.targets.base import CommandResult

__all__ = [
    "FP32_KEY",
    "INT8_KEY",
    "PRECISIONS",
    "SUFFIXES",
    "TfliteFramework",
    "select_tflite_file",
]

SUFFIXES = (".tflite",)
#: The zoo's file keys: the fp32 conversion and its optional int8 variant.
FP32_KEY = "tflite"
INT8_KEY = "tflite_int8"
PRECISIONS = ("fp32", "int8")


def _precision_of(key: str, options: Mapping[str, Any]) -> str:
    """The precision a configuration runs at: as asked, else what the file key says."""
    asked = options.get("precision")
    if asked is not None:
        return str(asked)
    return key_precision(key)


def select_tflite_file(
    model: ModelDef, options: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """The model file key a configuration runs, as ``(key, None)`` or ``(None, why not)``.

    ``file=KEY`` wins. ``precision=int8`` needs the ``tflite_int8`` file (strict: an int8
    request must never quietly measure the fp32 file). Otherwise the ``tflite`` file, else the
    first ``.tflite`` file; an explicit ``precision=fp32`` never falls back onto the int8 one.
    """
    precision = options.get("precision")
    if precision is not None and precision not in PRECISIONS:
        return None, f"tflite precision must be one of {', '.join(PRECISIONS)}, not {precision!r}"
    if not isinstance(options.get("xnnpack", True), bool):
        return None, f"tflite xnnpack must be true or false, not {options['xnnpack']!r}"
    keys = file_keys_with_suffix(model, SUFFIXES)
    if "file" in options:
        return select_file_key(model, options, preferred=None, suffixes=SUFFIXES)
    if not keys:
        return None, f"no .tflite file among model.files (model format {model.format!r})"
    if precision == "int8":
        return select_file_key(model, options, preferred=INT8_KEY, suffixes=SUFFIXES, strict=True)
    candidates = [k for k in keys if k != INT8_KEY] if precision == "fp32" else keys
    if not candidates:
        return None, f"precision=fp32 asked, but the only .tflite file is the int8 {INT8_KEY!r}"
    preferred = FP32_KEY if FP32_KEY in candidates else candidates[0]
    return select_file_key(model, options, preferred=preferred, suffixes=SUFFIXES, strict=True)


def parse_native(text: str) -> ParsedOutput:
    """A native LiteRT tool's report: ``litert-benchmark``'s results block, else
    ``benchmark_model``'s."""
    if "BENCHMARK RESULTS" in text:
        return parse_litert_benchmark(text)
    return parse_benchmark_model(text)


class TfliteFramework(RunnerFramework):
    """LiteRT (ex TensorFlow Lite) interpreter; see the module docstring for its options."""

    name = "tflite"
    backend = "benchlab.frameworks.tflite.backend:TfliteBackend"
    requires = ("ai_edge_litert", "ai-edge-litert", "tflite")
    native_tool = "benchmark_model"
    own_runner = C_RUNNER
    native_parser = staticmethod(parse_native)
    runs_spec_commands = True
    # Measured 2026-11-25: litert-lm 0.18.1 (LiteRT's LLM runtime) installs from PyPI, but it
    # runs .litertlm bundles, and writing one from the zoo's decoder needs litert-torch's
    # generative converter (the model re-authored with a static cache), which is not built.
    no_generative_reason = ("LiteRT generates through litert-lm and its .litertlm bundles; "
                            "benchlab does not write one from the zoo's decoders yet")
    declared_options = (
        THREADS,
        FrameworkOption("xnnpack", bool, "true applies LiteRT's default XNNPACK delegate; "
                        "false runs the built-in kernels only; unset: XNNPACK where the "
                        "library has it (not Debian's TensorFlow Lite, which an ARMv8.0 "
                        "phone runs)"),
        precision_option(PRECISIONS, f"which .tflite file: fp32, or int8 (the {INT8_KEY!r} "
                         "file, which must exist)"),
        FILE,
        FrameworkOption("runner", str, "python: the Python binding; native: benchlab's C "
                        "runner over the TFLite C API of LiteRT-LM's library, built for the "
                        "target's CPU; auto: python where the target has Python, else native",
                        default="auto", choices=RUNNERS),
        *NATIVE_TOOL_OPTIONS,
    )

    def defaults(self, model: ModelDef) -> list[FrameworkConfig] | Unsupported:
        """The fp32 file, plus the int8 variant when the model has one."""
        keys = file_keys_with_suffix(model, SUFFIXES)
        configs = [FrameworkConfig(self.name, {})] if set(keys) - {INT8_KEY} else []
        if INT8_KEY in keys:
            configs.append(FrameworkConfig(self.name, {"precision": "int8"}))
        return configs or Unsupported(
            f"no .tflite file among model.files (model format {model.format!r})")

    def why_not(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """The reason :func:`select_tflite_file` finds no file for ``options``."""
        return select_tflite_file(model, options)[1]

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition, told the precision of the file it runs; a
        FAI-PEP spec's own ``benchmark_model`` commands, as written, when it has them."""
        if ctx.test.commands:
            return spec_command_invocations(ctx)
        options = ctx.config.options
        key, path = self.chosen_file(ctx, select_tflite_file)
        if C_RUNNER.uses(ctx.python, options):
            return [native_invocation(self, ctx, path, _precision_of(key, options))]
        binary = self.native_binary(ctx)
        if binary is not None:
            test = ctx.test
            if is_litert_benchmark(binary):
                return [self.native_invocation(ctx, litert_benchmark_argv(
                    binary, path, threads=options.get("threads", test.threads),
                    warmup=test.warmup, iterations=test.iter, extra=self.native_flags(ctx),
                ))]
            return [self.native_invocation(ctx, benchmark_model_argv(
                binary, path, threads=options.get("threads", test.threads), warmup=test.warmup,
                iterations=test.iter, min_secs=test.min_time, profile_ops=test.profile_ops,
                extra=self.native_flags(ctx),
            ))]
        runner_options = {**options, "precision": _precision_of(key, options)}
        return [runner_invocation(ctx, backend=self.backend, model_path=path,
                                  options=runner_options)]

    def why_not_without_python(self, model: ModelDef,
                               options: Mapping[str, Any]) -> str | None:
        """Forward passes run through benchlab's runner (or a given ``benchmark_model``);
        ``runner=python`` and options the runner cannot honour need the target's Python."""
        if options.get("binary"):
            return None
        if why := C_RUNNER.why_not_without_python(options):
            return why
        if is_generative(model):  # LiteRT generates in no runner of benchlab's
            return super().why_not_without_python(model, options)
        return None

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """benchlab's native runner's lines and files; else as any runner framework."""
        if is_native_output(results):
            return parse_native_output(results)
        return super().parse(results)
