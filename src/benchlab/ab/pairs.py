"""The A/B protocol: control and treatment in counterbalanced pairs of fresh processes.

For each job of the sweep, pairs run in ABBA order (control first in even pairs, treatment
first in odd ones) so that drift in the machine's state hits both sides alike. Each fresh
process gives one observation per metric: the median of its iterations, since iterations of
one process are not independent. The decision (``compare.stats.decide``) is taken at each
look (20, 40, 80 pairs by default); an undecided metric extends the run to the next look
instead of guessing. Benjamini-Hochberg then adjusts across every metric of the comparison,
and each regression is re-measured by an independent set of pairs before it is declared.
"""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlab.artifacts import ArtifactCache, sha256_of
from benchlab.ab.interleave import AUTO, choose_mode, parse_mode, run_sessions, session_runner
from benchlab.ab.model import (
    Comparison,
    MetricComparison,
    Mode,
    OpDelta,
    Outcome,
    PairedEstimate,
)
from benchlab.ab.stats import apply_bh, decide, through_looks
from benchlab.errors import BenchlabError, ModeUnavailable, UsageError
from benchlab.jobrun import Job, run_job, summarize_samples
from benchlab.plugins import parse_plugin_text
from benchlab.metrics import decided_metrics
from benchlab.schema import (
    LATENCY_KEY,
    DetailKey,
    JobIdentity,
    Result,
    Sample,
    Status,
)
from benchlab.spec.placeholders import substitute
from benchlab.spec.types import BenchmarkSpec, FileRef, FrameworkConfig
from benchlab.targets.base import Target
from benchlab.units import convert

__all__ = ["CompareSettings", "Side", "compare_jobs", "make_side", "side_job"]

