"""Run one job: fetch its files, run its repetitions on the target, turn output into a result.

Whatever a runtime does (crash, hang, out of memory, garbage on stdout) ends here as a
:class:`~benchlab.schema.result.Result` with a status and a reason; nothing a job does can raise
out of :func:`run_job` except a bug in benchlab itself or a ``KeyboardInterrupt``.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlab.spec.artifacts import ArtifactCache
from benchlab.energy.session import EnergySession, EnergySettings
from benchlab.harness.devicefit import ArmFeatures
from benchlab.harness.devicestate import GateOutcome, capture_state, state_flags, wait_until_cool
from benchlab.errors import DownloadError, InfrastructureError, UserError
from benchlab.devicetools.elf import abi_of, refuse_wrong_architecture
from benchlab.frameworks.base import (
    NATIVE_BINARY,
    Framework,
    Invocation,
    JobContext,
    Staging,
    runtime_of,
)
from benchlab.harness.exitstatus import ended_after_its_results, failure_of
from benchlab.harness.keptfiles import push_device_files
from benchlab.harness.hoststeps import HostSteps, StepFailure, merge_parsed, renumbered
from benchlab.harness.cachewipe import wipe_caches
from benchlab.harness.nativefiles import (
    NativeFiles,
    code_size_samples,
    job_libraries,
    with_library_path,
)
from benchlab.stats.race import Standing
from benchlab.schema.result import (
    LATENCY_KEY,
    DetailKey,
    EnvKey,
    JobIdentity,
    Metric,
    Result,
    Sample,
    Status,
    StopReason,
    Summary,
    group_samples,
)
from benchlab.spec.types import BenchmarkSpec, FrameworkConfig, TestCase
from benchlab.schema.settings import DEFAULT_TIME_BUDGET_S
from benchlab.stats.summary import summarize
from benchlab.schema.units import convert
from benchlab.targets.base import CommandResult, RunRequest, Target

__all__ = [
    "Job",
    "JobMeasurement",
    "fetch_files",
    "run_job",
    "summarize_samples",
]

_TAIL_LINES = 40
_TAIL_CHARS = 4000


@dataclass(frozen=True, slots=True)
class Job:
    """One unit of work: a spec test, measured by one framework configuration on one target."""

    identity: JobIdentity
    spec: BenchmarkSpec
    test: TestCase
    config: FrameworkConfig
    framework: Framework = field(compare=False)
    #: Where the job runs, when a sweep spans several devices (else the sweep's one target).
    target: Target | None = field(default=None, compare=False)


def _show_progress(text: str) -> None:
    """A long step's progress (a tool built for the device) on stderr, one line each."""
    print(f"benchlab: {text}", file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _tail(text: str) -> str:
    lines = text.rstrip().splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]


def summarize_samples(
    samples: tuple[Sample, ...] | list[Sample], statistics: tuple[str, ...] = ()
) -> dict[str, Summary]:
    """Summary statistics for every metric key; trends are sought within each process.

    Samples of one key are summarised in the unit of its first sample, the others converted
    into it; a sample whose unit does not convert is left out and the summary warns of it.
    """
    summaries: dict[str, Summary] = {}
    for key, group in group_samples(samples).items():
        unit = group[0].unit
        values: list[float] = []
        by_process: dict[int, list[float]] = {}
        left_out: dict[str, int] = {}
        for sample in group:
            value = convert(sample.value, sample.unit, unit)
            if value is None:
                left_out[sample.unit] = left_out.get(sample.unit, 0) + 1
                continue
            values.append(value)
            by_process.setdefault(sample.repetition, []).append(value)
        summary = summarize(values, unit, extra_percentiles=statistics,
                            segments=list(by_process.values()))
        if left_out:
            notes = tuple(f"{n} sample(s) in {other!r} do not convert to {unit!r} and are left "
                          "out of this summary (they are stored as reported)"
                          for other, n in left_out.items())
            summary = replace(summary, warnings=summary.warnings + notes)
        summaries[key] = summary
    return summaries


