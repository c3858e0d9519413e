"""Lock-step sessions: two live programs, one per side, stepped one timed iteration at a time.

Both sides' commands are built as the ``generic`` framework builds them for one repetition
(the spec's one command, placeholders and ``{program}`` from the side's string map, files
fetched and linked into a work directory), then started with ``BENCHLAB_STEP=1``: each does
its setup and prints ``BENCHLAB_STEP ready`` (docs/ab.md, "The step protocol"). The side
started first alternates from session to session, and the second starts only once the first
is ready, so neither setup disturbs the other. Warm-up steps alternate between the sides and
are discarded; then each block asks one side for one step and the other side for the next,
in the order given (``c``: control first), and reads back each step's latency metric line.
Each step is one iteration of a process that is already warm, run right after (or before)
the other side's, so the pair shares the machine's state.

Each program is a :class:`~benchlab.ab.stepped.SteppedProgram`. Nothing waits without a
deadline: the ready line and every step must come within the test's timeout. A program that
does not speak the protocol (it exits, prints metric lines of its own loop or stays silent
before ``ready``, or prints latency lines nobody asked for) raises
:class:`~benchlab.errors.ModeUnavailable`, so ``compare`` can fall back to fresh-process
pairs; one that crashes, hangs or prints garbage after ``ready`` raises
:class:`~benchlab.errors.TargetError`. Both process groups are killed and the work
directories removed whatever happens.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from benchlab.schema.comparison import Mode
from benchlab.ab.sessions import Session, session_from_blocks
from benchlab.ab.stepped import StepCommand, SteppedProgram
from benchlab.errors import ModeUnavailable, TargetError, UsageError
from benchlab.frameworks.base import JobContext, runtime_of
from benchlab.harness.hoststeps import HOSTDIR, HostSteps, StepFailure
from benchlab.schema.result import Status
from benchlab.protocol.step import ENV, STOP

if TYPE_CHECKING:
    from benchlab.spec.artifacts import ArtifactCache
    from benchlab.harness.jobrun import Job
    from benchlab.targets.base import Target

__all__ = ["lockstep_session"]


def _host_flow(job: Job) -> bool:
    """Whether the job needs FAI-PEP's host steps around each repetition (not steppable)."""
    spec, test = job.spec, job.test
    files = [*spec.model.files.values(), *test.input_files.values()]
    return bool(spec.model.preprocess or spec.model.postprocess or test.preprocess
                or test.postprocess or test.output_files
                or any(f"{{{HOSTDIR}}}" in ref.location for ref in files)
                or any(f"{{{HOSTDIR}}}" in command for command in test.commands))


def _prepare(job: Job, label: str, target: Target, index: int, steps: HostSteps,
             workdirs: list[str]) -> StepCommand:
    """One side's command for repetition ``index``, built as ``run_job`` builds it."""
    if job.framework.name != "generic":
        raise ModeUnavailable(f"{label}: lock-step steps the commands of the generic "
                              f"framework; this job runs {job.framework.name!r}")
    if _host_flow(job):
        raise ModeUnavailable(f"{label}: lock-step does not run FAI-PEP's host "
                              "pre/postprocess steps or output files")
    local = steps.fetch()
    workdir = target.make_workdir(job.identity.key)
    workdirs.append(workdir)
    files = {key: target.push(path, workdir, path.name if key.startswith("input_files.")
                              else None) for key, path in local.items()}
    try:
        steps.start(target, workdir, files)
        staged = steps.before(index)
    except StepFailure as exc:
        if exc.status is Status.USER_ERROR:
            raise UsageError(f"{label}: {exc.reason}") from None
        raise TargetError(f"{label}: {exc.reason}") from None
    ctx = JobContext(spec=job.spec, test=job.test, config=job.config, workdir=workdir,
                     python=target.python_executable(), files=staged.files,
                     placeholders=staged.placeholders, repetition=index,
                     runtime=runtime_of(job.framework))
    invocations = job.framework.invocations(ctx)
    if len(invocations) != 1:
        raise ModeUnavailable(f"{label}: lock-step needs exactly one command per test "
                              f"(this test has {len(invocations)})")
    (invocation,) = invocations
    return StepCommand(
        label=label, argv=invocation.argv,
        env={**os.environ, **invocation.env, ENV: "1"}, cwd=workdir,
        cpu_list=job.test.cpu_list, memory_limit=job.test.memory_limit,
    )


def _solo_steps(program: SteppedProgram, warmup: int, solo: int, wait: float) -> list[float]:
    """``solo`` timed steps of a program running alone, after as many untimed ones (or
    ``warmup``, if more): its first steps would otherwise read as a faster neighbour."""
    for _ in range(max(warmup, solo)):
        program.step(wait)
    return [program.step(wait) for _ in range(solo)]