#: Metrics decided on when present → whether a larger value is worse (the registry's).
DECIDED_METRICS = decided_metrics()


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: what differs from the spec's own job.

    ``framework`` is the job's framework configuration for this side: laid over the job's own
    options when it names the same framework (a variant: threads, mode, provider), else in
    its place; ``string_map`` adds placeholders (``{program}`` for a binary built elsewhere);
    ``python`` runs runner frameworks under another interpreter (another environment).
    ``model`` replaces the spec's model file of the same format (every file of the spec
    whose name ends like it: ``.onnx``, ``.xml``, ``.pte``...) with this one.
    ``variant`` names the side in stored results (default ``control``/``treatment``).
    """

    label: str
    framework: FrameworkConfig | None = None
    string_map: Mapping[str, str] = field(default_factory=dict)
    python: str | None = None
    variant: str | None = None
    model: Path | None = None


def make_side(label: str, *, program: str | None = None, config: str | None = None,
              python: str | None = None, model: str | Path | None = None) -> Side:
    """A side from what the CLI takes: a program (``{program}``), a framework variant
    (``pytorch:mode=eager``), a Python or a model file; none of them is the spec as it
    stands."""
    given = [x for x in (program, config, python, model) if x]
    if len(given) > 1:
        raise UsageError(f"give the {label} side one of --{label}-program, --{label}-config, "
                         f"--{label}-python or --{label}-model")
    if model:
        path = Path(model).resolve()
        if not path.is_file():
            raise UsageError(f"--{label}-model {model}: no such file")
        return Side(f"{label}:{path.name}", model=path)
    if program:
        # Jobs run in their own work directory: make paths that exist here absolute.
        words = [str(Path(w).resolve()) if Path(w).exists() else w for w in shlex.split(program)]
        return Side(f"{label}:{program}", string_map={"program": shlex.join(words)})
    if config:
        name, options = parse_plugin_text(config, "framework")
        return Side(f"{label}:{config}", framework=FrameworkConfig(name, options))
    if python:
        return Side(f"{label}:{python}", python=python)
    return Side(label)


@dataclass(frozen=True, slots=True)
class CompareSettings:
    """How much evidence to gather, what counts as a change, and how the sides are paired.

    ``mode`` is ``auto`` (the strongest the sides allow: ``in-process`` for Python runtimes,
    ``lockstep`` for programs on the host, else ``process-pairs``) or one of those names;
    a mode the sides do not allow falls back with a note. ``looks`` count process pairs or
    interleaved sessions. ``fidelity_tolerance``: how far an interleaved mode may move a
    side's latency from its solo latency (0.05: ±5%) before the job is measured in process
    pairs instead; ``None`` measures and reports fidelity but keeps the mode whatever it is.
    """

    min_effect: float = 0.01
    alpha: float = 0.05
    looks: tuple[int, ...] = (20, 40, 80)
    verify: bool = True
    mode: str = AUTO
    fidelity_tolerance: float | None = 0.05


class _PythonTarget:
    """A target whose runner interpreter is another Python; everything else is delegated."""

    def __init__(self, inner: Target, python: str) -> None:
        self._inner = inner
        self._python = python
        self.name = inner.name

    def python_executable(self) -> str:
        return self._python

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def side_job(job: Job, side: Side, variant: str) -> Job:
    """The job as ``side`` runs it: one fresh process per call, identity marked with the side.

    A power test's own energy request is dropped: a comparison measures no energy, and its
    collection time would ask for more than one process per call.
    """
    config = side.framework or job.config
    if side.framework is not None and side.framework.name == job.config.name:
        # A variant of the job's own configuration: the job's options (the int8 file of a
        # zoo model) stay, the side's are laid over them.
        config = FrameworkConfig(config.name, {**job.config.options, **side.framework.options})
    if side.model is not None:
        job = replace(job, spec=_with_model_file(job, side.model))
    if side.string_map:
        job = replace(job, spec=_with_file_placeholders(job.spec, side.string_map))
    identity = replace(
        job.identity, framework=config.name, framework_config=dict(config.options),
        variant=side.variant or variant,
    )
    return replace(job, identity=identity, config=config, test=replace(job.test, repeat=1,
                                                                       target_ci=None,
                                                                       energy=None))


def _format_suffix(name: str) -> str:
    return Path(name).suffix.lower()


def _with_model_file(job: Job, model: Path) -> BenchmarkSpec:
    """The job's spec with every model file of ``model``'s format replaced by ``model``."""
    files = job.spec.model.files
    keys = [key for key, ref in files.items()
            if _format_suffix(ref.filename or ref.location) == _format_suffix(model.name)]
    if not keys:
        have = ", ".join(f"{k} ({Path(r.filename or r.location).name})" for k, r in files.items())
        raise UsageError(f"{job.identity.label}: no model file of {model.name}'s format "
                         f"({_format_suffix(model.name) or 'no suffix'}) to replace; the spec "
                         f"has {have or 'no files'}")
    digest = sha256_of(model)
    swapped = {**files, **{key: FileRef(key, str(model), model.parent, sha256=digest,
                                        filename=model.name) for key in keys}}
    return replace(job.spec, model=replace(job.spec.model, files=swapped))


def _with_file_placeholders(spec: BenchmarkSpec, values: Mapping[str, str]) -> BenchmarkSpec:
    """The spec with the side's placeholders put into its model files' locations, so a side
    that names its model as ``{program}`` carries its own file into any mode (an in-process
    pair stages both sides' files; see :mod:`benchlab.ab.inprocess`)."""
    files = {key: replace(ref, location=substitute(ref.location, values))
             for key, ref in spec.model.files.items()}
    return replace(spec, model=replace(spec.model, files=files))


def _observe(result: Result, units: dict[str, str]) -> dict[str, float]:
    """One value per metric key: the median of this process's samples, in the unit the key
    was first seen in (``units`` records it); samples that do not convert are left out."""
    groups: dict[str, list[float]] = {}
    for sample in result.samples:
        value = convert(sample.value, sample.unit, units.setdefault(sample.key, sample.unit))
        if value is not None:
            groups.setdefault(sample.key, []).append(value)
    return {key: statistics.median(values) for key, values in groups.items()}


@dataclass
class _Sides:
    """Per-process observations of both sides of one job, in the order they ran."""

    control: list[dict[str, float]] = field(default_factory=list)
    treatment: list[dict[str, float]] = field(default_factory=list)
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {"c": [], "t": []})
    units: dict[str, str] = field(default_factory=dict)
    last: dict[str, Result] = field(default_factory=dict)

    def series(self, key: str) -> tuple[list[float], list[float]]:
        pairs = [(c[key], t[key]) for c, t in zip(self.control, self.treatment, strict=True)
                 if key in c and key in t]
        return [c for c, _ in pairs], [t for _, t in pairs]


class _JobFailed(Exception):
    """An observation failed: the comparison of this job cannot go on."""


def _run_pairs(
    jobs: tuple[Job, Job], sides: tuple[Side, Side], targets: tuple[Target, Target],
    cache: ArtifactCache, data: _Sides, until: int,
    progress: Callable[[str], None] | None,
) -> None:
    while len(data.control) < until:
        index = len(data.control)
        order = (0, 1) if index % 2 == 0 else (1, 0)  # ABBA counterbalancing
        observed: dict[int, Result] = {}
        for which in order:
            result = run_job(jobs[which], targets[which], cache,
                             string_map=sides[which].string_map)
            if not result.ok:
                raise _JobFailed(f"{sides[which].label}: {result.status.value}: {result.error}")
            observed[which] = result
        for which, bucket, tag in ((0, data.control, "c"), (1, data.treatment, "t")):
            result = observed[which]
            bucket.append(_observe(result, data.units))
            data.samples[tag] += [replace(s, repetition=index) for s in result.samples]
            data.last[tag] = result
        if progress:
            progress(f"{jobs[0].identity.model_name}: pair {index + 1}/{until}")


