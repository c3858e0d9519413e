"""Counted A/B: both sides' measured calls counted under valgrind, in process pairs.

The sides run as in :mod:`benchlab.ab.pairs` (fresh processes, ABBA order) with the test
setting ``count`` on: each process runs under valgrind's callgrind, ``count_calls`` calls
counted one by one after its warm-up, one intra-op thread unless the side says otherwise.
A count does not move with the machine's other tenants, its frequency or its heat, so a
change of a fraction of a percent is decided in one pair where wall time needs tens
(docs/statistics.md, "Counted instructions", says what a count can and cannot tell).
:class:`CountEvidence` is this mode's evidence for the driver.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from benchlab.ab.pairs import PairEvidence
from benchlab.ab.stats import decide_counts
from benchlab.harness.jobrun import Job
from benchlab.schema.comparison import MetricComparison, Mode, PairedEstimate
from benchlab.schema.metrics import METRICS
from benchlab.schema.result import DetailKey, Metric

__all__ = ["COUNT_KEY", "CountEvidence", "counted_job"]

#: The summary key counted comparisons decide on.
COUNT_KEY = Metric.INSTRUCTIONS.key


def counted_job(job: Job, calls: int, what: str = "instructions") -> Job:
    """``job`` with each of its processes counting ``calls`` calls after its first call and
    the test's warm-up (every call under valgrind costs seconds, counted or not)."""
    return replace(job, test=replace(job.test, count=what, iter=calls, min_time=0.0,
                                     max_time=None, target_ci=None))


class CountEvidence(PairEvidence):
    """Process pairs of counted processes; ``NET instructions`` is decided on each pair's
    per-call counts (:func:`benchlab.ab.stats.decide_counts`)."""

    def __init__(self, pair, sides, targets, cache, settings, progress) -> None:  # type: ignore[no-untyped-def]
        counted = tuple(counted_job(job, settings.count_calls) for job in pair)
        super().__init__(counted, sides, targets, cache, settings, progress)  # type: ignore[arg-type]
        self.looks = settings.count_looks

    def _calls(self, tag: str) -> list[list[float]]:
        """Each process's per-call counts, in pair order."""
        by_pair: dict[int, list[float]] = {}
        for sample in self.data.samples[tag]:
            if sample.key == COUNT_KEY:
                by_pair.setdefault(sample.repetition, []).append(sample.value)
        return [by_pair[k] for k in sorted(by_pair)]

    def decide(self) -> dict[str, PairedEstimate]:
        control, treatment = self._calls("c"), self._calls("t")
        if not control or len(control) != len(treatment):
            return {}
        return {COUNT_KEY: decide_counts(
            control, treatment, min_effect=self.settings.min_effect,
            alpha=self.settings.alpha, n_looks=len(self.looks),
            higher_is_worse=METRICS[Metric.INSTRUCTIONS].better == "lower")}

    def comparisons(self, base: Job,
                    estimates: dict[str, PairedEstimate]) -> list[MetricComparison]:
        """The counted metric's comparison: one value per process, its mean count."""
        out = []
        for key, estimate in estimates.items():
            control = tuple(statistics.fmean(calls) for calls in self._calls("c"))
            treatment = tuple(statistics.fmean(calls) for calls in self._calls("t"))
            out.append(MetricComparison(
                job=base.identity.label, model=base.identity.model_name,
                test=base.identity.test_identifier, metric=key, unit="count",
                control=control, treatment=treatment, estimate=estimate, mode=Mode.COUNTED,
                regime=self._regime()))
        return out

    def _regime(self) -> dict[str, object]:
        """How the counts were taken, from the last process of each side."""
        regime: dict[str, object] = {}
        for tag, side in (("c", "control"), ("t", "treatment")):
            result = self.data.last.get(tag)
            if result is None:
                continue
            facts = result.details.get(DetailKey.COUNTING, {})
            threads = result.details.get(DetailKey.INTRA_OP_THREADS,
                                         result.details.get(DetailKey.THREADS))
            regime[side] = {"tool": facts.get("tool"), "calls": facts.get("counted_calls"),
                            "threads": threads,
                            "seconds_under_valgrind": facts.get("seconds_under_valgrind")}
        return regime

    def fresh(self) -> CountEvidence:
        """Independent counted pairs of the same job, for verifying a regression (its jobs
        are counted already; counting them again changes nothing)."""
        return CountEvidence(self.pair, self.sides, self.targets, self.cache, self.settings,
                             self.progress)
