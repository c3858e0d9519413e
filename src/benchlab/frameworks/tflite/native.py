"""LiteRT through benchlab's own runner (``runner=native``), built for the target's CPU.

The runner (:mod:`benchlab.devicetools.litertrunner`) is compiled against the TFLite C API
of LiteRT-LM's library. On a Linux target (this host, a board) it and that library are
pushed into the job's working folder, where it finds them (``rpath $ORIGIN``); on an Android
phone they go in a bundle with glibc's own loader and libraries, kept on the phone by
content, as the other runners' (:func:`~benchlab.frameworks.native.own_runners.kept_bundle`).
``runner=auto`` (the default) takes this runner where the target has no Python. It prints
the lines of benchlab's other runners, read by :func:`~benchlab.frameworks.native.
own_runners.read_runner_output`; what it adds is read here:

* inputs and outputs: as the ONNX Runtime runner's (every reference set in, every set's
  outputs back, scored against the reference as the Python runner scores them);
* XNNPACK: the runner adds the delegate itself (``xnnpack=true``, the default, as the Python
  backend's default resolver applies it); ``xnnpack=false`` runs the built-in kernels;
* per-operator times: with ``profile_ops`` a second interpreter with a TFLite telemetry
  profiler runs the same iterations; its lines become one row per timed run, an interpreter
  node by its operator (``FULLY_CONNECTED``), an operator XNNPACK ran by XNNPACK's own name
  (``xnnpack: Fully Connected (NC, F32) GEMM``), as ExecuTorch's ETDump rows name them. The
  Python binding has no per-operator profiler: this runner is where LiteRT's come from.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchlab.devicetools.elf import is_android_abi
from benchlab.devicetools.litertrunner import (
    LITERT_LIBRARY,
    LITERT_LM_VERSION,
    LITERT_RUNNER,
    build_litert_runner,
    litert_runner_tool,
)
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, KeptFiles, RunnerFramework, Staging
from benchlab.frameworks.native import executor_runner_argv
from benchlab.frameworks.native.own_runners import (
    MANIFEST,
    OUTPUTS,
    add_operator_rows,
    bundle_argv,
    kept_bundle,
    read_runner_output,
    reference_input_files,
    reference_sets,
    runner_architecture,
    runner_variant,
    score_runner_outputs,
    staged_inputs,
    staged_runner,
    wants_own_runner,
)
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey
from benchlab.targets.base import CommandResult

__all__ = ["BUNDLE_KEY", "LRCPC_MISSING", "NEEDS_LRCPC", "is_native_output", "kept_native_files", "native_invocation",
           "parse_native_output", "profile_rows", "stage_native_files", "uses_native_runner",
           "why_not_native"]

RUNNER_KEY = "native.litert_runner"
LIBRARY_KEY = "native.litert_library"
#: The device folder of the phone's bundle (runner, library, glibc).
BUNDLE_KEY = "kept.litert_bundle"
_INPUT_KEY = "native.litert_input."
PROFILE = "benchlab.litert-profile.tsv"
_BANNER = re.compile(r"^benchlab-litert-runner: TensorFlow Lite (\S+) C API", re.M)
_XNNPACK = re.compile(r"^XNNPACK delegate: (applied|off)", re.M)
_THREADS = re.compile(r"^Setting num_threads to (\d+)", re.M)
_VARIANT = "benchlab-litert-variant: "
#: LiteRT-LM's aarch64 library runs LDAPR (ARMv8.3's load-acquire, FEAT_LRCPC) while it
#: loads, which an ARMv8.0 core (a Cortex-A53) lacks: the runner would die of SIGILL before
#: its first line. On an ARM CPU without it the job ends first, saying so.
LRCPC_MISSING = (
    f"LiteRT-LM's aarch64 library (litert-lm-api {LITERT_LM_VERSION}) uses LDAPR, an ARMv8.3 "
    "instruction (FEAT_LRCPC), and this CPU lacks it (the kernel lists no lrcpc among its "
    "features; a Cortex-A53 is ARMv8.0): LiteRT cannot run here through benchlab's runner "
    "(cores from the Cortex-A55 and A76 on have it)")
NEEDS_LRCPC = ("if grep -q '^Features' /proc/cpuinfo && ! grep -qw lrcpc /proc/cpuinfo; "
               f"then echo {shlex.quote(LRCPC_MISSING)} >&2; exit 1; fi")


def uses_native_runner(python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs benchlab's runner (:func:`~benchlab.frameworks.native.own_runners.
    wants_own_runner`); where the target has Python, ``auto`` runs the Python binding."""
    return wants_own_runner("tflite", python, options)


def why_not_native(options: Mapping[str, Any]) -> str | None:
    """Why the runner cannot honour ``options`` (None: it can)."""
    if options.get("binary") is not None:
        return ("tflite: runner=native runs benchlab's runner; binary= runs your own "
                "benchmark_model: give one of them")
    if options.get("flags"):
        return "tflite: flags= are a native tool's (with binary=); benchlab's runner takes none"
    return None


def _refuse_unsupported(options: Mapping[str, Any]) -> None:
    if why := why_not_native(options):
        raise UsageError(why)


def stage_native_files(staging: Staging) -> dict[str, Path]:
    """The runner built for the target's CPU (from the cache when built before), the
    library it loads, and the reference's inputs as raw files; nothing when the job does not
    run the runner. On a phone the runner and library come in the kept bundle instead."""
    options = staging.config.options
    if not uses_native_runner(staging.python, options):
        return {}
    _refuse_unsupported(options)
    root = device_tools_dir(Path(staging.cache_root))
    files: dict[str, Path] = {}
    if not is_android_abi(staging.abi):
        tools = build_litert_runner(runner_architecture("tflite", staging.abi), root,
                                    progress=staging.progress)
        files = {RUNNER_KEY: tools.program(LITERT_RUNNER),
                 LIBRARY_KEY: tools.program(LITERT_LIBRARY)}
    reference = staging.local_files.get("files.reference")
    if reference is not None:
        files.update(reference_input_files(Path(reference), root, "litert", _INPUT_KEY,
                                           reference_sets))
    return files


