"""ExecuTorch through benchlab's own runner (``runner=native``), built for the target's CPU.

The runner (:mod:`benchlab.devicetools.etrunner`) is compiled against the runtime libraries
of ExecuTorch's 1.5 wheel. On a Linux target (this host, a board) it and those libraries are
pushed into the job's working folder, where it finds them (``rpath $ORIGIN``). An Android
phone has no glibc to load them: there the runner goes in a bundle with glibc's own loader and
libraries (:mod:`benchlab.devicetools.glibcbundle`), which the phone keeps between jobs in a
folder named by its content (:class:`~benchlab.frameworks.base.KeptFiles`), and starts
through that loader. ``runner=auto`` (the default) takes this runner where the target has no
Python. It takes ``executor_runner``'s flags and prints its lines, read by
:func:`~benchlab.frameworks.native.parse_executor_runner`; what it adds is read here:

* inputs: the model's reference inputs, when it has a reference, as raw tensor files in the
  method's input order (without one the runner feeds ones, as ``executor_runner`` does);
* outputs: the first repetition pulls ``outputs.json`` and ``outputs.bin``, every output
  back to back (:mod:`benchlab.protocol.tensorfiles`), scored here against the reference with
  the error statistics the Python runner prints;
* per-operator times: with ``profile_ops`` the runner writes an ETDump, read here
  (:mod:`benchlab.frameworks.executorch.etdump`) into one row per timed execution;
* the runtime that ran: ``details["tool"]`` names the runner and the libraries' release,
  ``details["pte_exported_by"]`` the host's ExecuTorch, which wrote the ``.pte``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.devicetools.elf import architecture_of_abi, is_android_abi
from benchlab.devicetools.etrunner import ET_LIBRARIES, ET_RUNNER, ET_VERSION, build_et_runner
from benchlab.devicetools.glibcbundle import glibc_bundle
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, KeptFiles, RunnerFramework, Staging
from benchlab.frameworks.executorch.etdump import etdump_operator_rows
from benchlab.frameworks.executorch.program import pte_coverage
from benchlab.frameworks.native import executor_runner_argv, parse_executor_runner
from benchlab.frameworks.native.common import SampleList
from benchlab.frameworks.native.runner_outputs import MANIFEST, OUTPUTS, score_runner_outputs
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.accuracy import load_reference
from benchlab.schema.result import DetailKey, Metric
from benchlab.targets.base import CommandResult

__all__ = ["BUNDLE_KEY", "RUNNERS", "kept_native_files", "native_invocation",
           "parse_native_output", "stage_native_files", "uses_native_runner"]

RUNNERS = ("auto", "python", "native")
RUNNER_KEY = "native.et_runner"
#: The device folder of the phone's bundle (runner, libraries, glibc), and ``KEY/NAME`` each
#: file in it.
BUNDLE_KEY = "kept.et_bundle"
_LIB_KEY = "native.et_lib."
_INPUT_KEY = "native.et_input."
ETDUMP = "benchlab.etdump"
#: The runner's first line: the libraries' release it was built against.
_BANNER = re.compile(r"^benchlab-et-runner: ExecuTorch (\S+) libraries", re.M)
_VARIANT = "benchlab-et-variant: "
_POOL = re.compile(r"^Threadpool threads: (\d+)", re.M)
_PEAK = re.compile(r"^Peak resident memory: (\d+) KiB", re.M)
_ITERATIONS = re.compile(r"Iteration \d+ of (\d+):")
_TIMED = re.compile(r"Model executed successfully (\d+) time\(s\)")


def uses_native_runner(python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs benchlab's runner: ``runner=native``, or ``auto`` (the default) on
    a target without Python when no ``binary=`` (a user's own ``executor_runner``) is given.
    Where the target has Python, ``auto`` runs ExecuTorch's Python runtime."""
    runner = str(options.get("runner", "auto"))
    if runner not in RUNNERS:
        raise UsageError(f"executorch runner must be one of {', '.join(RUNNERS)}, not "
                         f"{runner!r}")
    return runner == "native" or (runner == "auto" and not python
                                  and options.get("binary") is None)


def _needs_bundle(abi: str | None) -> bool:
    """Whether the target is an Android phone, whose C library is not glibc."""
    return is_android_abi(abi)


def _architecture(abi: str | None) -> str:
    architecture = architecture_of_abi(abi)
    if architecture is None:
        raise UsageError(f"executorch: cannot tell the target's CPU (ABI {abi!r}), so "
                         "there is nothing to build its runner for")
    return architecture