def fetch_files(spec: BenchmarkSpec, test: TestCase, cache: ArtifactCache) -> dict[str, Path]:
    """Every model and input file of a test, fetched and verified, keyed ``files.KEY`` /
    ``input_files.KEY``."""
    files = {f"files.{k}": cache.fetch(ref) for k, ref in spec.model.files.items()}
    files.update({f"input_files.{k}": cache.fetch(ref) for k, ref in test.input_files.items()})
    return files


class JobMeasurement:
    """One job measured a process at a time, so that a sweep can interleave its jobs.

    Each :meth:`step` runs one fresh process (the first one prepares the job: its files, its
    workdir, the host's setup commands) and returns the job's :class:`Result` once the job is
    over (its processes done, its target CI met, or a failure), else None; :meth:`close`
    removes what the steps made and must always be called. :meth:`run` drives one job from
    start to end (:func:`run_job`); :func:`benchlab.harness.planner.execute` drives a stage's jobs in
    rounds.
    """

    def __init__(self, job: Job, target: Target, cache: ArtifactCache, *,
                 string_map: Mapping[str, str] | None = None, time_budget: float | None = None,
                 energy: EnergySettings | None = None, raced: bool = False) -> None:
        self.job, self._target, self._cache = job, target, cache
        # Raced (benchlab.stats.race): the harness decides when the job has enough processes.
        self._raced = raced
        self._started_at = _now()
        test = job.test
        self._budget = time_budget if time_budget is not None else DEFAULT_TIME_BUDGET_S
        if test.target_ci is not None and test.max_time is None:
            # Each process gets its share of the job's budget for its own adaptive loop.
            test = replace(test, max_time=self._budget / max(test.repeat, 1))
        self._environment: dict[str, Any] = dict(target.describe())
        # Targets that read their state while describing themselves need not read it twice.
        self._state_before = (self._environment.pop(EnvKey.STATE, None) or capture_state(target))
        self._environment[EnvKey.STATE_BEFORE] = self._state_before
        self._gates: list[GateOutcome] = []
        energy = energy.over(test.energy) if energy is not None else test.energy
        self._meter = EnergySession.open(target, energy) if energy is not None else None
        if self._meter is not None:
            test = self._meter.lengthen(test)  # each process measures at least the collection
        self.test = test
        self._steps = HostSteps(job.spec, test, cache, string_map)  # FAI-PEP host commands
        self._workdir: str | None = None
        self._library_dir: str | None = None  # where the pushed shared libraries lie
        self._local_files: dict[str, Path] = {}
        self._samples: list[Sample] = []
        self._details: dict[str, Any] = {DetailKey.REPETITIONS: 0}
        self._repetition = 0
        # The job's own time: in rounds, other jobs' processes run between its own, and its
        # time budget must not pay for them.
        self._spent = 0.0

    @property
    def interleavable(self) -> bool:
        """False when the job must run its processes back to back: a power meter spans the
        whole job, and host commands (FAI-PEP's pre/postprocess) may keep state between them."""
        return self._meter is None and not self._steps.active

    def _finish(self, status: Status, error: str | None = None,
                stderr: str | None = None) -> Result:
        details, samples = self._details, self._samples
        state_after = capture_state(self._target)
        self._environment[EnvKey.STATE_AFTER] = state_after
        if self._meter is not None:
            details[DetailKey.ENERGY], joules = self._meter.finish()
            samples += [Sample(Metric.ENERGY_PER_INFERENCE, j * 1e3, "mJ", "NET", rep, 0)
                        for rep, j in enumerate(joules)]
            samples += [Sample(Metric.POWER, w, "W", "NET", rep, 0) for rep, w in
                        enumerate(details[DetailKey.ENERGY].get("per_process_mean_power_w", ()))]
        summaries = summarize_samples(samples, self.test.statistics)
        latency = summaries.get(LATENCY_KEY)
        flags = state_flags(
            self._state_before, state_after, gate_c=self.test.temperature_gate,
            gates=self._gates, latency_warnings=latency.warnings if latency else (),
        )
        if flags:
            details[DetailKey.DEVICE_FLAGS] = flags
        if self._gates:
            details[DetailKey.TEMPERATURE_GATE] = [g.to_dict() for g in self._gates]
        return Result(
            identity=self.job.identity, status=status, samples=tuple(samples),
            summaries=summaries, environment=self._environment, details=details, error=error,
            stderr_tail=stderr, started_at=self._started_at, finished_at=_now(),
        )

    def _open(self) -> Result | None:
        """Fetch and push the job's files and run the host's setup; a Result if that failed."""
        try:
            local_files = self._steps.fetch()
        except UserError as exc:
            return self._finish(Status.USER_ERROR, str(exc))
        except (DownloadError, InfrastructureError) as exc:
            return self._finish(Status.FAILED, str(exc))
        target = self._target
        self._workdir = workdir = target.make_workdir(self.job.identity.key)
        self._local_files = dict(local_files)
        if self.job.spec.model.metadata:
            self._details[DetailKey.MODEL_INFO] = dict(self.job.spec.model.metadata)
        try:
            binary = self.job.config.options.get(NATIVE_BINARY)
            # A native runner (benchmark_model, executor_runner...) given as a host path, and
            # the shared libraries it loads: one built for another CPU is refused before
            # anything travels.
            local = Path(binary).expanduser() if isinstance(binary, str) else None
            local = local if local is not None and local.is_file() else None
            libraries = job_libraries(self.job.config.options, self.test, self.job.spec.model,
                                      self._cache)
            for program in [*([local] if local else []), *libraries.values()]:
                refuse_wrong_architecture(program, abi_of(self._environment), device=self._device_name())
            files = {
                key: target.push(path, workdir,
                                 path.name if key.startswith("input_files.") else None)
                for key, path in local_files.items()
            }
            if local is not None:
                files[f"native.{NATIVE_BINARY}"] = target.push(local, workdir, local.name)
            for name, library in libraries.items():
                target.push(library, workdir, name)  # beside the binary, under its own name
            self._library_dir = workdir if libraries else None
            built: dict[str, Path] = {}
            files.update(self._push_device_files(workdir, local_files, built))
            if native := NativeFiles(local, libraries, built):
                self._details[DetailKey.NATIVE_FILES] = native.detail()
            self._steps.start(target, workdir, files)
        except StepFailure as exc:
            return self._finish(exc.status, exc.reason, exc.tail)
        except UserError as exc:
            return self._finish(Status.USER_ERROR, str(exc))
        except InfrastructureError as exc:
            return self._finish(Status.FAILED, str(exc))
        if self._meter is not None:
            self._meter.start()
        return None

    def _device_name(self) -> str:
        env = self._environment
        return f"{env.get(EnvKey.TARGET) or self._target.name} device {env.get(EnvKey.HOSTNAME) or ''}".strip()

    def _push_device_files(self, workdir: str, local_files: Mapping[str, Path],
                           built: dict[str, Path]) -> dict[str, str]:
        """What the framework makes for this device, pushed (:func:`push_device_files`);
        their device paths by key, the programs among them added to ``built``."""
        scratch = Path(tempfile.mkdtemp(prefix="benchlab-stage-"))
        try:
            pushed, kept = push_device_files(self.job.framework, self._target, Staging(
                spec=self.job.spec, test=self.test, config=self.job.config,
                python=self._target.python_executable(), abi=abi_of(self._environment),
                local_files=local_files, scratch=scratch, cache_root=self._cache.root,
                progress=_show_progress, arm_features=ArmFeatures(self._target).get),
                workdir, built)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if kept is not None:
            self._details[DetailKey.KEPT_FILES] = kept
        return pushed

    def _pull(self, invocation: Invocation, outcome: CommandResult, into: Path) -> CommandResult:
        """The files ``invocation`` asked for, pulled from the workdir into ``into``, and the
        host copies of the job's model files, attached to ``outcome`` for the parser. A file
        the command did not write is left out: the parser says what is missing."""
        if not invocation.pull:
            return outcome
        pulled: dict[str, Path] = dict(self._local_files)
        for name in invocation.pull:
            try:
                pulled[name] = self._target.pull(f"{self._workdir}/{name}", into / name)
            except InfrastructureError:
                continue
        return replace(outcome, files=pulled)

    def step(self) -> Result | None:
        """Run the job's next fresh process; the job's Result when that was its last."""
        if self._workdir is None:
            failed = self._open()
            if failed is not None:
                return failed
        began = time.monotonic()
        try:
            return self._step(began)
        except StepFailure as exc:
            return self._finish(exc.status, exc.reason, exc.tail)

    def _step(self, began: float) -> Result | None:
        test, target, details = self.test, self._target, self._details
        repetition = self._repetition
        staged = self._steps.before(repetition)
        if test.temperature_gate is not None:
            self._gates.append(wait_until_cool(target, test.temperature_gate, test.gate_timeout))
        assert self._workdir is not None, "step() opens the job first"
        ctx = JobContext(
            spec=self.job.spec, test=test, config=self.job.config, workdir=self._workdir,
            python=target.python_executable(), files=staged.files,
            placeholders=staged.placeholders, repetition=repetition,
            runtime=runtime_of(self.job.framework),
        )
        try:
            invocations = self.job.framework.invocations(ctx)
        except UserError as exc:
            return self._finish(Status.USER_ERROR, str(exc))
        if self._library_dir is not None:
            invocations = [with_library_path(i, self._library_dir) for i in invocations]
        if test.wipe_cache:
            details[DetailKey.CACHE_WIPE] = wipe_caches(
                target, self._workdir, details.get(DetailKey.CACHE_WIPE, {}).get("processes", 0))
        outputs: list[CommandResult] = []
        span_start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="benchlab-pulled-") as pulled:
            for invocation in invocations:
                outcome = target.run(RunRequest(
                    argv=invocation.argv, env=invocation.env, cwd=self._workdir,
                    timeout=test.timeout, cpu_list=test.cpu_list, memory_limit=test.memory_limit,
                ))
                failure = failure_of(outcome, test.timeout)
                hung = ended_after_its_results(outcome) if failure is not None else None
                if hung is not None:
                    details[DetailKey.SHUTDOWN_HUNG] = hung
                elif failure is not None:
                    return self._finish(failure[0], failure[1],
                                        _tail(outcome.stderr) or _tail(outcome.stdout))
                outputs.append(self._pull(invocation, outcome, Path(pulled)))
            span_end = time.monotonic()
            try:
                parsed = self.job.framework.parse(outputs)
            except (UserError, InfrastructureError) as exc:
                # What a device wrote does not read (outputs that do not fit the model).
                return self._finish(Status.FAILED, str(exc), _tail(outputs[-1].stdout))
        parsed = merge_parsed(parsed, self._steps.after(repetition))
        if not parsed.samples and not parsed.summaries and not self._steps.reports_at_end:
            why = "printed no metric lines"
            if parsed.malformed:
                why = f"printed {len(parsed.malformed)} malformed metric line(s) and no valid one"
            return self._finish(Status.FAILED, why, _tail("\n".join(o.stdout for o in outputs)))
        if self._meter is not None:
            self._meter.add_process(
                (span_start, span_end), parsed.details.get(DetailKey.MEASURE_WINDOW),
                sum(1 for s in parsed.samples if s.key == LATENCY_KEY),
            )
        self._samples += [Sample(s.metric, s.value, s.unit, s.type, repetition, s.index)
                          for s in parsed.samples]
        self._samples += code_size_samples(details.get(DetailKey.NATIVE_FILES), parsed.samples,
                                           repetition)
        _merge_details(details, parsed, repetition)
        self._repetition = repetition = repetition + 1
        details[DetailKey.REPETITIONS] = repetition
        self._spent += time.monotonic() - began
        stop = _stop_reason(test, self._samples, repetition, self._spent, self._budget,
                            raced=self._raced)
        if stop is None or (self._meter is not None and self._meter.wants_more()):
            return None
        return self._end(stop)

    def conclude(self, standing: Standing) -> Result:
        """End a raced job after its latest process: the race decided (``standing``)."""
        self._details[DetailKey.RACE] = standing.why
        try:
            return self._end(standing.reason)
        except StepFailure as exc:
            return self._finish(exc.status, exc.reason, exc.tail)

    def race_off(self) -> None:
        """Leave the race: from now on the test's own rule (``repeat``) ends the job."""
        self._raced = False

    def process_medians(self) -> list[float]:
        """The median ``NET latency`` of each process so far, in process order (empty when
        the processes print none)."""
        by_process: dict[int, list[float]] = {}
        for sample in self._samples:
            if sample.key == LATENCY_KEY:
                by_process.setdefault(sample.repetition, []).append(sample.value)
        return [statistics.median(by_process[r]) for r in sorted(by_process)]

    def _end(self, stop: StopReason) -> Result:
        details, repetition = self._details, self._repetition
        details[DetailKey.JOB_STOP_REASON] = stop.value
        last = self._steps.finish(repetition - 1)
        self._samples += renumbered(self._samples, last, repetition - 1)
        _merge_details(details, replace(last, details={}), repetition - 1)
        if not self._samples and not details.get("reported_summaries"):
            return self._finish(Status.FAILED, "neither the commands nor the host's "
                                "pre/postprocess commands printed a metric line")
        return self._finish(Status.OK)

    def run(self) -> Result:
        """Every process of the job back to back, with the test's cooldown between them;
        closes the job at the end."""
        try:
            result = self.step()
            while result is None:
                if self.test.cooldown:
                    time.sleep(self.test.cooldown)
                result = self.step()
            return result
        finally:
            self.close()

    def close(self) -> None:
        """Stop the host's steps and remove the job's workdir (safe to call more than once)."""
        self._steps.close()
        if self._workdir is not None:
            self._target.remove_workdir(self._workdir)
            self._workdir = None