def _step_session(programs: list[SteppedProgram], order: str, first: int, warmup: int,
                  solo: int, wait: float, park: bool,
                  ) -> tuple[tuple[list[float], list[float]], tuple[list[float], list[float]]]:
    """Start both programs (``first`` first), warm up, step them block by block in ``order``
    and stop them; returns each side's timed steps and its solo steps."""
    starting = (first, 1 - first)
    alone: tuple[list[float], list[float]] = ([], [])

    def step(which: int) -> float:
        program = programs[which]
        program.resume()
        value = program.step(wait)
        if park:
            program.park()
        return value

    for which in starting:
        programs[which].start()
        programs[which].wait_ready(wait)
        if solo and which == first:
            alone[which].extend(_solo_steps(programs[which], warmup, solo, wait))
        if park:
            programs[which].park()
    for n in range(warmup):
        for which in starting if n % 2 == 0 else starting[::-1]:
            step(which)
    times: tuple[list[float], list[float]] = ([], [])
    for letter in order:
        for which in (0, 1) if letter == "c" else (1, 0):
            times[which].append(step(which))
    if solo:
        programs[first].stop(wait)
        second = programs[1 - first]
        second.resume()
        alone[1 - first].extend(_solo_steps(second, warmup, solo, wait))
        second.stop(wait)
    else:
        for program in programs:
            program.resume()
            program.send(STOP)
        for program in programs:
            program.finish(wait)
    return times, alone


def lockstep_session(
    pair_jobs: tuple[Job, Job],
    labels: tuple[str, str],
    string_maps: tuple[Mapping[str, str], Mapping[str, str]],
    target: Target,
    cache: ArtifactCache,
    *,
    order: str,
    started_first: str = "c",
    warmup: int = 0,
    timeout: float | None = None,
    index: int = 0,
    solo: int = 0,
    park: bool = True,
) -> Session:
    """One lock-step session of a job: one step per side in each block of ``order``.

    ``pair_jobs``, ``labels`` and ``string_maps`` are (control, treatment): the jobs as
    :func:`~benchlab.ab.sides.side_job` makes them, the sides' labels (errors name them) and
    their placeholders (``{program}``). ``order`` has one letter per block, ``c`` when the
    control steps first (:func:`~benchlab.ab.sessions.balanced_orders`); ``started_first``
    (``c`` or ``t``) starts and readies first, and leads the ``warmup`` alternating warm-up
    steps per side, which are discarded; ``timeout`` bounds the wait for each ready line and
    each step (default: the test's timeout); ``index`` is the session's number, the
    repetition the commands see (``{INDEX}``).

    ``park`` stops the idle side's process group (SIGSTOP) while the other steps and
    continues it (SIGCONT) for its own step: two live runtimes whose idle threads spin would
    otherwise each run at up to twice their solo latency on a small machine. ``solo`` steps
    of each side are also timed alone: the side started first before the other starts, the
    other after the first has exited, each after as many untimed steps (``warmup``, or
    ``solo`` if more); they are the session's solo calls, set beside its interleaved ones to
    measure fidelity.

    Raises :class:`~benchlab.errors.ModeUnavailable` when lock-step cannot measure these sides:
    a target other than the host, a framework other than ``generic``, FAI-PEP host steps, not
    exactly one command, or a program that does not speak the step protocol (it could not
    start, exited, printed a metric line or stayed silent before ``ready``, or printed a
    latency line it was not asked for after it). Raises
    :class:`~benchlab.errors.TargetError` naming the side when a program crashes, hangs,
    prints a malformed or non-time latency line, or exits uncleanly after ``stop``. Errors of
    fetching the spec's files propagate as the artifact cache raises them
    (:class:`~benchlab.errors.UserError`, :class:`~benchlab.errors.DownloadError`).
    """
    if target.name != "host":
        raise ModeUnavailable("lock-step runs on the host target only for now")
    if not order or set(order) - {"c", "t"} or started_first not in ("c", "t") or warmup < 0:
        raise ValueError(f"a session needs an order of c/t letters, started_first c or t and "
                         f"warmup >= 0 (got {order!r}, {started_first!r}, {warmup})")
    wait = timeout if timeout is not None else max(job.test.timeout for job in pair_jobs)
    host_steps = [HostSteps(job.spec, job.test, cache, string_map)
                  for job, string_map in zip(pair_jobs, string_maps, strict=True)]
    workdirs: list[str] = []
    programs: list[SteppedProgram] = []
    try:
        commands = [_prepare(job, label, target, index, steps, workdirs)
                    for job, label, steps in zip(pair_jobs, labels, host_steps, strict=True)]
        programs = [SteppedProgram(command) for command in commands]
        times, alone = _step_session(programs, order, "ct".index(started_first), warmup,
                                     solo, wait, park)
        idle = {"idle": "parked (SIGSTOP)" if park else "live"}
        return session_from_blocks(Mode.LOCKSTEP, times[0], times[1], order,
                                   loaded_first=started_first, solo=alone,
                                   regime={"control": idle, "treatment": idle})
    finally:
        for program in programs:
            program.kill()
        for steps in host_steps:
            steps.close()
        for workdir in workdirs:
            target.remove_workdir(workdir)
