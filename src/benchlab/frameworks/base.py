"""The framework protocol: how benchlab drives one inference runtime.

A framework adapter decides which of a model's files it can run and in which configurations,
builds the command(s) that measure one repetition on a target, and reads what they print.
Adapters never import their runtime: that happens only in the runner process, inside the
adapter's own ``backend`` module.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from benchlab.errors import UsageError
from benchlab.frameworks.common import (
    REFERENCE_KEY,
    SIMULATED_PREFIX,
    distribution_availability,
    file_key_with_suffix,
    is_generative,
)
# The native tool's option names are declared with the other options; their old home is here.
from benchlab.frameworks.options import NATIVE_BINARY, NATIVE_FLAGS, NATIVE_LIBS, FrameworkOption
from benchlab.protocol.lines import ParsedOutput, parse_output
from benchlab.runner.config import InputConfig, RunnerConfig
from benchlab.spec.types import BenchmarkSpec, FrameworkConfig, ModelDef, TestCase
from benchlab.schema.availability import Availability
from benchlab.targets.base import CommandResult

__all__ = [
    "NATIVE_BINARY",
    "NATIVE_FLAGS",
    "NATIVE_LIBS",
    "Framework",
    "Invocation",
    "JobContext",
    "KeptFiles",
    "RunnerFramework",
    "Staging",
    "Unsupported",
    "runner_invocation",
    "runtime_of",
]


@dataclass(frozen=True, slots=True)
class Unsupported:
    """Why a framework cannot run a model (``pytorch`` given only an ``.onnx`` file, say)."""

    reason: str


@dataclass(frozen=True, slots=True)
class KeptFiles:
    """Files a device keeps between jobs (:meth:`RunnerFramework.kept_files`): a runner with
    its libraries, pushed once into a folder named by their content, never into a job's
    working directory. A job finds the folder's device path under ``ctx.files[key]``.

    ``name`` carries the content's digest, so a changed file is a new folder; ``executables``
    are the files made executable there; ``label`` says what it is, for progress lines."""

    key: str
    name: str
    files: Mapping[str, Path]
    executables: tuple[str, ...] = ()
    label: str = ""


class OwnRunner(Protocol):
    """What a framework's own device runner does for its adapter (implemented by
    :class:`~benchlab.frameworks.native.own_runners.CRunner`)."""

    def uses(self, python: str, options: Mapping[str, Any]) -> bool:
        """Whether a job with ``options`` on a target with Python ``python`` runs it."""
        ...

    def stage(self, staging: Staging) -> dict[str, Path]:
        """The files to push beside the job."""
        ...

    def kept(self, staging: Staging) -> KeptFiles | None:
        """The files a phone keeps between jobs."""
        ...

    def why_not_on_arm(self, options: Mapping[str, Any],
                       features: Callable[[], frozenset[str] | None]) -> str | None:
        """Why a job with ``options`` cannot run it on an ARM CPU whose kernel lists
        ``features()`` (None: it can); ``features`` is asked only where the answer depends
        on it."""
        ...


@dataclass(frozen=True, slots=True)
class JobContext:
    """Everything a framework needs to build the commands of one repetition.

    ``files`` maps ``files.KEY`` / ``input_files.KEY`` to paths on the target; ``placeholders``
    is the complete substitution map for the spec's commands (string map included).
    """

    spec: BenchmarkSpec
    test: TestCase
    config: FrameworkConfig
    workdir: str
    python: str
    files: Mapping[str, str]
    placeholders: Mapping[str, str]
    repetition: int = 0
    #: The framework's ``requires`` (its runtime's import name, pip distribution and extra):
    #: the runner is told them, as it never asks the registry. Empty outside it.
    runtime: tuple[str, str, str | None] = ("", "", None)


@dataclass(frozen=True, slots=True)
class Invocation:
    """One command a repetition runs, with the environment variables it needs.

    ``pull`` names files the command writes in the job's working directory, brought back to
    the host after it succeeded (a file it did not write is left out): a device's outputs.
    """

    argv: Sequence[str] | str
    env: Mapping[str, str] = field(default_factory=dict)
    pull: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Staging:
    """What a framework knows of a job's device before its first process, to make the files
    it needs there beyond the model's (:meth:`RunnerFramework.device_files`): a tool built
    for the device's CPU, inputs written as raw tensors.

    ``python`` is the device's Python (``""``: none); ``abi`` its instruction set as it names
    it (``arm64-v8a``, ``aarch64``, ``x86_64``); ``local_files`` the host copies of the
    job's model files; ``scratch`` a folder for files to push (removed once pushed);
    ``cache_root`` the artifact cache's folder; ``progress`` shows a long step's progress;
    ``arm_features`` reads the device's ARM CPU features as its kernel lists them (None: not
    listed), once, only when called: which build of a runner the CPU runs.
    """

    spec: BenchmarkSpec
    test: TestCase
    config: FrameworkConfig
    python: str
    abi: str | None
    local_files: Mapping[str, Path]
    scratch: Path
    cache_root: Path
    progress: Callable[[str], None] = lambda text: None
    arm_features: Callable[[], frozenset[str] | None] = lambda: None


@runtime_checkable
class Framework(Protocol):
    """An inference runtime adapter, registered under the ``benchlab.frameworks`` entry points.

    It should also declare the options it takes as a ``declared_options`` attribute, a tuple of
    :class:`~benchlab.frameworks.options.FrameworkOption` (``()``: none at all): the harness
    refuses any other key, or a value the declaration does not allow, before anything runs,
    and ``benchlab frameworks`` lists them. It is not a member of this protocol, so that a
    plug-in written before declarations still loads; its options then pass unchecked.
    """

    name: str

    def availability(self) -> Availability:
        """Whether the runtime is installed here (checked without importing it)."""
        ...

    def configurations(
        self, model: ModelDef, requested: Sequence[FrameworkConfig]
    ) -> list[FrameworkConfig] | Unsupported:
        """The configurations to measure ``model`` with, or why it cannot be run.

        ``requested`` are this framework's entries from the spec or command line; when empty,
        the framework picks its defaults for the model.
        """
        ...

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """The commands that measure one repetition (one fresh process for runner frameworks)."""
        ...

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """Read the metric lines the repetition's commands printed."""
        ...