def run_job(
    job: Job,
    target: Target,
    cache: ArtifactCache,
    *,
    string_map: Mapping[str, str] | None = None,
    time_budget: float | None = None,
    energy: EnergySettings | None = None,
) -> Result:
    """Measure one job: ``test.repeat`` fresh processes, more while ``target_ci`` is unmet.

    With ``energy``, or when the test asks for it itself (``test.energy``, a FAI-PEP power
    test; ``energy`` is laid over it), a power meter runs across the job (after an idle
    baseline) and ``details.energy`` holds the energy per inference and mean power, or why
    they are unavailable.
    """
    return JobMeasurement(job, target, cache, string_map=string_map, time_budget=time_budget,
                          energy=energy).run()


def _merge_details(details: dict[str, Any], parsed: Any, repetition: int) -> None:
    for key, value in parsed.details.items():
        details.setdefault("per_repetition", {}).setdefault(key, []).append(value)
        details[key] = value
    if parsed.summaries:
        details.setdefault("reported_summaries", []).extend(
            {"repetition": repetition, "type": s.type, "metric": s.metric, "unit": s.unit,
             "num_runs": s.num_runs, "values": dict(s.values)}
            for s in parsed.summaries
        )
    if parsed.malformed:
        details.setdefault("malformed_lines", []).extend(parsed.malformed[:20])
    if parsed.infos:
        details.setdefault("infos", []).extend(parsed.infos[:50])


def _stop_reason(
    test: TestCase, samples: list[Sample], done: int, elapsed: float, budget: float, *,
    raced: bool = False,
) -> StopReason | None:
    """None while more repetitions are due; otherwise why the job stops here. A raced job
    stops here only when its time budget is spent (the race decides the rest)."""
    if raced:
        return StopReason.TIME_BUDGET_EXHAUSTED if elapsed >= budget else None
    if done < test.repeat:
        return None
    if test.target_ci is None:
        return StopReason.FIXED_REPETITIONS
    latency = summarize_samples([s for s in samples if s.key == LATENCY_KEY]).get(LATENCY_KEY)
    # The interval judged is the one reported: the process-level one, which needs two
    # processes at least; more iterations in one process cannot narrow it.
    if latency is not None and done >= 2 and latency.ci_rel_halfwidth <= test.target_ci:
        return StopReason.TARGET_CI_REACHED
    if elapsed >= budget:
        return StopReason.TIME_BUDGET_EXHAUSTED
    if latency is None:
        return StopReason.NO_LATENCY_SAMPLES
    return None
