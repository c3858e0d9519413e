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

import importlib.metadata
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.devicetools.etrunner import ET_LIBRARIES, ET_RUNNER, ET_VERSION, build_et_runner
from benchlab.devicetools.elf import is_android_abi
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, KeptFiles, RunnerFramework, Staging
from benchlab.frameworks.executorch.etdump import etdump_operator_rows
from benchlab.frameworks.executorch.program import pte_coverage
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
    runner_architecture,
    runner_variant,
    score_runner_outputs,
    staged_inputs,
    staged_runner,
    wants_own_runner,
)
from benchlab.protocol.lines import ParsedOutput
from benchlab.runner.accuracy import load_reference
from benchlab.schema.result import DetailKey
from benchlab.targets.base import CommandResult

__all__ = ["BUNDLE_KEY", "RUNNERS", "kept_native_files", "native_invocation",
           "parse_native_output", "stage_native_files", "uses_native_runner"]

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


def uses_native_runner(python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs benchlab's runner (:func:`~benchlab.frameworks.native.own_runners.
    wants_own_runner`); where the target has Python, ``auto`` runs ExecuTorch's Python
    runtime."""
    return wants_own_runner("executorch", python, options)


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
    if not is_android_abi(staging.abi):
        tools = build_et_runner(runner_architecture("executorch", staging.abi),
                                device_tools_dir(Path(staging.cache_root)),
                                progress=staging.progress)
        files[RUNNER_KEY] = tools.program(ET_RUNNER)
        files.update({_LIB_KEY + name: tools.program(name) for name in ET_LIBRARIES})
    reference = staging.local_files.get("files.reference")
    if reference is not None:
        files.update(reference_input_files(
            Path(reference), device_tools_dir(Path(staging.cache_root)), "et", _INPUT_KEY,
            _first_input_set))
    return files


def kept_native_files(staging: Staging) -> KeptFiles | None:
    """On an Android phone: the runner bundled with its libraries and glibc's loader and
    libraries, which the phone keeps by content between jobs; None elsewhere."""
    if not uses_native_runner(staging.python, staging.config.options) or \
            not is_android_abi(staging.abi):
        return None
    if staging.config.options.get("binary") is not None:
        return None  # stage_native_files says why both cannot be given
    architecture = runner_architecture("executorch", staging.abi)
    root = device_tools_dir(Path(staging.cache_root))
    tools = build_et_runner(architecture, root, progress=staging.progress)
    return kept_bundle(tools, ET_RUNNER, root, key=BUNDLE_KEY, tag="et",
                       what=f"ExecuTorch {ET_VERSION}'s libraries")


def _first_input_set(reference: Path) -> list[dict[str, np.ndarray]]:
    """The reference's first input set, which the runner feeds (none: it feeds ones)."""
    try:
        inputs = load_reference(reference).inputs
    except (OSError, ValueError, KeyError):
        return []  # not a forward-pass reference
    return [inputs] if inputs else []


def native_invocation(framework: RunnerFramework, ctx: JobContext, model_path: str,
                      variant: Mapping[str, str]) -> Invocation:
    """The runner's command for one repetition; the first also hands back its outputs (and
    the ETDump, with ``profile_ops``). ``variant``: the file's delegate and precision, which
    the runner cannot tell, echoed after it for the parser."""
    runner = staged_runner("executorch", ctx.files, RUNNER_KEY, BUNDLE_KEY, ET_RUNNER)
    options, test = ctx.config.options, ctx.test
    extra = [f"--warmup={test.warmup}", f"--method_name={options.get('method', 'forward')}",
             "--print_output=none"]
    extra += [f"--input={path}" for path in staged_inputs(ctx.files, _INPUT_KEY)[0]]
    pull: tuple[str, ...] = ()
    if ctx.repetition == 0:
        extra.append(f"--output_dir={ctx.workdir}")
        pull = (MANIFEST, OUTPUTS)
        if test.profile_ops:
            extra.append(f"--etdump_path={ctx.workdir}/{ETDUMP}")
            pull += (ETDUMP,)
    argv = executor_runner_argv(runner, model_path, iterations=max(test.iter, 1),
                                threads=options.get("threads", test.threads), extra=extra)
    argv = bundle_argv(ctx.files, BUNDLE_KEY, argv)
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


def parse_native_output(results: Sequence[CommandResult]) -> ParsedOutput:
    """benchlab's runner's lines and pulled files as samples and details: executor_runner's
    lines, then peak memory, the outputs scored against the reference, per-operator rows."""
    out = read_runner_output(results)
    text, parsed, samples, files, warmup = (out.text, out.parsed, out.samples, out.files,
                                            out.warmup)
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
    variant = runner_variant(text, _VARIANT)
    delegate = variant.get("delegate")
    details.update({k: variant[k] for k in ("delegate", "precision") if k in variant})
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
            add_operator_rows(samples, rows)
    return ParsedOutput(samples=tuple(samples.items), summaries=parsed.summaries,
                        details=details, infos=parsed.infos)


def _local_program(files: Mapping[str, Path], device_path: str) -> Path | None:
    """The host's copy of the program the runner loaded (same file name), if here."""
    name = device_path.rsplit("/", 1)[-1]
    for key, path in files.items():
        if key.startswith("files.") and Path(path).name == name and name.endswith(".pte"):
            return Path(path)
    return None

