"""Process pairs: control and treatment in counterbalanced pairs of fresh processes.

Pairs run in ABBA order (control first in even pairs, treatment first in odd ones) so that
drift in the machine's state hits both sides alike. Each fresh process gives one observation
per metric: the median of its iterations, since iterations of one process are not
independent. :class:`PairEvidence` is this mode's evidence for the driver
(:mod:`benchlab.ab.driver`), which owns the looks, the adjustment and the verification.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from benchlab.schema.comparison import MetricComparison, OpDelta, PairedEstimate
from benchlab.ab.sides import CompareSettings, Side
from benchlab.ab.stats import decide
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import SideRunFailed
from benchlab.harness.jobrun import Job, run_job, summarize_samples
from benchlab.schema.metrics import decided_metrics
from benchlab.schema.result import LATENCY_KEY, DetailKey, Result, Sample
from benchlab.targets.base import Target
from benchlab.schema.units import convert

__all__ = ["DECIDED_METRICS", "PairEvidence"]

#: Metrics decided on when present → whether a larger value is worse (the registry's).
DECIDED_METRICS = decided_metrics()


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


class PairEvidence:
    """One job's evidence in process pairs, grown a pair at a time; every metric of
    :data:`DECIDED_METRICS` the sides report is decided."""

    def __init__(self, pair: tuple[Job, Job], sides: tuple[Side, Side],
                 targets: tuple[Target, Target], cache: ArtifactCache,
                 settings: CompareSettings, progress: Callable[[str], None] | None) -> None:
        self.pair, self.sides, self.targets, self.cache = pair, sides, targets, cache
        self.settings, self.progress = settings, progress
        self.data = _Sides()

    def grow(self, look: int) -> None:
        """Pairs until there are ``look``; a side whose process fails raises
        :class:`SideRunFailed`."""
        data = self.data
        while len(data.control) < look:
            index = len(data.control)
            order = (0, 1) if index % 2 == 0 else (1, 0)  # ABBA counterbalancing
            observed: dict[int, Result] = {}
            for which in order:
                result = run_job(self.pair[which], self.targets[which], self.cache,
                                 string_map=self.sides[which].string_map)
                if not result.ok:
                    raise SideRunFailed(f"{self.sides[which].label}: {result.status.value}: "
                                        f"{result.error}")
                observed[which] = result
            for which, bucket, tag in ((0, data.control, "c"), (1, data.treatment, "t")):
                result = observed[which]
                bucket.append(_observe(result, data.units))
                data.samples[tag] += [replace(s, repetition=index) for s in result.samples]
                data.last[tag] = result
            if self.progress:
                self.progress(f"{self.pair[0].identity.model_name}: pair {index + 1}/{look}")

    def decide(self) -> dict[str, PairedEstimate]:
        estimates = {}
        for key, higher_is_worse in DECIDED_METRICS.items():
            control, treatment = self.data.series(key)
            if len(control) >= 2 and all(v > 0 for v in control + treatment):
                estimates[key] = decide(
                    control, treatment, min_effect=self.settings.min_effect,
                    alpha=self.settings.alpha, n_looks=len(self.settings.looks),
                    higher_is_worse=higher_is_worse,
                )
        return estimates

    def results(self) -> list[Result]:
        """All observations of each side as one stored result (repetition = pair index)."""
        data = self.data
        return [replace(data.last[tag], identity=job.identity,
                        samples=tuple(data.samples[tag]),
                        summaries=summarize_samples(data.samples[tag]),
                        details={**data.last[tag].details, DetailKey.AB_PAIRS: True})
                for tag, job in (("c", self.pair[0]), ("t", self.pair[1]))
                if tag in data.last]

    def comparisons(self, base: Job,
                    estimates: dict[str, PairedEstimate]) -> list[MetricComparison]:
        """One comparison per decided metric; latency's carries the per-operator deltas."""
        out = []
        for key, estimate in estimates.items():
            control, treatment = self.data.series(key)
            out.append(MetricComparison(
                job=base.identity.label, model=base.identity.model_name,
                test=base.identity.test_identifier, metric=key,
                unit=self.data.units.get(key, ""), control=tuple(control),
                treatment=tuple(treatment), estimate=estimate,
                op_deltas=self._op_deltas() if key == LATENCY_KEY else (),
            ))
        return out

    def fresh(self) -> PairEvidence:
        """Independent pairs of the same job, for verifying a regression."""
        return PairEvidence(self.pair, self.sides, self.targets, self.cache, self.settings,
                            self.progress)

    def _op_deltas(self) -> tuple[OpDelta, ...]:
        data = self.data
        keys = {k for obs in data.control for k in obs if not k.startswith("NET ")}
        deltas = []
        for key in sorted(keys):
            control, treatment = data.series(key)
            if control:
                deltas.append(OpDelta(key.rsplit(" ", 1)[0], statistics.median(control),
                                      statistics.median(treatment), data.units.get(key, "")))
        return tuple(sorted(deltas, key=lambda d: -abs(d.delta)))