def stage_native_files(staging: Staging) -> dict[str, Path]:
    """The runner built for the target's CPU (from the cache when built before), the
    libraries it loads, and the reference's inputs as raw files; nothing when the job does
    not run the runner. On a phone the runner and its libraries travel in the bundle
    (:func:`kept_native_files`), and only the inputs here."""
    options = staging.config.options
    if not uses_native_runner(staging.python, options):
        return {}
    if options.get("binary") is not None:
        raise UsageError("executorch: runner=native runs benchlab's runner; binary= runs "
                         "your own executor_runner: give one of them")
    files: dict[str, Path] = {}
    if not _needs_bundle(staging.abi):
        tools = build_et_runner(_architecture(staging.abi),
                                device_tools_dir(Path(staging.cache_root)),
                                progress=staging.progress)
        files[RUNNER_KEY] = tools.program(ET_RUNNER)
        files.update({_LIB_KEY + name: tools.program(name) for name in ET_LIBRARIES})
    reference = staging.local_files.get("files.reference")
    if reference is not None:
        files.update(_reference_inputs(Path(reference), Path(staging.cache_root)))
    return files


def kept_native_files(staging: Staging) -> KeptFiles | None:
    """On an Android phone: the runner bundled with its libraries and glibc's loader and
    libraries, which the phone keeps by content between jobs; None elsewhere."""
    if not uses_native_runner(staging.python, staging.config.options) or \
            not _needs_bundle(staging.abi):
        return None
    if staging.config.options.get("binary") is not None:
        return None  # stage_native_files says why both cannot be given
    architecture = _architecture(staging.abi)
    root = device_tools_dir(Path(staging.cache_root))
    tools = build_et_runner(architecture, root, progress=staging.progress)
    bundle = glibc_bundle(tools, ET_RUNNER, root)
    return KeptFiles(key=BUNDLE_KEY, name=bundle.device_folder(f"et-{architecture}"),
                     files=bundle.files, executables=(bundle.loader, bundle.program),
                     label=f"{ET_RUNNER} with ExecuTorch {ET_VERSION}'s libraries and glibc "
                           f"({bundle.size / 2**20:.1f} MiB)")


def _reference_inputs(reference: Path, cache_root: Path) -> dict[str, Path]:
    """The reference's first input set as raw files, by key, in method input order; kept
    in the artifact cache by the reference's content (the host target links files into a
    job's folder rather than copying them, so they must outlive the staging scratch)."""
    digest = hashlib.sha256(reference.read_bytes()).hexdigest()[:16]
    folder = device_tools_dir(cache_root) / "inputs" / f"executorch-{digest}"
    done = folder / "inputs.done"
    if not done.is_file():
        try:
            inputs = load_reference(reference).inputs
        except (OSError, ValueError, KeyError):
            inputs = {}  # not a forward-pass reference: the runner feeds ones
        folder.mkdir(parents=True, exist_ok=True)
        for index, array in enumerate(inputs.values()):
            value = np.ascontiguousarray(array)
            tmp = folder / f"et-input-{index}.bin.tmp"
            value.astype(value.dtype.newbyteorder("<"), copy=False).tofile(tmp)
            tmp.replace(folder / f"et-input-{index}.bin")
        done.write_text(f"{len(inputs)}\n")  # last: a cut write leaves no finished folder
    count = int(done.read_text().strip() or 0)
    return {f"{_INPUT_KEY}{i}": folder / f"et-input-{i}.bin" for i in range(count)}


def _staged_inputs(files: Mapping[str, str]) -> list[str]:
    keys = sorted((int(k[len(_INPUT_KEY):]), k) for k in files if k.startswith(_INPUT_KEY))
    return [files[k] for _, k in keys]


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      variant: Mapping[str, str]) -> Invocation:
    """The runner's command for one repetition; the first also hands back its outputs (and
    the ETDump, with ``profile_ops``). ``variant``: the file's delegate and precision, which
    the runner cannot tell, echoed after it for the parser."""
    runner = ctx.files.get(RUNNER_KEY) or ctx.files.get(f"{BUNDLE_KEY}/{ET_RUNNER}")
    if runner is None:
        raise UsageError("executorch: benchlab's runner was not staged on the target")
    options, test = ctx.config.options, ctx.test
    extra = [f"--warmup={test.warmup}", f"--method_name={options.get('method', 'forward')}",
             "--print_output=none"]
    extra += [f"--input={path}" for path in _staged_inputs(ctx.files)]
    pull: tuple[str, ...] = ()
    if ctx.repetition == 0:
        extra.append(f"--output_dir={ctx.workdir}")
        pull = (MANIFEST, OUTPUTS)
        if test.profile_ops:
            extra.append(f"--etdump_path={ctx.workdir}/{ETDUMP}")
            pull += (ETDUMP,)
    argv = executor_runner_argv(runner, model_path, iterations=max(test.iter, 1),
                                threads=options.get("threads", test.threads), extra=extra)
    if runner == ctx.files.get(f"{BUNDLE_KEY}/{ET_RUNNER}"):
        # The phone's bundle: glibc's loader, run as a program, loads the runner and every
        # library from the bundle's folder; nothing of the phone's own C library is used.
        folder = ctx.files[BUNDLE_KEY]
        loader = next(path for key, path in ctx.files.items()
                      if key.startswith(f"{BUNDLE_KEY}/ld-"))
        argv = [loader, "--library-path", folder, *argv]
    echo = "echo " + shlex.quote(_VARIANT + json.dumps(dict(variant), sort_keys=True))
    return replace(framework.native_invocation(ctx, argv, after=echo), pull=pull)


