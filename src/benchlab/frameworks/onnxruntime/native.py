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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlab.devicetools.ortrunner import (
    ORT_RUNNER,
    ORT_VERSION,
    build_ort_runner,
    ort_runner_tool,
)
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework
from benchlab.frameworks.native.own_runners import (
    RUNNERS,
    CRunner,
    RunnerBuild,
    add_operator_rows,
    read_runner_output,
    runner_variant,
    score_runner_outputs,
)
from benchlab.frameworks.native.perf_test import ort_profile_events, ort_profile_op_rows
from benchlab.frameworks.onnxruntime.placement import CPU_PROVIDER, coverage_from_events
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey
from benchlab.targets.base import CommandResult

__all__ = ["BUNDLE_KEY", "C_RUNNER", "RUNNERS", "is_native_output", "native_invocation",
           "parse_native_output", "why_not_native"]

PROFILE = "benchlab.ort-profile.json"
_BANNER = re.compile(r"^benchlab-ort-runner: ONNX Runtime (\S+) C library, API (\d+) header",
                     re.M)
_VARIANT = "benchlab-ort-variant: "
_INTRA = re.compile(r"^Setting intra_op_num_threads to (\d+)", re.M)


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


#: benchlab's runner as a job stages, keeps and starts it.
C_RUNNER = CRunner(framework="onnxruntime", program=ORT_RUNNER, tag="ort",
                   builds=(RunnerBuild("ort", build_ort_runner,
                                       f"ONNX Runtime {ORT_VERSION}'s C library"),),
                   why_not=why_not_native, profile=PROFILE)
#: The device folder of the phone's bundle (runner, library, glibc), and ``KEY/NAME`` each
#: file in it.
BUNDLE_KEY = C_RUNNER.bundle_key


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      precision: str) -> Invocation:
    """The runner's command for one repetition (:meth:`CRunner.invocation`), with the graph
    optimisation asked for; ``precision``, which the runner cannot tell from the file, is
    echoed after it for the parser."""
    options = ctx.config.options
    threads = options.get("intra_op_threads", options.get("threads", ctx.test.threads))
    return C_RUNNER.invocation(
        framework, ctx, model_path, threads=threads,
        flags=[f"--graph_optimization_level={options.get('graph_optimization_level', 'all')}"],
        variant=_VARIANT + json.dumps({"precision": precision}))


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

