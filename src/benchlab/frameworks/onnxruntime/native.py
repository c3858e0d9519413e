"""ONNX Runtime through benchlab's own runner (``runner=native``), built for the target's CPU.

The runner (:mod:`benchlab.devicetools.ortrunner`) is compiled against the C library of
ONNX Runtime's wheel; it and that library are pushed into the job's working folder, where it
finds them (``rpath $ORIGIN``). It prints the lines of benchlab's ExecuTorch runner, read by
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

import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.devicetools.elf import architecture_of_abi, is_android_abi
from benchlab.devicetools.ortrunner import (
    ORT_LIBRARY,
    ORT_RUNNER,
    ORT_VERSION,
    build_ort_runner,
    ort_runner_tool,
)
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, RunnerFramework, Staging
from benchlab.frameworks.native import executor_runner_argv, parse_executor_runner
from benchlab.frameworks.native.common import SampleList
from benchlab.frameworks.native.runner_outputs import MANIFEST, OUTPUTS, score_runner_outputs
from benchlab.frameworks.native.perf_test import ort_profile_events, ort_profile_op_rows
from benchlab.frameworks.onnxruntime.placement import CPU_PROVIDER, coverage_from_events
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.accuracy import load_reference
from benchlab.schema.result import DetailKey, Metric
from benchlab.targets.base import CommandResult

__all__ = ["RUNNERS", "is_native_output", "native_invocation", "parse_native_output",
           "stage_native_files", "uses_native_runner"]

RUNNERS = ("auto", "python", "native")
RUNNER_KEY = "native.ort_runner"
LIBRARY_KEY = "native.ort_library"
_INPUT_KEY = "native.ort_input."
#: An input file's name says how many sets it holds: the runner checks its size by it.
_SETS = re.compile(r"-sets(\d+)\.bin$")
PROFILE = "benchlab.ort-profile.json"
_BANNER = re.compile(r"^benchlab-ort-runner: ONNX Runtime (\S+) C library, API (\d+) header",
                     re.M)
_VARIANT = "benchlab-ort-variant: "
_INTRA = re.compile(r"^Setting intra_op_num_threads to (\d+)", re.M)
_PEAK = re.compile(r"^Peak resident memory: (\d+) KiB", re.M)
_ITERATIONS = re.compile(r"Iteration \d+ of (\d+):")
_TIMED = re.compile(r"Model executed successfully (\d+) time\(s\)")


def uses_native_runner(python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs benchlab's runner: ``runner=native``. ``auto`` (the default) runs
    the Python binding where the target has Python, and where it has none asks for a native
    tool (the runner is not yet pushed with the glibc a phone lacks)."""
    runner = str(options.get("runner", "auto"))
    if runner not in RUNNERS:
        raise UsageError(f"onnxruntime runner must be one of {', '.join(RUNNERS)}, not "
                         f"{runner!r}")
    return runner == "native"


def _refuse_unsupported(options: Mapping[str, Any]) -> None:
    """Options the runner cannot honour fail the job, never measured as something else."""
    if options.get("binary") is not None:
        raise UsageError("onnxruntime: runner=native runs benchlab's runner; binary= runs "
                         "your own onnxruntime_perf_test: give one of them")
    providers = options.get("providers", CPU_PROVIDER)
    names = providers.split("+") if isinstance(providers, str) else list(providers)
    if [str(p).strip() for p in names] != [CPU_PROVIDER]:
        raise UsageError(f"onnxruntime: runner=native runs the CPU provider only (the wheel's "
                         f"C library), not {'+'.join(map(str, names))}")
    if str(options.get("spinning", True)).lower() in ("false", "0", "no"):
        raise UsageError("onnxruntime: runner=native keeps ONNX Runtime's spinning threads; "
                         "spinning=false runs with runner=python")


def stage_native_files(staging: Staging) -> dict[str, Path]:
    """The runner built for the target's CPU (from the cache when built before), the
    library it loads, and the reference's inputs as raw files; nothing when the job does not
    run the runner."""
    options = staging.config.options
    if not uses_native_runner(staging.python, options):
        return {}
    _refuse_unsupported(options)
    if is_android_abi(staging.abi):
        raise UsageError(
            f"onnxruntime: runner=native runs on Linux targets (this host, a board); its "
            f"library is shared and an Android phone (ABI {staging.abi}) has no glibc to load "
            "it, and the bundle with glibc's own loader is not built yet: give your "
            "onnxruntime_perf_test with -f onnxruntime:binary=PATH")
    architecture = architecture_of_abi(staging.abi)
    if architecture is None:
        raise UsageError(f"onnxruntime: cannot tell the target's CPU (ABI {staging.abi!r}), "
                         "so there is nothing to build its runner for")
    tools = build_ort_runner(architecture, device_tools_dir(Path(staging.cache_root)),
                             progress=staging.progress)
    files = {RUNNER_KEY: tools.program(ORT_RUNNER), LIBRARY_KEY: tools.program(ORT_LIBRARY)}
    reference = staging.local_files.get("files.reference")
    if reference is not None:
        files.update(_reference_inputs(Path(reference), Path(staging.cache_root)))
    return files


