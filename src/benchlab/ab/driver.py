"""The A/B driver: one pass over the jobs that owns the looks, the adjustment and the
verification; each mode only gathers evidence.

For each job the driver picks the mode (:func:`benchlab.ab.interleave.choose_mode`) and makes
that mode's evidence: :class:`~benchlab.ab.interleave.SessionEvidence` for the interleaved
modes, :class:`~benchlab.ab.pairs.PairEvidence` for process pairs. It grows the evidence to
each look in turn and decides (``ab.stats.through_looks``): an undecided latency extends the
run to the next look instead of guessing. An interleaved mode that cannot run the sides
faithfully falls back to process pairs, with the reason. Benjamini-Hochberg then adjusts
across every metric of the comparison, and each regression is re-measured by fresh evidence
of the same mode, through the same looks, before it is declared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from benchlab.ab.counted import COUNT_KEY, CountEvidence
from benchlab.ab.interleave import SessionEvidence, choose_mode, parse_mode
from benchlab.schema.comparison import (Comparison, MetricComparison, Mode, Outcome,
                                        PairedEstimate)
from benchlab.ab.pairs import PairEvidence
from benchlab.ab.sides import CompareSettings, Side, side_job, side_targets
from benchlab.ab.stats import apply_bh, through_looks
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import BenchlabError, ModeUnavailable, UsageError
from benchlab.harness.jobrun import Job
from benchlab.schema.result import LATENCY_KEY, Result
from benchlab.targets.base import Target

__all__ = ["Evidence", "compare_jobs"]


class Evidence(Protocol):
    """One job's evidence in one mode: what the driver asks of every mode."""

    def grow(self, look: int) -> None:
        """Measure until there are ``look`` pairs or sessions."""

    def decide(self) -> dict[str, PairedEstimate]:
        """Every metric's decision on the evidence so far."""

    def results(self) -> list[Result]:
        """Each side's observations as one result to store."""

    def comparisons(self, base: Job,
                    estimates: dict[str, PairedEstimate]) -> list[MetricComparison]:
        """The comparisons the decisions give."""

    def fresh(self) -> Evidence:
        """Independent evidence of the same job in the same mode, for verification."""


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
    sides = (control, treatment)
    targets = side_targets(target, control, treatment)
    wanted = parse_mode(settings.mode)
    measured: list[tuple[MetricComparison, Evidence]] = []
    failed: list[str] = []
    notes: list[str] = []
    not_measured = list(skipped)
    for base in jobs:
        try:
            pair = (side_job(base, control, "control"), side_job(base, treatment, "treatment"))
        except UsageError as exc:
            not_measured.append(f"{base.identity.label}: not compared: {exc}")
            continue
        evidences: list[Evidence] = []
        if settings.times:
            timed = _timed(base, pair, sides, targets, cache, settings, wanted, progress,
                           notes, failed)
            evidences += [timed] if timed is not None else []
        if settings.counts:
            evidences.append(CountEvidence(pair, sides, targets, cache, settings, progress))
        for evidence in evidences:
            if isinstance(evidence, CountEvidence):
                try:
                    estimates = _through_looks(evidence, settings, COUNT_KEY)
                except BenchlabError as exc:
                    failed.append(f"{base.identity.label}: not counted, a run failed: {exc}")
                    continue
            else:
                estimates = evidence.decide()
            for result in evidence.results() if on_result else ():
                on_result(result)
            measured += [(metric, evidence) for metric in evidence.comparisons(base, estimates)]
    adjusted = apply_bh([metric.estimate for metric, _ in measured], alpha=settings.alpha)
    metrics = [replace(metric, estimate=estimate)
               for (metric, _), estimate in zip(measured, adjusted, strict=True)]
    if settings.verify:
        metrics = [_verified(metric, evidence, settings) if
                   metric.estimate.outcome is Outcome.REGRESSION else metric
                   for metric, (_, evidence) in zip(metrics, measured, strict=True)]
    return Comparison(
        control=control.label, treatment=treatment.label, metrics=tuple(metrics),
        min_effect=settings.min_effect, alpha=settings.alpha, looks=settings.looks,
        notes=tuple(notes), failed=tuple(failed), skipped=tuple(not_measured),
    )


def _timed(base: Job, pair: tuple[Job, Job], sides: tuple[Side, Side],
           targets: tuple[Target, Target], cache: ArtifactCache, settings: CompareSettings,
           wanted: Mode | None, progress: Callable[[str], None] | None, notes: list[str],
           failed: list[str]) -> Evidence | None:
    """The job's wall-time evidence, grown through the looks in the strongest mode that runs
    (``None`` when a run failed: the reason is added to ``failed``)."""
    control, treatment = sides
    mode, why = choose_mode(*pair, (control.python, treatment.python), targets[0], wanted)
    evidence: Evidence = (
        SessionEvidence(mode, pair, sides, targets[0], cache, settings, progress)
        if mode.interleaved else PairEvidence(pair, sides, targets, cache, settings, progress))
    try:
        try:
            _through_looks(evidence, settings)
        except ModeUnavailable as exc:
            why = f"{mode.value} not used: {exc}"
            evidence = PairEvidence(pair, sides, targets, cache, settings, progress)
            _through_looks(evidence, settings)
    except BenchlabError as exc:
        failed.append(f"{base.identity.label}: not compared, a run failed: {exc}")
        return None
    if why and not isinstance(evidence, SessionEvidence):
        notes.append(f"{base.identity.label}: measured in process pairs ({why})")
    return evidence


def _through_looks(evidence: Evidence, settings: CompareSettings,
                   key: str = LATENCY_KEY) -> dict[str, PairedEstimate]:
    """The evidence grown to each look in turn (a counted job's own looks), until ``key``
    is decided."""
    looks = evidence.looks if isinstance(evidence, CountEvidence) else settings.looks
    return through_looks(looks, evidence.grow, evidence.decide, key)


def _verified(metric: MetricComparison, evidence: Evidence,
              settings: CompareSettings) -> MetricComparison:
    """A flagged regression re-measured afresh, kept only if confirmed. The re-run goes
    through the same looks, extending while undecided: deciding once at the first run's
    stopping point threw away most true regressions (docs/detector.md)."""
    try:
        estimate = _through_looks(evidence.fresh(), settings, metric.metric).get(metric.metric)
    except BenchlabError:
        estimate = None
    confirmed = estimate is not None and estimate.outcome is Outcome.REGRESSION
    return replace(metric, verified=confirmed)

