"""What goes into benchlab's own native runners and what comes back, read on the host.

``benchlab-et-runner`` and ``benchlab-ort-runner`` (:mod:`benchlab.devicetools`) take
``executor_runner``'s flags and print its lines, with a few of their own: the iterations in
all beside the timed ones (so the warm-ups are known), the peak resident memory, and a
variant line echoed after the runner with what the file cannot tell it (precision, delegate).

* in: the reference's input sets as raw little-endian tensor files, one per input, every set
  the runner runs back to back (:func:`reference_input_files`);
* out: every output in one ``outputs.bin`` with a manifest, ``outputs.json``
  (:mod:`benchlab.protocol.tensorfiles`); the first input set's outputs are named
  ``output<i>``, input set k's ``set<k>.output<i>`` (the ONNX Runtime runner runs every
  reference set, the ExecuTorch runner the first), scored by :func:`score_runner_outputs`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.devicetools.cache import BuiltTools
from benchlab.devicetools.elf import architecture_of_abi, is_android_abi
from benchlab.devicetools.glibcbundle import glibc_bundle
from benchlab.devicetools.prepare import device_tools_dir
from benchlab.errors import UsageError
from benchlab.frameworks.base import Invocation, JobContext, KeptFiles, RunnerFramework, Staging
from benchlab.frameworks.native.common import SampleList
from benchlab.frameworks.native.executor_runner import executor_runner_argv, parse_executor_runner
from benchlab.protocol.lines import ParsedOutput
from benchlab.protocol.tensorfiles import read_tensors
from benchlab.runner.accuracy import ERROR_METRICS, error_stats, load_reference, stack_sets
from benchlab.schema.result import Metric
from benchlab.targets.base import CommandResult

__all__ = ["MANIFEST", "OUTPUTS", "RUNNERS", "CRunner", "RunnerBuild", "RunnerOutput",
           "add_operator_rows", "bundle_argv", "feature_guard", "kept_bundle",
           "read_runner_output", "reference_input_files", "reference_sets",
           "runner_architecture", "runner_variant", "score_runner_outputs", "staged_inputs",
           "staged_runner", "wants_own_runner"]

#: A framework's ``runner=`` choices where benchlab has its own runner for it.
RUNNERS = ("auto", "python", "native")

#: The manifest and the data file a native runner writes into its output folder.
MANIFEST, OUTPUTS = "outputs.json", "outputs.bin"
_ITERATIONS = re.compile(r"Iteration \d+ of (\d+):")
_TIMED = re.compile(r"Model executed successfully (\d+) time\(s\)")
_PEAK = re.compile(r"^Peak resident memory: (\d+) KiB", re.M)
#: An input file's name says how many sets it holds: a runner checks its size by it.
_SETS = re.compile(r"-sets(\d+)\.bin$")
InputSets = Callable[[Path], list[dict[str, np.ndarray]]]


def wants_own_runner(framework: str, python: str, options: Mapping[str, Any]) -> bool:
    """Whether a job runs benchlab's own runner: ``runner=native``, or ``auto`` (the default)
    on a target without Python (``python`` empty) when no ``binary=`` (a user's own tool) is
    given. Where the target has Python, ``auto`` runs the runtime's Python binding."""
    runner = str(options.get("runner", "auto"))
    if runner not in RUNNERS:
        raise UsageError(f"{framework} runner must be one of {', '.join(RUNNERS)}, not "
                         f"{runner!r}")
    return runner == "native" or (runner == "auto" and not python
                                  and options.get("binary") is None)


def kept_bundle(tools: BuiltTools, program: str, cache_root: Path, *, key: str, tag: str,
                what: str) -> KeptFiles:
    """``program`` of ``tools`` bundled with what it loads and glibc
    (:func:`~benchlab.devicetools.glibcbundle.glibc_bundle`), as files a phone keeps by
    content between jobs, under ``key``; ``what`` says whose libraries they are."""
    bundle = glibc_bundle(tools, program, cache_root)
    return KeptFiles(key=key, name=bundle.device_folder(f"{tag}-{tools.architecture}"),
                     files=bundle.files, executables=(bundle.loader, bundle.program),
                     label=f"{program} with {what} and glibc "
                           f"({bundle.size / 2**20:.1f} MiB)")


def staged_runner(framework: str, files: Mapping[str, str], runner_key: str, bundle_key: str,
                  program: str) -> str:
    """The device path of the runner a job's files hold: pushed beside the job
    (``runner_key``), or in the phone's kept bundle (``bundle_key/program``)."""
    runner = files.get(runner_key) or files.get(f"{bundle_key}/{program}")
    if runner is None:
        raise UsageError(f"{framework}: benchlab's runner was not staged on the target")
    return runner


def bundle_argv(files: Mapping[str, str], key: str, argv: list[str]) -> list[str]:
    """``argv`` as the job starts it: where the runner is in the phone's bundle (``key``),
    through glibc's loader, run as a program, which loads the runner and every library from
    the bundle's folder, nothing of the phone's own C library; elsewhere as it is."""
    if key not in files:
        return argv
    folder = files[key]
    loader = next(path for name, path in files.items() if name.startswith(f"{key}/ld-"))
    return [loader, "--library-path", folder, *argv]


def runner_architecture(framework: str, abi: str | None) -> str:
    """The CPU to build ``framework``'s runner for, from the target's ABI."""
    architecture = architecture_of_abi(abi)
    if architecture is None:
        raise UsageError(f"{framework}: cannot tell the target's CPU (ABI {abi!r}), so "
                         "there is nothing to build its runner for")
    return architecture


def reference_input_files(reference: Path, cache_root: Path, tag: str, key_prefix: str,
                          input_sets: InputSets) -> dict[str, Path]:
    """The reference's input sets (``input_sets(reference)``: a list of name → array, the
    same names in each) as raw files by ``key_prefix<i>``, in the reference's input order,
    each file every set's values of that input back to back. Kept under ``cache_root`` by the
    reference's content (the host target links files into a job's folder rather than copying
    them, so they must outlive the staging scratch); no sets, no files (the runner feeds
    ones)."""
    digest = hashlib.sha256(reference.read_bytes()).hexdigest()[:16]
    folder = cache_root / "inputs" / f"{tag}-sets-{digest}"
    done = folder / "inputs.done"
    if not done.is_file():
        sets = input_sets(reference)
        folder.mkdir(parents=True, exist_ok=True)
        for index, name in enumerate(sets[0] if sets else {}):
            tmp = folder / f"{tag}-input-{index}.bin.tmp"
            with open(tmp, "wb") as handle:
                for one in sets:
                    value = np.ascontiguousarray(one[name])
                    handle.write(value.astype(value.dtype.newbyteorder("<"), copy=False)
                                 .tobytes())
            tmp.replace(folder / f"{tag}-input-{index}-sets{len(sets)}.bin")
        # Last: a cut write leaves no finished folder.
        done.write_text(f"{len(sets[0]) if sets else 0} {len(sets)}\n")
    count, sets_count = (int(n) for n in done.read_text().split())
    return {f"{key_prefix}{i}": folder / f"{tag}-input-{i}-sets{sets_count}.bin"
            for i in range(count)}


def reference_sets(reference: Path) -> list[dict[str, np.ndarray]]:
    """Every input set of ``reference`` the Python runner scores: the first, and each further
    one with outputs (the ONNX Runtime and LiteRT runners run them all); none for a file that
    is not a forward pass's reference (the runner then feeds ones)."""
    try:
        loaded = load_reference(reference)
    except (OSError, ValueError, KeyError):
        return []
    sets = [loaded.inputs] if loaded.inputs else []
    if sets and loaded.outputs:
        sets += [dict(more) for more, outs in loaded.more
                 if outs and list(more) == list(loaded.inputs)]
    return sets


def staged_inputs(files: Mapping[str, str], key_prefix: str) -> tuple[list[str], int]:
    """The staged input files in input order and how many sets each holds."""
    keys = sorted((int(k[len(key_prefix):]), k) for k in files if k.startswith(key_prefix))
    paths = [files[k] for _, k in keys]
    sets = {int(m.group(1)) for path in paths if (m := _SETS.search(str(path)))}
    return paths, max(sets, default=1)


@dataclass(frozen=True)
class RunnerOutput:
    """A runner's results read as far as every own runner's are the same: ``executor_runner``'s
    lines (``parsed``), the samples with the peak memory, the warm-ups, the pulled files."""

    text: str
    parsed: ParsedOutput
    warmup: int
    samples: SampleList = field(default_factory=SampleList)
    files: dict[str, Path] = field(default_factory=dict)


def read_runner_output(results: Sequence[CommandResult]) -> RunnerOutput:
    """The text of ``results`` (stdout and stderr) read into a :class:`RunnerOutput`."""
    text = "\n".join(part for r in results for part in (r.stdout, r.stderr))
    total = [int(m) for m in _ITERATIONS.findall(text)]
    timed = [int(m) for m in _TIMED.findall(text)]
    warmup = max(total[0] - timed[0], 0) if total and timed else 0
    out = RunnerOutput(text, parse_executor_runner(text, warmup_iterations=warmup), warmup)
    for sample in out.parsed.samples:
        out.samples.add(sample.type, sample.metric, sample.value, sample.unit)
    for match in _PEAK.finditer(text):
        out.samples.add("NET", Metric.MEMORY_PEAK, int(match.group(1)) / 1024.0, "MiB")
    for result in results:
        out.files.update(result.files)
    return out


def runner_variant(text: str, prefix: str) -> dict[str, str]:
    """The variant line (``prefix`` and a JSON object) echoed after the runner, or {}."""
    for line in text.splitlines():
        if line.startswith(prefix):
            try:
                value = json.loads(line[len(prefix):])
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    return {}


def add_operator_rows(samples: SampleList, rows: Sequence[Mapping[str, float]]) -> None:
    """Per-operator rows (one per timed run: operator → ms) as latency samples."""
    for row in rows:
        for op, ms in row.items():
            samples.add(op, Metric.LATENCY, ms, "ms")


def score_runner_outputs(files: Mapping[str, Path], samples: SampleList,
                         details: dict[str, Any]) -> None:
    """The outputs the runner handed back, against the model's reference (when both are
    here): the error statistics the Python runner prints, over the reference sets it ran."""
    if MANIFEST not in files:
        return
    try:
        tensors = read_tensors(files[MANIFEST], files)
    except ValueError as exc:
        details["accuracy_skipped"] = f"the runner's outputs do not read: {exc}"
        return
    got: list[list[np.ndarray]] = [[]]
    for name, array in tensors.items():
        k = int(name[3:name.index(".")]) if name.startswith("set") else 0
        got += [[] for _ in range(k + 1 - len(got))]
        got[k].append(array)
    details["outputs"] = [{"index": i, "sizes": list(a.shape)} for i, a in enumerate(got[0])]
    reference_file = files.get("files.reference")
    if reference_file is None:
        return
    try:
        reference = load_reference(reference_file)
    except (OSError, ValueError, KeyError):
        return
    if not reference.outputs:
        return
    want = [reference.outputs, *(outs for _, outs in reference.more if outs)][:len(got)]
    got = got[:len(want)]
    try:
        stats = error_stats(stack_sets(got), stack_sets(want), reference.task)
    except ValueError as exc:
        details["accuracy_skipped"] = f"the outputs do not pair with the reference's: {exc}"
        return
    details["reference_sets"] = len(got)
    details["reference_task"] = reference.task
    for metric, value in stats.items():
        samples.add("NET", metric, value, ERROR_METRICS[metric])


def feature_guard(feature: str, why: str) -> str:
    """A shell command that ends a job saying ``why`` where the ARM CPU's kernel lists its
    features without ``feature``: the check a job makes itself where the plan could not."""
    return (f"if grep -q '^Features' /proc/cpuinfo && ! grep -qw {feature} /proc/cpuinfo; "
            f"then echo {shlex.quote(why)} >&2; exit 1; fi")


def _honours_every_option(options: Mapping[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class RunnerBuild:
    """One build of a C runner, over one library: how it is built, whose library it loads
    and what that library asks of an ARM CPU. Its files are keyed by ``tag``:
    ``native.<tag>_runner`` and ``native.<tag>_library`` beside a job, ``kept.<tag>_bundle``
    on a phone, whose folder is named ``<tag>-<architecture>-<digest>``."""

    tag: str
    #: ``build(architecture, cache_root, progress=...)``: the runner and its library (the
    #: entry's other program), from its cache.
    build: Callable[..., BuiltTools]
    #: Whose library it loads, for the bundle's label ("ONNX Runtime 1.32.0's C library").
    what: str
    #: ARM CPU features its aarch64 library runs without checking for them, each with why a
    #: CPU without it cannot run it (LiteRT-LM's library: ``lrcpc``).
    arm_needs: Mapping[str, str] = field(default_factory=dict)
    #: Why it cannot honour a job's options where the runner could (None: it can): an option
    #: its library lacks (Debian's TensorFlow Lite: XNNPACK).
    why_not: Callable[[Mapping[str, Any]], str | None] = _honours_every_option

    @property
    def bundle_key(self) -> str:
        return f"kept.{self.tag}_bundle"

    @property
    def runner_key(self) -> str:
        return f"native.{self.tag}_runner"

    def guards(self) -> list[str]:
        """The job's own checks of :attr:`arm_needs`, run before the runner."""
        return [feature_guard(feature, why) for feature, why in self.arm_needs.items()]


@dataclass(frozen=True)
class CRunner:
    """One of benchlab's C runners over one library of a runtime (ONNX Runtime's, LiteRT's):
    how a job stages it, keeps it on a phone and starts it, the same for each. ``builds``
    are its builds, each over another library, in the order a CPU takes them: the first
    whose :attr:`RunnerBuild.arm_needs` the device's ARM CPU lists (the first where the
    features are not listed, or nothing needs one). Its inputs are keyed
    ``native.<tag>_input.<i>``."""

    framework: str
    program: str
    builds: tuple[RunnerBuild, ...]
    tag: str
    #: Why the runner cannot honour a job's options (None: it can).
    why_not: Callable[[Mapping[str, Any]], str | None]
    #: The file a profiled run writes in its working folder.
    profile: str

    @property
    def bundle_key(self) -> str:
        """The kept folder's key of the first build (the one a CPU takes by default)."""
        return self.builds[0].bundle_key

    def uses(self, python: str, options: Mapping[str, Any]) -> bool:
        """Whether a job runs this runner (:func:`wants_own_runner`)."""
        return wants_own_runner(self.framework, python, options)

    def refuse_unsupported(self, options: Mapping[str, Any]) -> None:
        """A :class:`UsageError` saying why the runner cannot honour ``options``."""
        if why := self.why_not(options):
            raise UsageError(why)

    def build_for(self, features: Callable[[], frozenset[str] | None]
                  ) -> tuple[RunnerBuild | None, str | None]:
        """The build an ARM CPU whose kernel lists ``features()`` runs (None where the
        features are not listed: the first), or None and why no build's library runs there.
        ``features`` is called only where a build needs one, so a device is not asked for
        nothing."""
        first = self.builds[0]
        if not any(build.arm_needs for build in self.builds) or (listed := features()) is None:
            return first, None
        for build in self.builds:
            if all(feature in listed for feature in build.arm_needs):
                return build, None
        return None, next(why for feature, why in first.arm_needs.items()
                          if feature not in listed)

    def why_not_on_arm(self, options: Mapping[str, Any],
                       features: Callable[[], frozenset[str] | None]) -> str | None:
        """Why a job with ``options`` cannot run on an ARM CPU whose kernel lists
        ``features()`` (None: it can, or its features are not listed): no build's library
        runs there, or the one that does cannot honour an option."""
        build, why = self.build_for(features)
        return why if build is None else build.why_not(options)

    def why_not_without_python(self, options: Mapping[str, Any]) -> str | None:
        """Why a forward pass with ``options`` needs the target's Python (None: this runner
        runs it there): ``runner=python``, or an option the runner cannot honour."""
        if str(options.get("runner", "auto")) == "python":
            return (f"{self.framework}: runner=python runs the Python binding, and the target "
                    "has no Python (runner=auto or native runs benchlab's runner)")
        if why := self.why_not(options):
            return f"{why}; and the target has no Python"
        return None

    def _chosen(self, staging: Staging) -> RunnerBuild:
        """The build the job's device runs; a :class:`UsageError` where none runs it or the
        one that does cannot honour the job's options (the plan says so before; a job made
        without a plan, ``benchlab.outputs``, learns it here)."""
        build, why = self.build_for(staging.arm_features)
        if build is not None and not (why := build.why_not(staging.config.options)):
            return build
        raise UsageError(str(why))

    def stage(self, staging: Staging) -> dict[str, Path]:
        """The runner built for the target's CPU and the library it loads (on a phone they
        come in the kept bundle instead), and the reference's input sets as raw files;
        nothing when the job does not run the runner."""
        options = staging.config.options
        if not self.uses(staging.python, options):
            return {}
        self.refuse_unsupported(options)
        build = self._chosen(staging)
        root = device_tools_dir(Path(staging.cache_root))
        files: dict[str, Path] = {}
        if not is_android_abi(staging.abi):
            tools = build.build(runner_architecture(self.framework, staging.abi), root,
                                progress=staging.progress)
            [library] = [name for name in tools.programs if name != self.program]
            files = {build.runner_key: tools.program(self.program),
                     f"native.{build.tag}_library": tools.program(library)}
        reference = staging.local_files.get("files.reference")
        if reference is not None:
            files.update(reference_input_files(Path(reference), root, self.tag,
                                               f"native.{self.tag}_input.", reference_sets))
        return files

    def kept(self, staging: Staging) -> KeptFiles | None:
        """On an Android phone: the runner bundled with its library and glibc, kept there by
        content between jobs; None elsewhere."""
        options = staging.config.options
        if not self.uses(staging.python, options) or not is_android_abi(staging.abi) \
                or self.why_not(options):
            return None  # stage says why the options cannot run
        build = self._chosen(staging)
        root = device_tools_dir(Path(staging.cache_root))
        tools = build.build(runner_architecture(self.framework, staging.abi), root,
                            progress=staging.progress)
        return kept_bundle(tools, self.program, root, key=build.bundle_key, tag=build.tag,
                           what=build.what)

    def staged_build(self, files: Mapping[str, str]) -> RunnerBuild:
        """The build a job's staged ``files`` hold (beside the job, or a phone's bundle)."""
        for build in self.builds:
            if build.runner_key in files or build.bundle_key in files:
                return build
        raise UsageError(f"{self.framework}: benchlab's runner was not staged on the target")

    def invocation(self, framework: RunnerFramework, ctx: JobContext, model_path: str, *,
                   flags: Sequence[str], threads: Any, variant: str,
                   before: Sequence[str] = ()) -> Invocation:
        """The runner's command for one repetition: ``flags`` of its own, the staged inputs,
        and on the first repetition its outputs (and its profile, with ``profile_ops``)
        handed back; ``variant`` (a line) is echoed after it for the parser. ``threads``
        unset or 0: the runtime's own choice."""
        build = self.staged_build(ctx.files)
        runner = staged_runner(self.framework, ctx.files, build.runner_key, build.bundle_key,
                               self.program)
        self.refuse_unsupported(ctx.config.options)
        extra = [f"--warmup={ctx.test.warmup}", *flags]
        inputs, sets = staged_inputs(ctx.files, f"native.{self.tag}_input.")
        extra += [f"--input={path}" for path in inputs]
        if sets > 1:
            extra.append(f"--input_sets={sets}")
        pull: tuple[str, ...] = ()
        if ctx.repetition == 0:
            extra.append(f"--output_dir={ctx.workdir}")
            pull = (MANIFEST, OUTPUTS)
            if ctx.test.profile_ops:
                extra.append(f"--profile_path={ctx.workdir}/{self.profile}")
                pull += (self.profile,)
        argv = executor_runner_argv(runner, model_path, iterations=max(ctx.test.iter, 1),
                                    threads=int(threads) if threads else None, extra=extra)
        argv = bundle_argv(ctx.files, build.bundle_key, argv)
        # The staged build's own checks first: where the plan could not read the CPU's
        # features, a library the CPU cannot run ends the job saying so, not by SIGILL.
        return replace(framework.native_invocation(ctx, argv, before=[*build.guards(), *before],
                                                   after="echo " + shlex.quote(variant)),
                       pull=pull)
