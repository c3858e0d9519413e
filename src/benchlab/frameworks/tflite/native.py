"""LiteRT through benchlab's own runner (``runner=native``), built for the target's CPU.

The runner (:mod:`benchlab.devicetools.litertrunner`) is compiled against the TFLite C API
of LiteRT-LM's library. On a Linux target (this host, a board) it and that library are
pushed into the job's working folder, where it finds them (``rpath $ORIGIN``); on an Android
phone they go in a bundle with glibc's own loader and libraries, kept on the phone by
content, as the other runners' (:func:`~benchlab.frameworks.native.own_runners.kept_bundle`).
An ARM CPU whose kernel lists its features without ``lrcpc`` (a Cortex-A53: LiteRT-LM's
library runs ARMv8.3's LDAPR) runs the second build instead, over Debian's TensorFlow Lite
2.14.1, its dependencies and sid's glibc, all in its bundle; that library has no XNNPACK.
``runner=auto`` (the default) takes this runner where the target has no Python. It prints
the lines of benchlab's other runners, read by :func:`~benchlab.frameworks.native.
own_runners.read_runner_output`; what it adds is read here:

* inputs and outputs: as the ONNX Runtime runner's (every reference set in, every set's
  outputs back, scored against the reference as the Python runner scores them);
* XNNPACK: the runner adds the delegate itself where its library has it (``xnnpack`` unset,
  as the Python backend's default resolver applies it; Debian's library has none, so there
  the built-in kernels run); ``xnnpack=false`` runs the built-in kernels; ``xnnpack=true``
  on a CPU that runs Debian's library is a "not run" line, decided before anything is pushed;
* per-operator times: with ``profile_ops`` a second interpreter with a TFLite telemetry
  profiler runs the same iterations; its lines become one row per timed run, an interpreter
  node by its operator (``FULLY_CONNECTED``), an operator XNNPACK ran by XNNPACK's own name
  (``xnnpack: Fully Connected (NC, F32) GEMM``), as ExecuTorch's ETDump rows name them. The
  Python binding has no per-operator profiler: this runner is where LiteRT's come from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlab.devicetools.litertrunner import (
    DEBIAN_TFLITE,
    LITERT_LM_LIBRARY,
    LITERT_LM_VERSION,
    LITERT_RUNNER,
    build_debian_litert_runner,
    build_litert_runner,
    litert_runner_tool,
)
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework
from benchlab.frameworks.native.own_runners import (
    CRunner,
    RunnerBuild,
    add_operator_rows,
    feature_guard,
    read_runner_output,
    runner_variant,
    score_runner_outputs,
)
from benchlab.protocol.lines import ParsedOutput
from benchlab.schema.result import DetailKey
from benchlab.targets.base import CommandResult

__all__ = ["BUNDLE_KEY", "C_RUNNER", "LRCPC_MISSING", "NEEDS_LRCPC", "XNNPACK_MISSING",
           "is_native_output", "native_invocation", "parse_native_output", "profile_rows",
           "why_not_native"]

PROFILE = "benchlab.litert-profile.tsv"
_BANNER = re.compile(r"^benchlab-litert-runner: TensorFlow Lite (\S+) C API(?: of (.+))?$", re.M)
_XNNPACK = re.compile(r"^XNNPACK delegate: (applied|off)( \(this library has none\))?", re.M)
_THREADS = re.compile(r"^Setting num_threads to (\d+)", re.M)
_VARIANT = "benchlab-litert-variant: "
#: LiteRT-LM's aarch64 library runs LDAPR (ARMv8.3's load-acquire, FEAT_LRCPC) while it
#: loads, which an ARMv8.0 core (a Cortex-A53) lacks: the runner would die of SIGILL before
#: its first line. A plan on a phone whose kernel lists its features takes Debian's build
#: there instead (``C_RUNNER.builds``); where they are not listed, the job over LiteRT-LM's
#: library ends first, saying so (:data:`NEEDS_LRCPC`).
LRCPC_MISSING = (
    f"LiteRT-LM's aarch64 library (litert-lm-api {LITERT_LM_VERSION}) uses LDAPR, an ARMv8.3 "
    "instruction (FEAT_LRCPC), and this CPU lacks it (the kernel lists no lrcpc among its "
    "features; a Cortex-A53 is ARMv8.0): benchlab's LiteRT runner over it cannot run here "
    "(cores from the Cortex-A55 and A76 on have it; where the plan reads a phone's features, "
    "such a CPU runs the runner over Debian's TensorFlow Lite instead)")
NEEDS_LRCPC = feature_guard("lrcpc", LRCPC_MISSING)
#: Why ``xnnpack=true`` does not run where Debian's library is the one the CPU runs.
XNNPACK_MISSING = (
    f"tflite: xnnpack=true asks for the XNNPACK delegate, and on this CPU (no lrcpc: an "
    f"ARMv8.0 core) benchlab's LiteRT runner loads Debian's TensorFlow Lite ({DEBIAN_TFLITE}), "
    "which Debian builds without it; leave xnnpack unset or false to run TFLite's built-in "
    "kernels")


def why_not_native(options: Mapping[str, Any]) -> str | None:
    """Why the runner cannot honour ``options`` (None: it can)."""
    if options.get("binary") is not None:
        return ("tflite: runner=native runs benchlab's runner; binary= runs your own "
                "benchmark_model: give one of them")
    if options.get("flags"):
        return "tflite: flags= are a native tool's (with binary=); benchlab's runner takes none"
    return None


def _without_xnnpack(options: Mapping[str, Any]) -> str | None:
    """Why Debian's build cannot honour ``options``: XNNPACK asked for."""
    return XNNPACK_MISSING if options.get("xnnpack") is True else None