def _decide_all(data: _Sides, settings: CompareSettings) -> dict[str, PairedEstimate]:
    estimates = {}
    for key, higher_is_worse in DECIDED_METRICS.items():
        control, treatment = data.series(key)
        if len(control) >= 2 and all(v > 0 for v in control + treatment):
            estimates[key] = decide(
                control, treatment, min_effect=settings.min_effect, alpha=settings.alpha,
                n_looks=len(settings.looks), higher_is_worse=higher_is_worse,
            )
    return estimates


def _run_looks(
    pair: tuple[Job, Job], sides: tuple[Side, Side], targets: tuple[Target, Target],
    cache: ArtifactCache, settings: CompareSettings, key: str,
    progress: Callable[[str], None] | None,
) -> tuple[_Sides, dict[str, PairedEstimate]]:
    """Pairs up to each look in turn, stopping at the first look where ``key`` is decided."""
    data = _Sides()

    def grow(look: int) -> None:
        _run_pairs(pair, sides, targets, cache, data, look, progress)

    return data, through_looks(settings.looks, grow, lambda: _decide_all(data, settings), key)


def _op_deltas(data: _Sides) -> tuple[OpDelta, ...]:
    keys = {k for obs in data.control for k in obs if not k.startswith("NET ")}
    deltas = []
    for key in sorted(keys):
        control, treatment = data.series(key)
        if control:
            deltas.append(OpDelta(key.rsplit(" ", 1)[0], statistics.median(control),
                                  statistics.median(treatment), data.units.get(key, "")))
    return tuple(sorted(deltas, key=lambda d: -abs(d.delta)))


def compare_jobs(
    jobs: Sequence[Job],
    control: Side,
    treatment: Side,
    target: Target,
    cache: ArtifactCache,
    settings: CompareSettings = CompareSettings(),
    *,
    on_result: Callable[[Result], None] | None = None,
    progress: Callable[[str], None] | None = None,
    skipped: Sequence[str] = (),
) -> Comparison:
    """Compare ``treatment`` against ``control`` on every job; see the module docstring.

    ``skipped`` are the planner's reasons for jobs it did not make; they are reported with
    the jobs a side could not apply to (no model file of its format)."""
    targets = tuple(
        _PythonTarget(target, s.python) if s.python else target for s in (control, treatment)
    )
    wanted = parse_mode(settings.mode)
    metrics: list[MetricComparison] = []
    failed: list[str] = []
    notes: list[str] = []
    not_measured = list(skipped)
    verify_later: list[tuple[int, Callable[[str], PairedEstimate | None]]] = []
    for base in jobs:
        try:
            pair = (side_job(base, control, "control"), side_job(base, treatment, "treatment"))
        except UsageError as exc:
            not_measured.append(f"{base.identity.label}: not compared: {exc}")
            continue
        mode, why = choose_mode(*pair, (control.python, treatment.python), target, wanted)
        if mode.interleaved:
            runner = session_runner(mode, pair, (control.label, treatment.label),
                                    (dict(control.string_map), dict(treatment.string_map)),
                                    targets[0], cache)
            try:
                done = _interleaved(base, pair, mode, runner, settings, progress, on_result)
            except ModeUnavailable as exc:
                mode, why = Mode.PROCESS_PAIRS, f"{mode.value} not used: {exc}"
            except BenchlabError as exc:
                failed.append(f"{base.identity.label}: not compared, a run failed: {exc}")
                continue
            else:
                metrics.append(done)
                verify_later.append((len(metrics) - 1, _again_sessions(mode, pair, control,
                                                                       treatment, targets[0],
                                                                       cache, settings,
                                                                       progress)))
                continue
        if why:
            notes.append(f"{base.identity.label}: measured in process pairs ({why})")
        try:
            data, estimates = _run_looks(pair, (control, treatment), targets, cache, settings,
                                         LATENCY_KEY, progress)
        except _JobFailed as exc:
            failed.append(f"{base.identity.label}: not compared, a run failed: {exc}")
            continue
        for tag, job in (("c", pair[0]), ("t", pair[1])):
            if on_result and tag in data.last:
                on_result(_side_result(job.identity, data.samples[tag], data.last[tag]))
        for key, estimate in estimates.items():
            control_values, treatment_values = data.series(key)
            metrics.append(MetricComparison(
                job=base.identity.label, model=base.identity.model_name,
                test=base.identity.test_identifier, metric=key, unit=data.units.get(key, ""),
                control=tuple(control_values), treatment=tuple(treatment_values),
                estimate=estimate,
                op_deltas=_op_deltas(data) if key == LATENCY_KEY else (),
            ))
            verify_later.append((len(metrics) - 1, _again_pairs(pair, (control, treatment),
                                                                 targets, cache, settings,
                                                                 progress)))
    adjusted = apply_bh([m.estimate for m in metrics], alpha=settings.alpha)
    metrics = [replace(m, estimate=e) for m, e in zip(metrics, adjusted, strict=True)]
    if settings.verify:
        metrics = _verify(metrics, verify_later)
    return Comparison(
        control=control.label, treatment=treatment.label, metrics=tuple(metrics),
        min_effect=settings.min_effect, alpha=settings.alpha, looks=settings.looks,
        notes=tuple(notes), failed=tuple(failed), skipped=tuple(not_measured),
    )


