"""ONNX Runtime through benchlab's own runner (``runner=native``), built for the target's CPU.

The runner (:mod:`benchlab.devicetools.ortrunner`) is compiled against the C library of
ONNX Runtime's wheel. On a Linux target (this host, a board) it and that library are pushed
into the job's working folder, where it finds them (``rpath $ORIGIN``). An Android phone has
no glibc to load them: there they go in a bundle with glibc's own loader and libraries
(:mod:`benchlab.devicetools.glibcbundle`), kept on the phone by content and started through
that loader, as ExecuTorch's runner is. ``runner=auto`` (the default) takes this runner where
the target has no Python. It prints the lines of benchlab's ExecuTorch runner, read by
:func:`~benchlab.frameworks.native.parse_executor_runner` (one sample per iteration;
``onnxruntime_perf_test`` prints means only); what it adds is read here:

* inputs: the model's reference inputs, when it has a reference, as raw tensor files in the
  session's input order, every set the reference holds back to back (without one the runner
  feeds ones); the timed runs use the first set;
* outputs: the first repetition pulls ``outputs.json`` and ``outputs.bin``
  (:mod:`benchlab.protocol.tensorfiles`), one output of each set, scored here against the
  reference over all its sets, as the Python runner scores them;
* per-operator times: with ``profile_ops`` a second session in the runner writes ONNX
  Runtime's profile JSON, read here by :func:`~benchlab.frameworks.native.perf_test.
  ort_profile_op_rows` into one row per timed run, as the Python runner's separate profiling
  session gives them, and the provider of every node (:mod:`.placement`);
* the runtime that ran: ``details["tool"]`` names the runner, the library's version and the
  header's API (:func:`~benchlab.devicetools.ortrunner.ort_runner_tool`).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchlab.devicetools.ortrunner import (
    ORT_LIBRARY,
    ORT_RUNNER,
    ORT_VERSION,
    build_ort_runner,
    ort_runner_tool,
)
from benchlab.devicetools.elf import is_android_abi
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, KeptFiles, RunnerFramework, Staging
from benchlab.frameworks.native import executor_runner_argv
from benchlab.frameworks.native.own_runners import (
    MANIFEST,
    OUTPUTS,
    RUNNERS,
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
from benchlab.frameworks.native.perf_test import ort_profile_events, ort_profile_op_rows
from benchlab.frameworks.onnxruntime.placement import CPU_PROVIDER, coverage_from_events
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey
from benchlab.targets.base import CommandResult

__all__ = ["BUNDLE_KEY", "RUNNERS", "is_native_output", "kept_native_files",
           "native_invocation", "parse_native_output", "stage_native_files",
           "uses_native_runner", "why_not_native"]

RUNNER_KEY = "native.ort_runner"
#: The device folder of the phone's bundle (runner, library, glibc), and ``KEY/NAME`` each
#: file in it.
BUNDLE_KEY = "kept.ort_bundle"
LIBRARY_KEY = "native.ort_library"
_INPUT_KEY = "native.ort_input."
PROFILE = "benchlab.ort-profile.json"
_BANNER = re.compile(r"^benchlab-ort-runner: ONNX Runtime (\S+) C library, API (\d+) header",
                     re.M)
_VARIANT = "benchlab-ort-variant: "
_INTRA = re.compile(r"^Setting intra_op_num_threads to (\d+)", re.M)


def uses_native_runner(python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs benchlab's runner (:func:`~benchlab.frameworks.native.own_runners.
    wants_own_runner`); where the target has Python, ``auto`` runs the Python binding."""
    return wants_own_runner("onnxruntime", python, options)


def why_not_native(options: Mapping[str, Any]) -> str | None:
    """Why the runner cannot honour ``options`` (None: it can): they are never measured as
    something else."""
    if options.get("binary") is not None:
        return ("onnxruntime: runner=native runs benchlab's runner; binary= runs your own "
                "onnxruntime_perf_test: give one of them")
    providers = options.get("providers", CPU_PROVIDER)
    names = providers.split("+") if isinstance(providers, str) else list(providers)
    if [str(p).strip() for p in names] != [CPU_PROVIDER]:
        return (f"onnxruntime: benchlab's runner runs the CPU provider only (the wheel's C "
                f"library), not {'+'.join(map(str, names))}")
    if str(options.get("spinning", True)).lower() in ("false", "0", "no"):
        return ("onnxruntime: benchlab's runner keeps ONNX Runtime's spinning threads; "
                "spinning=false runs with runner=python")
    return None


def _refuse_unsupported(options: Mapping[str, Any]) -> None:
    if why := why_not_native(options):
        raise UsageError(why)