#: benchlab's runner as a job stages, keeps and starts it: over LiteRT-LM's library, or on an
#: ARM CPU without lrcpc over Debian's TensorFlow Lite.
C_RUNNER = CRunner(
    framework="tflite", program=LITERT_RUNNER, tag="litert", why_not=why_not_native,
    profile=PROFILE, builds=(
        RunnerBuild("litert", build_litert_runner,
                    f"litert-lm-api {LITERT_LM_VERSION}'s TFLite C library",
                    arm_needs={"lrcpc": LRCPC_MISSING}),
        RunnerBuild("litert-debian", build_debian_litert_runner,
                    f"Debian's TensorFlow Lite ({DEBIAN_TFLITE}, without XNNPACK)",
                    why_not=_without_xnnpack)))
#: The device folder of the phone's bundle over LiteRT-LM's library (runner, library, glibc).
BUNDLE_KEY = C_RUNNER.bundle_key


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      precision: str) -> Invocation:
    """The runner's command for one repetition (:meth:`CRunner.invocation`), with XNNPACK
    as asked (unset: where the library has it), after the check that an ARM CPU has what the
    library runs (:data:`NEEDS_LRCPC`, LiteRT-LM's build). Threads unset: TFLite's own
    default, as the Python backend leaves it."""
    options = ctx.config.options
    asked = options.get("xnnpack")
    xnnpack = "auto" if asked is None else "true" if asked else "false"
    return C_RUNNER.invocation(
        framework, ctx, model_path, flags=[f"--xnnpack={xnnpack}"],
        threads=options.get("threads", ctx.test.threads),
        variant=_VARIANT + json.dumps({"precision": precision}))


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
    # The library as its build named it (a runner built before it said so: LiteRT-LM's).
    library = banner.group(2).strip() if banner and banner.group(2) else LITERT_LM_LIBRARY
    xnnpack = _XNNPACK.search(text)
    details: dict[str, Any] = {
        **out.parsed.details,
        DetailKey.TOOL: litert_runner_tool(
            version, library, xnnpack=xnnpack is None or xnnpack.group(2) is None),
        "runtime": "litert",
        DetailKey.RUNTIME_VERSION: version,
        "library": library,
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
