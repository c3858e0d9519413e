"""In-process interleaving: one fresh process loads both sides and alternates their calls.

For sides that are Python runtimes measured by benchlab's runner (framework variants,
configurations, two model files): :class:`PairFramework` turns the two sides' runner commands
into one ``python -m benchlab.runner.pair`` command, and :func:`inprocess_session` runs it as
an ordinary job (files fetched and pushed, work directory, timeout) and reads the
:class:`~benchlab.ab.sessions.Session` back. Sides that cannot share a process (two
interpreters, a native tool, other thread settings or environments) raise
:class:`~benchlab.errors.ModeUnavailable` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from benchlab.schema.comparison import Mode
from benchlab.ab.sessions import Session, session_from_blocks
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import ModeUnavailable, TargetError
from benchlab.frameworks.base import NATIVE_BINARY, Invocation, JobContext, RunnerFramework
from benchlab.harness.jobrun import Job, run_job
from benchlab.protocol.lines import ParsedOutput, parse_output
from benchlab.runner.pair import SIDES, SOLO_SIDES
from benchlab.schema.result import DetailKey, Metric, Result
from benchlab.targets.base import CommandResult, Target

__all__ = ["PairFramework", "inprocess_problem", "inprocess_session"]

_RUNNER_MODULE = "benchlab.runner"
# The treatment's model files ride in the pair job under this prefix, so that two sides with
# different files (``Side(model=...)``) are staged together and each side reads its own.
_TREATMENT_FILES = "treatment__"


def inprocess_problem(control: Job, treatment: Job, pythons: Sequence[str | None],
                      target_python: str) -> str | None:
    """Why the two sides cannot share one process, or ``None`` when they can (``pythons``: the
    sides' own interpreters, None for the target's, ``target_python``; ``""``: it has none)."""
    if len(set(pythons)) > 1:
        return "the sides run under different Python interpreters"
    for job, python in zip((control, treatment), pythons, strict=True):
        if not isinstance(job.framework, RunnerFramework):
            return f"{job.identity.framework} is not measured by benchlab's runner"
        if job.config.options.get(NATIVE_BINARY):
            return f"{job.identity.framework} runs a native tool"
        if job.framework.runs_native_runner(python or target_python, job.config.options):
            # The shared process is benchlab's Python runner; a phone without Python runs
            # the runtime's library through benchlab's own native runner, one side a process.
            return (f"{job.identity.framework} runs benchlab's native runner here, not the "
                    "Python runner that interleaves the sides")
        if job.test.commands:
            return "the test runs its own commands"
        if job.test.generate is not None:
            # The pair process alternates single forward passes in blocks; a generation is
            # many calls on one growing cache, which only the generative runner times.
            return "a generative test times whole generations, not single calls"
        if job.test.scenario is not None:
            # LoadGen issues the queries and keeps the clock of a whole run.
            return "a load scenario is timed by LoadGen over whole runs, not single calls"
    threads = {job.config.options.get("threads", job.test.threads) for job in (control, treatment)}
    if len(threads) > 1:
        return "the sides ask for different thread counts, which are settings of the process"
    return None


def _runner_wire(invocations: Sequence[Invocation], side: str) -> tuple[dict, Mapping[str, str]]:
    """One side's runner configuration and environment, from its (single) runner command."""
    if len(invocations) != 1:
        raise ModeUnavailable(f"{side} runs {len(invocations)} commands per repetition")
    argv = invocations[0].argv
    if isinstance(argv, str) or list(argv[1:3]) != ["-m", _RUNNER_MODULE] or len(argv) != 4:
        raise ModeUnavailable(f"{side} does not run benchlab's runner")
    wire = json.loads(argv[3])
    for unused in ("reference", "dump_outputs", "target_ci", "min_time", "max_time",
                   "profile_ops", "layer_errors", "simulated_reference", "layer_reference",
                   "delegation"):
        wire.pop(unused, None)  # the pair process times fixed blocks and checks nothing else
    return wire, invocations[0].env


@dataclass(frozen=True)
class PairFramework:
    """A framework-shaped adapter that runs both sides of a job in one runner process."""

    control: Job
    treatment: Job
    order: str
    loaded_first: str = "c"
    warmup: int = 0
    solo: int = 0
    name: str = "pair"

    def invocations(self, ctx: JobContext) -> list[Invocation]:
        """The pair runner's command, built from each side's own runner command."""
        wires: dict[str, dict] = {}
        envs: list[Mapping[str, str]] = []
        for side, job in (("control", self.control), ("treatment", self.treatment)):
            files = dict(ctx.files)
            if side == "treatment":
                files.update({f"files.{key}": ctx.files[f"files.{_TREATMENT_FILES}{key}"]
                              for key in job.spec.model.files})
            side_ctx = replace(ctx, spec=job.spec, config=job.config, test=job.test,
                               files=files)
            wire, env = _runner_wire(job.framework.invocations(side_ctx), side)
            shared = dict(getattr(job.framework, "shared_process_options", {}))
            # The side's own options win: a thread_pool asked for is measured as asked.
            wires[side] = {**wire, "options": {**shared, **wire.get("options", {})}}
            envs.append(env)
        if dict(envs[0]) != dict(envs[1]):
            raise ModeUnavailable("the sides need different environment variables")
        payload = {**wires, "warmup": self.warmup, "order": self.order,
                   "loaded_first": self.loaded_first, "solo": self.solo}
        argv = [ctx.python, "-m", "benchlab.runner.pair", json.dumps(payload, sort_keys=True)]
        return [Invocation(argv=argv, env=dict(envs[0]))]

    def parse(self, results: Sequence[CommandResult]) -> ParsedOutput:
        """The pair runner's metric lines."""
        return parse_output("\n".join(r.stdout for r in results))


def _times(result: Result, side: str, metric: Metric = Metric.LATENCY) -> list[float]:
    return [s.value for s in result.samples if s.type == side and s.metric == metric]


def inprocess_session(
    control: Job, treatment: Job, target: Target, cache: ArtifactCache, *,
    order: str, loaded_first: str, warmup: int, solo: int = 0,
) -> Session:
    """One fresh process holding both sides; raises :class:`ModeUnavailable` when they
    cannot share one and :class:`TargetError` when the process fails. ``solo`` calls of
    each side are also timed alone (see :mod:`benchlab.runner.pair`)."""
    framework = PairFramework(control, treatment, order, loaded_first, warmup, solo)
    model = control.spec.model
    both = dict(model.files)
    for key, ref in treatment.spec.model.files.items():
        both[_TREATMENT_FILES + key] = replace(ref, key=_TREATMENT_FILES + key)
    job = replace(control, framework=framework,  # type: ignore[arg-type]
                  spec=replace(control.spec, model=replace(model, files=both)))
    result = run_job(job, target, cache)
    if not result.ok:
        raise TargetError(f"the interleaved process failed: {result.status.value}: "
                          f"{result.error}")
    times = {letter: _times(result, side) for letter, side in SIDES.items()}
    cpu = {letter: _times(result, side, Metric.CPU_TIME) for letter, side in SIDES.items()}
    alone = {letter: _times(result, side) for letter, side in SOLO_SIDES.items()}
    detail = result.details.get(DetailKey.INTERLEAVED, {})
    regime = {**detail.get("regime", {}), "process_threads": detail.get("process_threads")}
    return session_from_blocks(Mode.IN_PROCESS, times["c"], times["t"], order, loaded_first,
                               cpu=(cpu["c"], cpu["t"]), solo=(alone["c"], alone["t"]),
                               regime=regime)