def _input_sets(reference: Path) -> list[dict[str, np.ndarray]]:
    """The reference's input sets the Python runner scores: the first, and each further one
    with outputs."""
    try:
        loaded = load_reference(reference)
    except (OSError, ValueError, KeyError):
        return []  # not a forward-pass reference: the runner feeds ones
    sets = [loaded.inputs] if loaded.inputs else []
    if sets and loaded.outputs:
        sets += [dict(more) for more, outs in loaded.more
                 if outs and list(more) == list(loaded.inputs)]
    return sets


def _reference_inputs(reference: Path, cache_root: Path) -> dict[str, Path]:
    """The reference's inputs as raw files, by key, in its order, each file every set's
    values of that input back to back; kept in the artifact cache by the reference's content
    (the host target links files into a job's folder rather than copying them, so they must
    outlive the staging scratch)."""
    digest = hashlib.sha256(reference.read_bytes()).hexdigest()[:16]
    folder = device_tools_dir(cache_root) / "inputs" / f"ort-sets-{digest}"
    done = folder / "inputs.done"
    if not done.is_file():
        sets = _input_sets(reference)
        folder.mkdir(parents=True, exist_ok=True)
        for index, name in enumerate(sets[0] if sets else {}):
            tmp = folder / f"ort-input-{index}.bin.tmp"
            with open(tmp, "wb") as handle:
                for one in sets:
                    value = np.ascontiguousarray(one[name])
                    handle.write(value.astype(value.dtype.newbyteorder("<"), copy=False)
                                 .tobytes())
            tmp.replace(folder / f"ort-input-{index}-sets{len(sets)}.bin")
        # Last: a cut write leaves no finished folder.
        done.write_text(f"{len(sets[0]) if sets else 0} {len(sets)}\n")
    count, sets_count = (int(n) for n in done.read_text().split())
    return {f"{_INPUT_KEY}{i}": folder / f"ort-input-{i}-sets{sets_count}.bin"
            for i in range(count)}


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      precision: str) -> Invocation:
    """The runner's command for one repetition; the first also hands back its outputs (and
    ONNX Runtime's profile, with ``profile_ops``). ``precision``, which the runner cannot
    tell from the file, is echoed after it for the parser."""
    runner = ctx.files.get(RUNNER_KEY)
    if runner is None:
        raise UsageError("onnxruntime: benchlab's runner was not staged on the target")
    options, test = ctx.config.options, ctx.test
    _refuse_unsupported(options)
    extra = [f"--warmup={test.warmup}", "--graph_optimization_level="
             f"{options.get('graph_optimization_level', 'all')}"]
    inputs = sorted((int(k[len(_INPUT_KEY):]), v) for k, v in ctx.files.items()
                    if k.startswith(_INPUT_KEY))
    extra += [f"--input={path}" for _, path in inputs]
    sets = {int(m.group(1)) for _, path in inputs if (m := _SETS.search(str(path)))}
    if sets and max(sets) > 1:
        extra.append(f"--input_sets={max(sets)}")
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
    echo = "echo " + shlex.quote(_VARIANT + json.dumps({"precision": precision}))
    return replace(framework.native_invocation(ctx, argv, after=echo), pull=pull)


def is_native_output(results: Sequence[CommandResult]) -> bool:
    """Whether ``results`` are benchlab's runner's (its first line names it)."""
    return any(_BANNER.search(r.stdout) for r in results)


def parse_native_output(results: Sequence[CommandResult]) -> ParsedOutput:
    """benchlab's runner's lines and pulled files as samples and details: the timing lines,
    peak memory, the outputs scored against the reference, per-operator rows."""
    text = "\n".join(part for r in results for part in (r.stdout, r.stderr))
    total = [int(m) for m in _ITERATIONS.findall(text)]
    timed = [int(m) for m in _TIMED.findall(text)]
    warmup = max(total[0] - timed[0], 0) if total and timed else 0
    parsed = parse_executor_runner(text, warmup_iterations=warmup)
    samples = SampleList()
    for sample in parsed.samples:
        samples.add(sample.type, sample.metric, sample.value, sample.unit)
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
    for line in text.splitlines():
        if line.startswith(_VARIANT):
            try:
                details[DetailKey.PRECISION] = str(json.loads(line[len(_VARIANT):])["precision"])
            except (ValueError, KeyError, TypeError):
                pass
    if match := _INTRA.search(text):
        details[DetailKey.INTRA_OP_THREADS] = details[DetailKey.THREADS] = int(match.group(1))
    for match in _PEAK.finditer(text):
        samples.add("NET", Metric.MEMORY_PEAK, int(match.group(1)) / 1024.0, "MiB")
    files: dict[str, Path] = {}
    for result in results:
        files.update(result.files)
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
        for row in rows:
            for op, ms in row.items():
                samples.add(op, Metric.LATENCY, ms, "ms")
    return ParsedOutput(samples=tuple(samples.items), summaries=parsed.summaries,
                        details=details, infos=parsed.infos)