def is_native_output(results: Sequence[CommandResult]) -> bool:
    """Whether ``results`` are benchlab's runner's (its first line names it)."""
    return any(_BANNER.search(r.stdout) for r in results)


def _exporter_version() -> str | None:
    try:
        return importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _variant(text: str) -> dict[str, str]:
    for line in text.splitlines():
        if line.startswith(_VARIANT):
            try:
                value = json.loads(line[len(_VARIANT):])
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    return {}


def parse_native_output(results: Sequence[CommandResult]) -> ParsedOutput:
    """benchlab's runner's lines and pulled files as samples and details: executor_runner's
    lines, then peak memory, the outputs scored against the reference, per-operator rows."""
    text = "\n".join(part for r in results for part in (r.stdout, r.stderr))
    total = [int(m) for m in _ITERATIONS.findall(text)]
    timed = [int(m) for m in _TIMED.findall(text)]
    warmup = max(total[0] - timed[0], 0) if total and timed else 0
    parsed = parse_executor_runner(text, warmup_iterations=warmup)
    samples = SampleList()
    for sample in parsed.samples:
        samples.add(sample.type, sample.metric, sample.value, sample.unit)
    libraries = _BANNER.search(text)
    version = libraries.group(1) if libraries else ET_VERSION
    exporter = _exporter_version()
    details: dict[str, Any] = {
        **parsed.details,
        DetailKey.TOOL: f"{ET_RUNNER} (ExecuTorch {version} libs)",
        "runtime": "executorch",
        DetailKey.RUNTIME_VERSION: version,
        "warmup_iterations": warmup,
    }
    if exporter:
        details["pte_exported_by"] = exporter
        if exporter != version:
            details["runtime_note"] = (f"the .pte was exported by ExecuTorch {exporter} (the "
                                       f"host's) and run by ExecuTorch {version}'s libraries")
    variant = _variant(text)
    delegate = variant.get("delegate")
    details.update({k: variant[k] for k in ("delegate", "precision") if k in variant})
    for match in _PEAK.finditer(text):
        samples.add("NET", Metric.MEMORY_PEAK, int(match.group(1)) / 1024.0, "MiB")
    files: dict[str, Path] = {}
    for result in results:
        files.update(result.files)
    score_runner_outputs(files, samples, details)
    program = _local_program(files, str(details.get("model_path", "")))
    if program is not None:  # the first repetition's, as the Python runner's
        details[DetailKey.DELEGATION] = pte_coverage(
            str(program), delegate, str(details.get("method", "forward"))).to_detail()
    if match := _POOL.search(text):
        details[DetailKey.THREADS] = int(match.group(1))
    if ETDUMP in files:
        try:
            rows = etdump_operator_rows(files[ETDUMP], warmup=warmup,
                                        delegate=delegate or "delegate")
        except ValueError as exc:
            details[DetailKey.OP_PROFILE_UNAVAILABLE] = str(exc)
        else:
            details["op_profile_source"] = "ETDump"
            for row in rows:
                for op, ms in row.items():
                    samples.add(op, Metric.LATENCY, ms, "ms")
    return ParsedOutput(samples=tuple(samples.items), summaries=parsed.summaries,
                        details=details, infos=parsed.infos)


def _local_program(files: Mapping[str, Path], device_path: str) -> Path | None:
    """The host's copy of the program the runner loaded (same file name), if here."""
    name = device_path.rsplit("/", 1)[-1]
    for key, path in files.items():
        if key.startswith("files.") and Path(path).name == name and name.endswith(".pte"):
            return Path(path)
    return None