def stage_native_files(staging: Staging) -> dict[str, Path]:
    """The runner built for the target's CPU (from the cache when built before), the
    library it loads, and the reference's inputs as raw files; nothing when the job does not
    run the runner."""
    options = staging.config.options
    if not uses_native_runner(staging.python, options):
        return {}
    _refuse_unsupported(options)
    files: dict[str, Path] = {}
    if not is_android_abi(staging.abi):
        tools = build_ort_runner(runner_architecture("onnxruntime", staging.abi),
                                 device_tools_dir(Path(staging.cache_root)),
                                 progress=staging.progress)
        files = {RUNNER_KEY: tools.program(ORT_RUNNER), LIBRARY_KEY: tools.program(ORT_LIBRARY)}
    reference = staging.local_files.get("files.reference")
    if reference is not None:
        files.update(reference_input_files(
            Path(reference), device_tools_dir(Path(staging.cache_root)), "ort", _INPUT_KEY,
            reference_sets))
    return files


def kept_native_files(staging: Staging) -> KeptFiles | None:
    """On an Android phone: the runner bundled with the C library and glibc's loader and
    libraries, which the phone keeps by content between jobs; None elsewhere."""
    options = staging.config.options
    if not uses_native_runner(staging.python, options) or not is_android_abi(staging.abi) \
            or why_not_native(options):
        return None  # stage_native_files says why the options cannot run
    root = device_tools_dir(Path(staging.cache_root))
    tools = build_ort_runner(runner_architecture("onnxruntime", staging.abi), root,
                             progress=staging.progress)
    return kept_bundle(tools, ORT_RUNNER, root, key=BUNDLE_KEY, tag="ort",
                       what=f"ONNX Runtime {ORT_VERSION}'s C library")


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      precision: str) -> Invocation:
    """The runner's command for one repetition; the first also hands back its outputs (and
    ONNX Runtime's profile, with ``profile_ops``). ``precision``, which the runner cannot
    tell from the file, is echoed after it for the parser."""
    runner = staged_runner("onnxruntime", ctx.files, RUNNER_KEY, BUNDLE_KEY, ORT_RUNNER)
    options, test = ctx.config.options, ctx.test
    _refuse_unsupported(options)
    extra = [f"--warmup={test.warmup}", "--graph_optimization_level="
             f"{options.get('graph_optimization_level', 'all')}"]
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
    threads = options.get("intra_op_threads", options.get("threads", test.threads))
    # 0 or unset: ONNX Runtime's own choice, as the Python binding leaves it.
    argv = executor_runner_argv(runner, model_path, iterations=max(test.iter, 1),
                                threads=int(threads) if threads else None, extra=extra)
    argv = bundle_argv(ctx.files, BUNDLE_KEY, argv)
    echo = "echo " + shlex.quote(_VARIANT + json.dumps({"precision": precision}))
    return replace(framework.native_invocation(ctx, argv, after=echo), pull=pull)


def is_native_output(results: Sequence[CommandResult]) -> bool:
    """Whether ``results`` are benchlab's runner's (its first line names it)."""
    return any(_BANNER.search(r.stdout) for r in results)


def parse_native_output(results: Sequence[CommandResult]) -> ParsedOutput:
    """benchlab's runner's lines and pulled files as samples and details: the timing lines,
    peak memory, the outputs scored against the reference, per-operator rows."""
    out = read_runner_output(results)
    text, parsed, samples, files, warmup = (out.text, out.parsed, out.samples, out.files,
                                            out.warmup)
    banner = _BANNER.search(text)
    version, api = (banner.group(1), banner.group(2)) if banner else (ORT_VERSION, "?")
    details: dict[str, Any] = {
        **parsed.details,
        DetailKey.TOOL: ort_runner_tool(version, api),
        "runtime": "onnxruntime",
        DetailKey.RUNTIME_VERSION: version,
        "c_api_version": int(api) if api.isdigit() else api,
        "warmup_iterations": warmup,
        "providers": [CPU_PROVIDER],
    }
    if "precision" in (variant := runner_variant(text, _VARIANT)):
        details[DetailKey.PRECISION] = variant["precision"]
    if match := _INTRA.search(text):
        details[DetailKey.INTRA_OP_THREADS] = details[DetailKey.THREADS] = int(match.group(1))
    score_runner_outputs(files, samples, details)
    if PROFILE in files:
        profile = Path(files[PROFILE]).read_text(errors="replace")
        rows = ort_profile_op_rows(profile, warmup_runs=warmup)
        if rows:
            details["op_profile_source"] = "ONNX Runtime profiler"
            details[DetailKey.DELEGATION] = coverage_from_events(
                ort_profile_events(profile), [CPU_PROVIDER]).to_detail()
        else:
            details[DetailKey.OP_PROFILE_UNAVAILABLE] = "ONNX Runtime's profile held no runs"
        add_operator_rows(samples, rows)
    return ParsedOutput(samples=tuple(samples.items), summaries=parsed.summaries,
                        details=details, infos=parsed.infos)