def thread_env(threads: int | None) -> dict[str, str]:
    """Environment variables that bound the thread pools of common math libraries."""
    if not threads:
        return {}
    value = str(threads)
    return {name: value for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def runner_invocation(
    ctx: JobContext,
    *,
    backend: str,
    model_path: str | None,
    options: Mapping[str, Any],
    extra_files: Mapping[str, str] | None = None,
    layer_reference: str | None = None,
    generative: bool = False,
) -> Invocation:
    """The command that starts benchlab's runner for one repetition.

    A model file keyed ``reference`` (an ``.npz`` of inputs and expected outputs, see
    :mod:`benchlab.runner.accuracy`) turns on the accuracy check, and one keyed
    ``simulated_<key of the model file>`` the split of its error (quantization, lowering).
    ``extra_files`` are other target paths the backend needs (OpenVINO's weights next to its
    ``.xml``); ``layer_reference`` the model the layer table compares with (``--layer-errors``).

    The runner's whole configuration travels as one JSON argument, so the same command works
    on a host, over ssh or through adb without writing a file first.
    """
    test = ctx.test
    if test.generate is not None and not generative:
        raise UsageError(f"test {test.identifier!r} generates text, and {backend} measures "
                         "forward passes; its framework has no generative backend for this model")
    # A framework option ("-f pytorch:threads=1") beats the test's thread count. Counting
    # runs one thread unless told otherwise: threads that spin or wait for each other execute
    # a number of instructions that depends on timing (docs/statistics.md).
    threads = options.get("threads", test.threads)
    if test.count and threads is None:
        threads = 1
    # The runner's own model is the wire format: a field the runner does not know, or a value
    # it would reject, fails here in the harness, not in every runner process.
    try:
        config = RunnerConfig(
            backend=backend,
            runtime=ctx.runtime[1] or None,
            runtime_module=ctx.runtime[0] or None,
            model_path=model_path,
            entry=ctx.spec.model.entry,
            inputs=[InputConfig(name=i.name, shape=list(i.shape), dtype=i.dtype)
                    for i in test.inputs],
            warmup=test.warmup,
            iterations=test.iter,
            min_time=test.min_time,
            max_time=test.max_time,
            target_ci=test.target_ci,
            threads=threads,
            profile_ops=test.profile_ops,
            count=test.count,
            seed=ctx.repetition,
            options=dict(options),
            extra_files=dict(extra_files or {}),
            reference=ctx.files.get(f"files.{REFERENCE_KEY}"),
            simulated_reference=_simulated_reference(ctx, model_path),
            # The diagnosis is a property of the model and configuration, the same in every
            # process: the job's first process alone pays for it.
            delegation=ctx.repetition == 0,
            layer_errors=test.layer_errors and ctx.repetition == 0,
            layer_reference=layer_reference if test.layer_errors else None,
            generate=test.generate.to_wire() if test.generate else None,
            scenario=test.scenario,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"the runner cannot take these settings: {problems}") from None
    wire = json.dumps(config.model_dump(exclude_defaults=True), sort_keys=True)
    argv = counted([ctx.python, "-m", "benchlab.runner", wire], ctx)
    return Invocation(argv=argv, env={**thread_env(threads), **test.env})


def runtime_of(framework: object) -> tuple[str, str, str | None]:
    """``framework``'s ``requires`` for :attr:`JobContext.runtime` (a framework that drives no
    runtime of its own, ``generic`` or a plug-in without it: empty)."""
    requires = getattr(framework, "requires", None)
    if isinstance(requires, tuple) and len(requires) == 3:
        return requires
    return ("", "", None)


def counted(argv: Sequence[str] | str, ctx: JobContext) -> Sequence[str] | str:
    """``argv`` as the test runs it: under ``python -m benchlab.runner.count`` when the test
    counts instructions (the launcher starts valgrind and turns its dumps into metric lines).
    A command line given as one string stays a shell's to read: ``sh -c`` runs it counted."""
    if not ctx.test.count:
        return argv
    launcher = [ctx.python, "-m", "benchlab.runner.count", ctx.test.count, "--"]
    if isinstance(argv, str):
        return shlex.join([*launcher, "sh", "-c", argv])
    return [*launcher, *argv]


def _simulated_reference(ctx: JobContext, model_path: str | None) -> str | None:
    """The ``simulated_<key>`` file of the model file the runner loads, if the spec has one."""
    keys = [name.removeprefix("files.") for name, path in ctx.files.items()
            if path == model_path and name.startswith("files.")]
    return next((ctx.files[f"files.{SIMULATED_PREFIX}{key}"] for key in keys
                 if f"files.{SIMULATED_PREFIX}{key}" in ctx.files), None)


def _no_scenario(ctx: JobContext, what: str) -> None:
    """A load scenario runs in benchlab's runner, where LoadGen drives the backend: ``what``
    (a native tool, a spec's commands) times itself, so a scenario there is a usage error."""
    if ctx.test.scenario is not None:
        raise UsageError(f"test {ctx.test.identifier!r} asks for the {ctx.test.scenario.name} "
                         f"scenario, which runs in benchlab's runner; {what} cannot run it")


def spec_command_invocations(ctx: JobContext) -> list[Invocation]:
    """The test's own commands, every placeholder substituted, with its thread and environment
    settings: what the ``generic`` framework runs, and FAI-PEP specs for a native tool."""
    from benchlab.spec.placeholders import substitute

    _no_scenario(ctx, "the test's own commands")
    threads = 1 if ctx.test.count and ctx.test.threads is None else ctx.test.threads
    env = {**thread_env(threads), **ctx.test.env}
    return [Invocation(argv=counted(substitute(command, ctx.placeholders), ctx), env=env)
            for command in ctx.test.commands]


class RunnerFramework:
    """Shared behaviour of frameworks measured by benchlab's own runner in a fresh process."""

    name = ""
    #: ``module:Class`` of the runner-side backend, imported only in the runner process.
    backend = ""
    #: ``(module, distribution, extra)``: what must be importable for the framework to run.
    requires: tuple[str, str, str | None] = ("", "", None)
    #: Options added to both sides when they share one process in an interleaved A/B session,
    #: so that each runs there as it runs alone (ONNX Runtime: one intra-op pool for both,
    #: docs/ab.md). Each runtime's choice is measured: docs/detector.md, "Fidelity".
    shared_process_options: Mapping[str, Any] = {}
    #: Every option key the framework takes, with its type, default and allowed values
    #: (:mod:`benchlab.frameworks.options`); any other key is refused before anything runs.
    #: ``None``: nothing declared, options pass unchecked (a plug-in that predates them).
    declared_options: tuple[FrameworkOption, ...] | None = None

    def availability(self) -> Availability:
        """The runtime's module is importable (found, not imported)."""
        module, distribution, extra = self.requires
        return distribution_availability(module, distribution, extra=extra)

    #: benchlab's C runner for the framework (:class:`~benchlab.frameworks.native.
    #: own_runners.CRunner`), which :meth:`device_files`, :meth:`runs_native_runner` and
    #: :meth:`kept_files` ask; None when it has none.
    own_runner: OwnRunner | None = None
    #: ``module:Class`` of the runner-side generative backend
    #: (:class:`benchlab.runner.generate.GenerativeBackend`); empty when there is none.
    generative_backend = ""
    #: The model file key it loads (``None``: it builds ``model.entry``).
    generative_file: str | None = None
    #: The options it reads; any other is an error, never silently ignored.
    generative_options: frozenset[str] = frozenset({"threads"})
    #: Why a runtime without a generative backend has none (measured, in docs/generative.md).
    no_generative_reason = "benchlab has no generative backend for it yet"

    #: Whether it runs text generators only (an LLM library): the planner skips any other
    #: model, installed or not, saying so.
    generative_only = False

    #: ``precision`` value → the model file key a generative backend loads for it, where the
    #: runtime has more than one precision of the decoder (ONNX Runtime: ``int8``).
    generative_precisions: Mapping[str, str] = {}

    def generative_file_key(self, options: Mapping[str, Any]) -> str | None:
        """The model file key the generative backend loads with ``options`` (``None``: it
        builds ``model.entry``)."""
        precision = options.get("precision")
        if precision is not None and str(precision) in self.generative_precisions:
            return self.generative_precisions[str(precision)]
        return self.generative_file

    def generative_defaults(self, model: ModelDef) -> list[FrameworkConfig]:
        """The configurations a text generator gets when none is asked for: the plain one,
        and one per other precision whose file the model has."""
        return [FrameworkConfig(self.name, {})] + [
            FrameworkConfig(self.name, {"precision": precision})
            for precision, key in self.generative_precisions.items()
            if key != self.generative_file and key in model.files]

    def why_not_generative(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """Why ``model``, a text generator, cannot run with ``options`` (``None``: it can)."""
        if not self.generative_backend:
            return f"{self.name} cannot generate text here: {self.no_generative_reason}"
        unknown = sorted(set(options) - self.generative_options)
        if unknown:
            return (f"{self.name}'s generative backend takes no option {', '.join(unknown)} "
                    f"(it takes {', '.join(sorted(self.generative_options))})")
        key = self.generative_file_key(options)
        if key is not None and key not in model.files:
            return f"{self.name} generates from a {key!r} file, which model.files lacks"
        if key is None and not model.entry:
            return f"{self.name} generates from model.entry, which the model lacks"
        return None

    def generative_invocation(self, ctx: JobContext,
                              extra_files: Mapping[str, str] | None = None) -> Invocation:
        """The runner command of one repetition of a generative test (``extra_files``: other
        staged files the backend reads, by name)."""
        why = self.why_not_generative(ctx.spec.model, ctx.config.options)
        if why:
            raise UsageError(why)
        key = self.generative_file_key(ctx.config.options)
        path = self.staged_file(ctx, key) if key else None
        return runner_invocation(ctx, backend=self.generative_backend, model_path=path,
                                 options=ctx.config.options, extra_files=extra_files,
                                 generative=True)

    def configurations(
        self, model: ModelDef, requested: Sequence[FrameworkConfig]
    ) -> list[FrameworkConfig] | Unsupported:
        """``requested``, or the framework's defaults for ``model`` (:meth:`defaults`), when
        :meth:`why_not` finds nothing against any of them; else the first reason. A text
        generator gets one plain configuration by default, judged by
        :meth:`why_not_generative`."""
        if is_generative(model):
            configs = list(requested) or self.generative_defaults(model)
            reason = next(filter(None, (self.why_not_generative(model, c.options)
                                        for c in configs)), None)
            return Unsupported(reason) if reason else configs
        configs = list(requested) or self.defaults(model)
        if isinstance(configs, Unsupported):
            return configs
        for config in configs:
            reason = self.why_not(model, config.options)
            if reason:
                return Unsupported(reason)
        return configs

    def defaults(self, model: ModelDef) -> list[FrameworkConfig] | Unsupported:
        """The configurations measured when none is asked for (one with no options), or why
        the model cannot run here at all (a generative-only runtime: any model not a text
        generator, whose configurations come from :meth:`configurations`)."""
        if self.generative_only:
            return Unsupported(self.generators_only_reason)
        return [FrameworkConfig(self.name, {})]

    def why_not(self, model: ModelDef, options: Mapping[str, Any]) -> str | None:
        """Why ``model`` cannot run with ``options`` (``None``: it can)."""
        return self.generators_only_reason if self.generative_only else None

    @property
    def generators_only_reason(self) -> str:
        """Why a generative-only runtime skips a forward-pass model."""
        return f"{self.name} runs text generators only"

    def chosen_file(self, ctx: JobContext, select: Callable[
            [ModelDef, Mapping[str, Any]], tuple[str | None, str | None]]) -> tuple[str, str]:
        """The key and target path of the model file ``select`` picks for the job's options
        (``(key, None)`` or ``(None, why not)``); a usage error naming why when it picks none."""
        key, why = select(ctx.spec.model, ctx.config.options)
        if key is None:
            raise UsageError(f"{self.name}: {why}")
        return key, self.staged_file(ctx, key)

    def staged_file(self, ctx: JobContext, key: str) -> str:
        """The target path of model file ``key``; a clear error when it was not pushed."""
        path = ctx.files.get(f"files.{key}")
        if path is None:
            raise UsageError(f"{self.name}: model file {key!r} was not staged on the target")
        return path

    def device_files(self, staging: Staging) -> dict[str, Path]:
        """Local files to push into the job's working directory before its first process,
        keyed ``native.NAME`` (the key its :class:`JobContext` finds the device path under).
        With an :attr:`own_runner`, what it stages; else none. A framework that builds its own
        tool for a device without Python builds it here."""
        return {} if self.own_runner is None else self.own_runner.stage(staging)

    def runs_native_runner(self, python: str, options: Mapping[str, Any]) -> bool:
        """Whether a job with ``options`` on a target whose Python is ``python`` (``""``:
        none) runs a runner benchlab builds for the device: as the :attr:`own_runner` says
        (``runner=native``, or ``auto`` without Python), else ``runner=native``."""
        if self.own_runner is not None:
            return self.own_runner.uses(python, options)
        return options.get("runner") == "native"

    def kept_files(self, staging: Staging) -> KeptFiles | None:
        """Files the device keeps between jobs, pushed once by content (a runner bundled
        with its libraries for a phone): the :attr:`own_runner`'s; None by default."""
        return None if self.own_runner is None else self.own_runner.kept(staging)

    def why_not_on_arm(self, python: str, options: Mapping[str, Any],
                       features: Callable[[], frozenset[str] | None]) -> str | None:
        """Why a job with ``options`` cannot run on an ARM device whose kernel lists
        ``features()`` (None where not listed) and whose Python is ``python`` (None: it can),
        asked before anything is exported or pushed: the :attr:`own_runner`'s needs, where the
        job runs it (which of its builds the CPU runs, and whether that build honours
        ``options``). ``features`` is called only where they decide (one shell round trip)."""
        if self.own_runner is None or not self.own_runner.uses(python, options):
            return None
        return self.own_runner.why_not_on_arm(options, features)

    def why_not_without_python(self, model: ModelDef,
                               options: Mapping[str, Any]) -> str | None:
        """Why ``model`` with ``options`` cannot run on a target without Python (None: it
        can), asked before anything is exported or pushed. By default only a native tool
        (``binary=``) runs there."""
        if options.get(NATIVE_BINARY):
            return None
        if is_generative(model):
            return (f"{self.name} generates text in benchlab's Python runner only, and the "
                    "target has no Python")
        if self.native_tool:
            return (f"the target has no Python for benchlab's runner; give the native tool, "
                    f"e.g. -f {self.name}:{NATIVE_BINARY}=PATH/{self.native_tool}")
        return f"{self.name} runs in benchlab's Python runner only, and the target has no Python"

    #: The native tool's name, and its output parser (``text -> ParsedOutput``), if any.
    native_tool = ""
    native_parser: Callable[[str], ParsedOutput] | None = None
    #: Whether a spec's own commands run as written, their output read by ``native_parser``:
    #: FAI-PEP's specs for this format call the native tool themselves (``{program} ...``).
    runs_spec_commands = False

    def native_binary(self, ctx: JobContext) -> str | None:
        """The native tool to run instead of the runner, or None to use the runner.

        A target without Python (a phone) needs one: the error says which option to give.
        """
        given = ctx.config.options.get(NATIVE_BINARY)
        if given is None:
            if not ctx.python and self.native_tool:
                raise UsageError(
                    f"{self.name}: the target has no Python for benchlab's runner; give the "
                    f"native tool, e.g. -f {self.name}:{NATIVE_BINARY}=PATH/{self.native_tool}"
                )
            return None
        return ctx.files.get(f"native.{NATIVE_BINARY}") or str(given)

    @staticmethod
    def native_flags(ctx: JobContext) -> list[str]:
        """The native tool's own extra flags, from the ``flags`` option (space-separated)."""
        return str(ctx.config.options.get(NATIVE_FLAGS, "")).split()

    def native_invocation(self, ctx: JobContext, argv: Sequence[str], *,
                          before: Sequence[str] = (), after: str = "") -> Invocation:
        """The native tool's command: made executable first (``adb push``/``cat`` may drop the
        mode bits), with the test's thread and environment settings. ``before`` are shell
        commands run first (linking files into place); ``after`` runs once the tool succeeded
        (printing a report file it wrote)."""
        _no_scenario(ctx, f"{self.name}'s native tool ({os.path.basename(argv[0])})")
        binary = shlex.quote(argv[0])
        run = quote_command(argv) + (f" && {after}" if after else "")
        command = "; ".join([*before, f"[ -x {binary} ] || chmod +x {binary} 2>/dev/null", run])
        return Invocation(argv=command, env={**thread_env(ctx.test.threads), **ctx.test.env})

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """The runner's metric lines on stdout; a native tool's own report otherwise."""
        stdout = "\n".join(r.stdout for r in results)
        parsed = parse_output(stdout)
        if parsed.metric_lines or self.native_parser is None:
            return parsed
        # Native tools print to stdout or stderr (and some only to logcat).
        text = "\n".join(part for r in results for part in (r.stdout, r.stderr, r.log))
        return self.native_parser(text)

    def model_file(self, ctx: JobContext, suffixes: tuple[str, ...]) -> str | None:
        """The target path of the first model file whose name ends with one of ``suffixes``."""
        key = file_key_with_suffix(ctx.spec.model, suffixes)
        return None if key is None else ctx.files.get(f"files.{key}")


def quote_command(argv: Sequence[str]) -> str:
    """A shell-safe rendering of ``argv`` for logs and remote shells."""
    return " ".join(shlex.quote(a) for a in argv)