def _interleaved(
    base: Job, pair: tuple[Job, Job], mode: Mode, runner: Callable[[int], Any],
    settings: CompareSettings, progress: Callable[[str], None] | None,
    on_result: Callable[[Result], None] | None,
) -> MetricComparison:
    """The latency verdict of one job from interleaved sessions, both sides stored."""
    data, estimates = run_sessions(runner, mode, settings.looks, min_effect=settings.min_effect,
                                   alpha=settings.alpha, progress=progress,
                                   label=base.identity.model_name,
                                   tolerance=settings.fidelity_tolerance)
    if on_result:
        for letter, job in (("c", pair[0]), ("t", pair[1])):
            samples = data.samples(letter)
            on_result(Result(identity=job.identity, status=Status.OK, samples=tuple(samples),
                             summaries=summarize_samples(samples),
                             details={DetailKey.AB_MODE: mode.value,
                                      DetailKey.AB_SESSIONS: len(data.sessions)}))
    control_ms, treatment_ms = data.medians()
    return MetricComparison(
        job=base.identity.label, model=base.identity.model_name,
        test=base.identity.test_identifier, metric=LATENCY_KEY, unit="ms",
        control=tuple(control_ms), treatment=tuple(treatment_ms),
        estimate=estimates[LATENCY_KEY], mode=mode, paired=tuple(data.estimates),
        fidelity=data.fidelities(settings.fidelity_tolerance), regime=data.regime(),
    )


def _again_sessions(
    mode: Mode, pair: tuple[Job, Job], control: Side, treatment: Side, target: Target,
    cache: ArtifactCache, settings: CompareSettings, progress: Callable[[str], None] | None,
) -> Callable[[str], PairedEstimate | None]:
    """The verify re-run of an interleaved job: fresh sessions with other block orders."""
    def again(key: str) -> PairedEstimate | None:
        runner = session_runner(mode, pair, (control.label, treatment.label),
                                (dict(control.string_map), dict(treatment.string_map)),
                                target, cache, seed=1)
        _, estimates = run_sessions(runner, mode, settings.looks,
                                    min_effect=settings.min_effect, alpha=settings.alpha,
                                    progress=progress, label=pair[0].identity.model_name)
        return estimates.get(key)
    return again


def _again_pairs(
    pair: tuple[Job, Job], sides: tuple[Side, Side], targets: tuple[Target, Target],
    cache: ArtifactCache, settings: CompareSettings, progress: Callable[[str], None] | None,
) -> Callable[[str], PairedEstimate | None]:
    """The verify re-run of a process-pair job: fresh pairs through the same looks."""
    def again(key: str) -> PairedEstimate | None:
        try:
            _, estimates = _run_looks(pair, sides, targets, cache, settings, key, progress)
        except _JobFailed:
            return None
        return estimates.get(key)
    return again


def _verify(
    metrics: list[MetricComparison],
    jobs: list[tuple[int, Callable[[str], PairedEstimate | None]]],
) -> list[MetricComparison]:
    """Re-measure every flagged regression afresh; keep it only if confirmed."""
    out = list(metrics)
    for index, again in jobs:
        metric = out[index]
        if metric.estimate.outcome is not Outcome.REGRESSION:
            continue
        # The re-run goes through the same looks, extending while undecided: deciding once
        # at the first session's stopping point threw away most true regressions
        # (docs/detector.md).
        try:
            estimate = again(metric.metric)
        except BenchlabError:
            estimate = None
        confirmed = estimate is not None and estimate.outcome is Outcome.REGRESSION
        out[index] = replace(metric, verified=confirmed)
    return out


def _side_result(identity: JobIdentity, samples: list[Sample], last: Result) -> Result:
    """All observations of one side as one stored result (repetition = pair index)."""
    return replace(
        last, identity=identity, samples=tuple(samples),
        summaries=summarize_samples(samples), details={**last.details, DetailKey.AB_PAIRS: True},
    )
