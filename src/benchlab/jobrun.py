"""Run one job: fetch its files, run its repetitions on the target, turn output into a result.

Whatever a runtime does (crash, hang, out of memory, garbage on stdout) ends here as a
:class:`~benchlab.schema.Result` with a status and a reason; nothing a job does can raise
out of :func:`run_job` except a bug in benchlab itself or a ``KeyboardInterrupt``.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlab.artifacts import ArtifactCache
from benchlab.energy.session import EnergySession, EnergySettings
from benchlab.devicestate import GateOutcome, capture_state, state_flags, wait_until_cool
from benchlab.errors import DownloadError, InfrastructureError, UserError
from benchlab.frameworks.base import NATIVE_BINARY, Framework, JobContext
from benchlab.hoststeps import HostSteps, StepFailure, merge_parsed, renumbered
from benchlab.schema import (
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
from benchlab.stats import ci_rel_halfwidth, summarize
from benchlab.units import convert
from benchlab.targets.base import CommandResult, RunRequest, Target

__all__ = ["DEFAULT_TIME_BUDGET_S", "Job", "fetch_files", "run_job", "summarize_samples"]

_TAIL_LINES = 40
_TAIL_CHARS = 4000
#: Seconds a job with a target CI may keep adding fresh processes, unless told otherwise.
DEFAULT_TIME_BUDGET_S = 60.0


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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _tail(text: str) -> str:
    lines = text.rstrip().splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]


def _failure(result: CommandResult, timeout: float) -> tuple[Status, str] | None:
    """The status and reason for a command that did not finish cleanly."""
    if result.timed_out:
        return Status.TIMEOUT, f"timed out after {timeout:g} s; its process group was killed"
    code = result.returncode
    if code == 0:
        return None
    if code is None:
        return Status.FAILED, "the command ended without an exit status"
    # A shell reports a child killed by signal N as status 128+N.
    signum = -code if code < 0 else code - 128 if 128 < code < 160 else None
    if signum is not None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        hint = {
            "SIGKILL": " (killed from outside: out of memory?)",
            "SIGSEGV": " (crashed: segmentation fault)",
            "SIGABRT": " (aborted)",
        }.get(name, "")
        return Status.FAILED, f"killed by {name}{hint} (exit status {code})"
    last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
    reason = f"exited with status {code}"
    return Status.FAILED, f"{reason}: {last.strip()[:300]}" if last else reason


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
    started_at = _now()
    test = job.test
    budget = time_budget if time_budget is not None else DEFAULT_TIME_BUDGET_S
    if test.target_ci is not None and test.max_time is None:
        # Each process gets its share of the job's budget for its own adaptive loop.
        test = replace(test, max_time=budget / max(test.repeat, 1))
    environment: dict[str, Any] = dict(target.describe())
    # Targets that read their state while describing themselves need not read it twice.
    state_before = environment.pop("state", None) or capture_state(target)
    environment[EnvKey.STATE_BEFORE] = state_before
    gates: list[GateOutcome] = []
    energy = energy.over(test.energy) if energy is not None else test.energy
    meter = EnergySession.open(target, energy) if energy is not None else None
    if meter is not None:
        test = meter.lengthen(test)  # each process measures at least the collection time

    def finish(status: Status, samples: list[Sample], details: dict[str, Any],
               error: str | None = None, stderr: str | None = None) -> Result:
        state_after = capture_state(target)
        environment[EnvKey.STATE_AFTER] = state_after
        if meter is not None:
            details[DetailKey.ENERGY], joules = meter.finish()
            samples += [Sample(Metric.ENERGY_PER_INFERENCE, j * 1e3, "mJ", "NET", rep, 0)
                        for rep, j in enumerate(joules)]
            samples += [Sample(Metric.POWER, w, "W", "NET", rep, 0) for rep, w in
                        enumerate(details[DetailKey.ENERGY].get("per_process_mean_power_w", ()))]
        summaries = summarize_samples(samples, test.statistics)
        latency = summaries.get(LATENCY_KEY)
        flags = state_flags(
            state_before, state_after, gate_c=test.temperature_gate, gates=gates,
            latency_warnings=latency.warnings if latency else (),
        )
        if flags:
            details[DetailKey.DEVICE_FLAGS] = flags
        if gates:
            details[DetailKey.TEMPERATURE_GATE] = [g.to_dict() for g in gates]
        return Result(
            identity=job.identity,
            status=status,
            samples=tuple(samples),
            summaries=summaries,
            environment=environment,
            details=details,
            error=error,
            stderr_tail=stderr,
            started_at=started_at,
            finished_at=_now(),
        )

    steps = HostSteps(job.spec, test, cache, string_map)  # FAI-PEP's host commands, if any
    try:
        local_files = steps.fetch()
    except UserError as exc:
        return finish(Status.USER_ERROR, [], {}, str(exc))
    except (DownloadError, InfrastructureError) as exc:
        return finish(Status.FAILED, [], {}, str(exc))

    workdir = target.make_workdir(job.identity.key)
    samples: list[Sample] = []
    details: dict[str, Any] = {DetailKey.REPETITIONS: 0}
    if job.spec.model.metadata:
        details[DetailKey.MODEL_INFO] = dict(job.spec.model.metadata)
    try:
        files = {
            key: target.push(path, workdir, path.name if key.startswith("input_files.") else None)
            for key, path in local_files.items()
        }
        binary = job.config.options.get(NATIVE_BINARY)
        if isinstance(binary, str) and Path(binary).expanduser().is_file():
            # A native runner (benchmark_model, executor_runner...) given as a host path.
            local = Path(binary).expanduser()
            files[f"native.{NATIVE_BINARY}"] = target.push(local, workdir, local.name)
        steps.start(target, workdir, files)
        began = time.monotonic()
        repetition = 0
        if meter is not None:
            meter.start()
        while True:
            staged = steps.before(repetition)
            if test.temperature_gate is not None:
                gates.append(wait_until_cool(target, test.temperature_gate, test.gate_timeout))
            ctx = JobContext(
                spec=job.spec, test=test, config=job.config, workdir=workdir,
                python=target.python_executable(), files=staged.files,
                placeholders=staged.placeholders,
                repetition=repetition,
            )
            try:
                invocations = job.framework.invocations(ctx)
            except UserError as exc:
                return finish(Status.USER_ERROR, samples, details, str(exc))
            outputs: list[CommandResult] = []
            span_start = time.monotonic()
            for invocation in invocations:
                outcome = target.run(RunRequest(
                    argv=invocation.argv, env=invocation.env, cwd=workdir, timeout=test.timeout,
                    cpu_list=test.cpu_list, memory_limit=test.memory_limit,
                ))
                outputs.append(outcome)
                failure = _failure(outcome, test.timeout)
                if failure is not None:
                    details[DetailKey.REPETITIONS] = repetition
                    return finish(failure[0], samples, details, failure[1],
                                  _tail(outcome.stderr) or _tail(outcome.stdout))
            span_end = time.monotonic()
            parsed = merge_parsed(job.framework.parse(outputs), steps.after(repetition))
            if not parsed.samples and not parsed.summaries and not steps.reports_at_end:
                why = "printed no metric lines"
                if parsed.malformed:
                    why = f"printed {len(parsed.malformed)} malformed metric line(s) and no valid one"
                stdout = "\n".join(o.stdout for o in outputs)
                return finish(Status.FAILED, samples, details, why, _tail(stdout))
            if meter is not None:
                meter.add_process(
                    (span_start, span_end), parsed.details.get(DetailKey.MEASURE_WINDOW),
                    sum(1 for s in parsed.samples if s.key == LATENCY_KEY),
                )
            samples += [
                Sample(s.metric, s.value, s.unit, s.type, repetition, s.index)
                for s in parsed.samples
            ]
            _merge_details(details, parsed, repetition)
            repetition += 1
            details[DetailKey.REPETITIONS] = repetition
            stop = _stop_reason(test, samples, repetition, time.monotonic() - began, budget)
            if stop is not None and not (meter is not None and meter.wants_more()):
                details[DetailKey.JOB_STOP_REASON] = stop.value
                break
            if test.cooldown:
                time.sleep(test.cooldown)
        last = steps.finish(repetition - 1)
        samples += renumbered(samples, last, repetition - 1)
        _merge_details(details, replace(last, details={}), repetition - 1)
        if not samples and not details.get("reported_summaries"):
            return finish(Status.FAILED, samples, details, "neither the commands nor the host's "
                          "pre/postprocess commands printed a metric line")
    except StepFailure as exc:
        return finish(exc.status, samples, details, exc.reason, exc.tail)
    finally:
        steps.close()
        target.remove_workdir(workdir)
    return finish(Status.OK, samples, details)


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
    test: TestCase, samples: list[Sample], done: int, elapsed: float, budget: float
) -> StopReason | None:
    """None while more repetitions are due; otherwise why the job stops here."""
    if done < test.repeat:
        return None
    if test.target_ci is None:
        return StopReason.FIXED_REPETITIONS
    latencies = [s.value for s in samples if s.key == LATENCY_KEY]
    if latencies and ci_rel_halfwidth(latencies) <= test.target_ci:
        return StopReason.TARGET_CI_REACHED
    if elapsed >= budget:
        return StopReason.TIME_BUDGET_EXHAUSTED
    if not latencies:
        return StopReason.NO_LATENCY_SAMPLES
    return None
