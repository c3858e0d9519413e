"""The ``openvino`` framework: OpenVINO IR (``.xml`` + ``.bin``) or ``.onnx`` models on the CPU.

Options (all optional):

``precision``
    ``f32`` (the default), ``bf16`` or ``f16``: OpenVINO's ``INFERENCE_PRECISION_HINT``. It is
    always set explicitly, because OpenVINO's CPU default is ``bf16`` on any CPU with bf16
    instructions (AVX512-BF16, AMX), which would make a "default" OpenVINO run incomparable
    with every fp32 runtime. The runner reports the precision the compiled model actually
    uses, which differs from the request when the CPU lacks it (``f16`` becomes ``bf16`` or
    ``f32`` on most x86 CPUs).
``hint``
    ``latency`` (the default: one request at a time) or ``throughput`` (as many requests in
    flight as OpenVINO recommends; one timed call runs all of them).
``threads`` / ``streams``
    ``INFERENCE_NUM_THREADS`` (default: the test's ``threads``) and ``NUM_STREAMS``.
``file``
    Which model file to run (a ``model.files`` key); by default the IR keyed ``openvino``, then
    any ``.xml``, then the ``.onnx`` keyed ``onnx``, then any ``.onnx``.
``binary``
    Run OpenVINO's ``benchmark_app`` (a host path, pushed to the target, or a path on the
    target) instead of benchlab's runner: one stream, one synchronous request, ``-niter`` the
    test's ``iter``, the precision above. With ``profile_ops`` its per-layer counters become
    per-layer-type times. ``flags`` adds the tool's own flags, space-separated.

This module never imports openvino; :mod:`benchlab.frameworks.openvino.backend` does, in the
runner process.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from benchlab.frameworks.base import (
    Invocation,
    JobContext,
    RunnerFramework,
    Unsupported,
    runner_invocation,
)
from benchlab.frameworks.native.benchmark_app import benchmark_app_command, parse_benchmark_app
from benchlab.frameworks.native.common import count_flag
from benchlab.frameworks.common import (
    DECODER_ONNX_INT8_KEY,
    DECODER_ONNX_KEY,
    file_key_with_suffix,
    file_keys_with_suffix,
    select_file_key,
)
from benchlab.frameworks.openvino.options import HINTS, PRECISIONS, canonical_precision
from benchlab.frameworks.options import (
    FILE,
    NATIVE_TOOL_OPTIONS,
    THREADS,
    FrameworkOption,
    precision_option,
)
from benchlab.spec.types import FrameworkConfig, ModelDef

__all__ = [
    "HINTS",
    "PRECISIONS",
    "OpenVinoFramework",
    "canonical_precision",
    "model_files",
]

IR_SUFFIXES = (".xml",)
WEIGHT_SUFFIXES = (".bin",)
ONNX_SUFFIXES = (".onnx",)
#: The zoo's file keys (see ``benchlab.exporting.formats.FORMAT_FILES``).
IR_KEY, WEIGHTS_KEY, ONNX_KEY = "openvino", "openvino_bin", "onnx"


def _stem(model: ModelDef, key: str) -> str:
    ref = model.files[key]
    return PurePosixPath(ref.filename or ref.location).stem


def _weights_key(model: ModelDef, xml_key: str) -> str | None:
    """The ``.bin`` that belongs to the IR ``xml_key``.

    The zoo keys it ``<key>_bin``; a hand-written spec may instead give a ``.bin`` with the
    same stem, or just one ``.bin``. Files are pushed one key at a time into separate
    directories, so OpenVINO's "same name next to the .xml" rule cannot be relied upon.
    """
    if f"{xml_key}_bin" in model.files:
        return f"{xml_key}_bin"
    bins = file_keys_with_suffix(model, WEIGHT_SUFFIXES)
    same_stem = [k for k in bins if _stem(model, k) == _stem(model, xml_key)]
    if same_stem:
        return same_stem[0]
    return bins[0] if len(bins) == 1 else None


def model_files(
    model: ModelDef, options: Mapping[str, Any]
) -> tuple[str, str | None, str] | Unsupported:
    """``(model key, weights key or None, "ir" | "onnx")`` for a configuration, or why not."""
    if "file" in options:
        key, why = select_file_key(model, options, preferred=None, suffixes=IR_SUFFIXES)
    elif file_key_with_suffix(model, IR_SUFFIXES) is not None:
        key, why = select_file_key(model, options, preferred=IR_KEY, suffixes=IR_SUFFIXES)
    else:
        key, why = select_file_key(model, options, preferred=ONNX_KEY, suffixes=ONNX_SUFFIXES)
    if key is None:
        return Unsupported(
            "openvino needs an OpenVINO IR (.xml + .bin) or an .onnx file among model.files "
            f"(model format {model.format!r}): {why}"
        )
    ref = model.files[key]
    name = (ref.filename or ref.location).lower()
    if name.endswith(ONNX_SUFFIXES):
        return key, None, "onnx"
    if not name.endswith(IR_SUFFIXES):
        return Unsupported(f"file={key!r} is neither an OpenVINO IR (.xml) nor an .onnx file")
    weights = _weights_key(model, key)
    if weights is None:
        return Unsupported(
            f"the OpenVINO IR {key!r} has no weights: add its .bin under model.files key "
            f"'{key}_bin'"
        )
    return key, weights, "ir"


def _option_problem(options: Mapping[str, Any]) -> str | None:
    precision = options.get("precision", "f32")
    if canonical_precision(precision) is None:
        return f"openvino precision {precision!r} is not one of f32, bf16, f16"
    hint = str(options.get("hint", "latency")).lower()
    if hint not in HINTS:
        return f"openvino hint {options.get('hint')!r} is not one of {', '.join(HINTS)}"
    for name in ("threads", "streams"):
        value = options.get(name)
        if value is None or (name == "streams" and str(value).lower() == "auto"):
            continue
        try:
            count_flag(f"openvino {name}", value, 1)
        except ValueError as exc:
            return str(exc)
    return None


class OpenVinoFramework(RunnerFramework):
    """OpenVINO's CPU plugin, measured by benchlab's runner (see the module docstring)."""

    name = "openvino"
    backend = "benchlab.frameworks.openvino.backend:OpenVinoBackend"
    requires = ("openvino", "openvino", "openvino")
    native_tool = "benchmark_app"
    native_parser = staticmethod(parse_benchmark_app)
    generative_backend = "benchlab.frameworks.openvino.generative:OpenVinoDecoder"
    generative_file = DECODER_ONNX_KEY
    generative_options = frozenset({"threads", "precision"})
    # int8 runs the int8 ONNX graph (its weights int8, OpenVINO's arithmetic in fp32 around
    # them); bf16/fp16 are inference precisions of the fp32 graph.
    generative_precisions = {"int8": DECODER_ONNX_INT8_KEY}
    declared_options = (
        precision_option((*PRECISIONS, *generative_precisions), "OpenVINO's "
                         "INFERENCE_PRECISION_HINT, always set (the CPU plugin's own default is "
                         "bf16 wherever the CPU has it); int8: a text generator's int8 graph"),
        FrameworkOption("hint", str, "latency: one request at a time; throughput: as many "
                        "requests in flight as OpenVINO recommends, one timed call runs them "
                        "all", default=HINTS[0], choices=HINTS),
        THREADS,
        FrameworkOption("streams", int, "NUM_STREAMS (default: OpenVINO's for the hint)",
                        minimum=1, words=("auto",)),
        FILE,
        *NATIVE_TOOL_OPTIONS,
    )

    def defaults(self, model: ModelDef) -> list[FrameworkConfig] | Unsupported:
        """fp32 at the latency hint; bf16 and throughput are variants to ask for."""
        return [FrameworkConfig(self.name, {"precision": "f32"})]

    def why_not(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """No IR or ONNX file for ``options``, or an option out of range."""
        files = model_files(model, options)
        return files.reason if isinstance(files, Unsupported) else _option_problem(options)

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """One runner process per repetition; IR weights travel as the ``weights`` extra file.

        With ``binary=`` OpenVINO's ``benchmark_app`` runs instead, latency-style."""
        if ctx.test.generate is not None:
            return [self.generative_invocation(ctx)]
        files = model_files(ctx.spec.model, ctx.config.options)
        if isinstance(files, Unsupported):
            raise ValueError(files.reason)
        key, weights, _ = files
        weights_path = ctx.files.get(f"files.{weights}") if weights else None
        binary = self.native_binary(ctx)
        if binary is not None:
            options, test = ctx.config.options, ctx.test
            command = benchmark_app_command(
                binary, str(ctx.files.get(f"files.{key}")), weights_path, ctx.workdir,
                threads=options.get("threads", test.threads), iterations=test.iter,
                precision=canonical_precision(options.get("precision", "f32")) or "f32",
                shapes=[(d.name, d.shape) for d in test.inputs], profile_ops=test.profile_ops,
                extra=self.native_flags(ctx))
            return [self.native_invocation(ctx, command.argv, before=command.before,
                                           after=command.after)]
        extra = {"weights": weights_path} if weights_path else {}
        return [
            runner_invocation(
                ctx,
                backend=self.backend,
                model_path=ctx.files.get(f"files.{key}"),
                options=ctx.config.options,
                extra_files=extra,
            )
        ]