def kept_native_files(staging: Staging) -> KeptFiles | None:
    """On an Android phone: the runner bundled with LiteRT-LM's library and glibc, which the
    phone keeps by content between jobs; None elsewhere."""
    options = staging.config.options
    if not uses_native_runner(staging.python, options) or not is_android_abi(staging.abi) \
            or why_not_native(options):
        return None  # stage_native_files says why the options cannot run
    root = device_tools_dir(Path(staging.cache_root))
    tools = build_litert_runner(runner_architecture("tflite", staging.abi), root,
                                progress=staging.progress)
    return kept_bundle(tools, LITERT_RUNNER, root, key=BUNDLE_KEY, tag="litert",
                       what=f"litert-lm-api {LITERT_LM_VERSION}'s TFLite C library")


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      precision: str) -> Invocation:
    """The runner's command for one repetition; the first also hands back its outputs (and
    the per-operator profile, with ``profile_ops``)."""
    runner = staged_runner("tflite", ctx.files, RUNNER_KEY, BUNDLE_KEY, LITERT_RUNNER)
    options, test = ctx.config.options, ctx.test
    _refuse_unsupported(options)
    xnnpack = options.get("xnnpack", True)
    extra = [f"--warmup={test.warmup}", f"--xnnpack={'true' if xnnpack else 'false'}"]
    inputs, sets = staged_inputs(ctx.files, _INPUT_KEY)
    extra += [f"--input={path}" for path in inputs]
    if sets > 1:
        extra.append(f"--input_sets={sets}")
    pull: tuple[str, ...] = ()
    if ctx.repetition == 0:
        extra.append(f"--output_dir={ctx.workdir}")
        pull = (MANIFEST, OUTPUTS)
        if test.profile_ops:
            extra.append(f"--profile_path={ctx.workdir}/{PROFILE}")
            pull += (PROFILE,)
    threads = options.get("threads", test.threads)
    # Unset: TFLite's own default, as the Python backend leaves it.
    argv = executor_runner_argv(runner, model_path, iterations=max(test.iter, 1),
                                threads=int(threads) if threads else None, extra=extra)
    argv = bundle_argv(ctx.files, BUNDLE_KEY, argv)
    echo = "echo " + shlex.quote(_VARIANT + json.dumps({"precision": precision}))
    return replace(framework.native_invocation(ctx, argv, before=[NEEDS_LRCPC], after=echo),
                   pull=pull)


def is_native_output(results: Sequence[CommandResult]) -> bool:
    """Whether ``results`` are benchlab's runner's (its first line names it)."""
    return any(_BANNER.search(r.stdout) for r in results)


def profile_rows(text: str, *, warmup_runs: int = 0) -> list[dict[str, float]]:
    """One row per kept run of the runner's profile lines (``run, kind, operator, node,
    subgraph, us``): each operator's time in that run (ms), XNNPACK's own operators named
    ``xnnpack: NAME``; the first ``warmup_runs`` runs left out."""
    runs: dict[int, dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if line.startswith("#") or len(parts) != 6:
            continue
        try:
            run, us = int(parts[0]), float(parts[5])
        except ValueError:
            continue
        op = f"xnnpack: {parts[2]}" if parts[1] == "delegate" else parts[2]
        row = runs.setdefault(run, {})
        row[op] = row.get(op, 0.0) + us / 1000.0
    return [runs[run] for run in sorted(runs)][warmup_runs:]


def parse_native_output(results: Sequence[CommandResult]) -> ParsedOutput:
    """benchlab's runner's lines and pulled files as samples and details: the timing lines,
    peak memory, the outputs scored against the reference, per-operator rows."""
    out = read_runner_output(results)
    text, samples, files, warmup = out.text, out.samples, out.files, out.warmup
    banner = _BANNER.search(text)
    version = banner.group(1) if banner else "?"
    xnnpack = _XNNPACK.search(text)
    details: dict[str, Any] = {
        **out.parsed.details,
        DetailKey.TOOL: litert_runner_tool(version),
        "runtime": "litert",
        DetailKey.RUNTIME_VERSION: version,
        "library": f"litert-lm-api {LITERT_LM_VERSION} {LITERT_LIBRARY}",
        "warmup_iterations": warmup,
        "xnnpack": xnnpack is not None and xnnpack.group(1) == "applied",
    }
    if "precision" in (variant := runner_variant(text, _VARIANT)):
        details[DetailKey.PRECISION] = variant["precision"]
    if match := _THREADS.search(text):
        details[DetailKey.THREADS] = int(match.group(1))
    score_runner_outputs(files, samples, details)
    if PROFILE in files:
        rows = profile_rows(Path(files[PROFILE]).read_text(errors="replace"),
                            warmup_runs=warmup)
        if rows:
            details["op_profile_source"] = "TensorFlow Lite telemetry profiler"
            # Whether XNNPACK ran any operator: the profile is where the runner can tell.
            details["xnnpack_applied"] = any(op.startswith("xnnpack: ") for op in rows[0])
        else:
            details[DetailKey.OP_PROFILE_UNAVAILABLE] = "TensorFlow Lite's profile held no runs"
        add_operator_rows(samples, rows)
    return ParsedOutput(samples=tuple(samples.items), summaries=out.parsed.summaries,
                        details=details, infos=out.parsed.infos)
