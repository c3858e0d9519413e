"""The two detectors under evaluation, fed by a source of process pairs instead of real runs.

``run_benchlab`` replays benchlab's A/B protocol (``benchlab.ab.pairs.compare_jobs``) on one
metric: ABBA pairs, one observation per process (the median of its iterations), a decision at
each look while it stays undecided, Benjamini-Hochberg, and the verify re-run of a regression
through the same looks. The statistics are the library's own ``decide_log_ratios`` and
``apply_bh``; only the loop that gathers pairs is re-implemented, so that thousands of
comparisons take seconds instead of days. ``run_protocol`` is that loop for any source of
paired log-ratios: ``evaluate_interleaved.py`` feeds it interleaved sessions' estimates.

``faipep_checks`` re-implements FAI-PEP's ``DelayRegressionDetector`` as FAI-PEP runs it over
a commit window; see its docstring and docs/detector.md for the mapping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from benchlab.schema.comparison import Outcome, PairedEstimate
from benchlab.ab.sides import CompareSettings
from benchlab.ab.stats import (
    apply_bh,
    decide_log_ratios,
    hodges_lehmann,
    log_ratios,
    look_level,
    through_looks,
)

# Annotations only: the tests load this file without bench/detector on sys.path.
if TYPE_CHECKING:
    from sources import Source


@dataclass(frozen=True)
class BenchlabRun:
    """What one simulated ``benchlab compare`` of one metric concluded."""

    estimate: PairedEstimate  # after the looks and BH, before verify (its CI is the reported one)
    verified: bool | None  # None: no verify re-run was needed
    ci95: tuple[float, float]  # 95% Hodges-Lehmann interval over the same pairs, as a change
    # What other verify rules would have said on the same fresh pairs (not the library's
    # behaviour; a diagnostic of where power goes). Empty when no verify re-run was needed.
    verify_variants: dict[str, bool] = field(default_factory=dict)

    @property
    def declared_regression(self) -> bool:
        """A regression as ``Comparison.regressions`` counts it: confirmed when verify ran."""
        return self.estimate.outcome is Outcome.REGRESSION and self.verified is not False


def _abba(pairs: np.ndarray, first_index: int, slowdown: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-process observations (control, treatment) of pairs numbered from ``first_index``.

    Pair k runs control first when k is even and treatment first when k is odd, as
    ``pairs.PairEvidence.grow`` does; the treatment's iterations are all ``1 + slowdown`` times longer.
    """
    medians = np.median(pairs, axis=-1)  # (n, 2): slot 0 ran first
    treatment_first = (np.arange(first_index, first_index + len(medians)) % 2).astype(bool)
    control = np.where(treatment_first, medians[:, 1], medians[:, 0])
    treatment = np.where(treatment_first, medians[:, 0], medians[:, 1]) * (1.0 + slowdown)
    return control, treatment


def _decide(d: np.ndarray, settings: CompareSettings) -> PairedEstimate:
    # The same call as PairEvidence.decide (via decide) and SessionEvidence.decide make for a
    # metric: the decision on paired log-ratios, one per process pair or per session.
    return decide_log_ratios(d, min_effect=settings.min_effect, alpha=settings.alpha,
                             n_looks=len(settings.looks))


def run_protocol(draw: Callable[[int, int], np.ndarray],
                 settings: CompareSettings) -> BenchlabRun:
    """One simulated comparison of one metric with the flow of ``compare_jobs``.

    ``draw(first_index, count)`` hands out the next ``count`` paired log-ratios
    ``log(t / c)``, numbered from ``first_index``: one per ABBA process pair
    (:func:`run_benchlab`) or one per interleaved session, its estimate (``evaluate_interleaved``).
    At each look the library's decision is taken on everything drawn so far, extending while
    undecided (``ab.driver``: each evidence through the looks); then Benjamini-Hochberg;
    then, on a regression, the verify re-run: a fresh draw numbered from 0 again, through the
    same looks (``driver._verified``).
    """
    drawn = [np.empty(0)]

    def grow(look: int) -> None:
        drawn[0] = np.concatenate([drawn[0], draw(drawn[0].size, look - drawn[0].size)])

    # The library's looks driver, as compare_jobs runs it.
    estimate = through_looks(settings.looks, grow,
                             lambda: {"m": _decide(drawn[0], settings)}, "m")["m"]
    d = drawn[0]
    # One decided metric here, so BH runs over one estimate; it is called anyway so that the
    # flow, and any future change to apply_bh, stays the library's.
    (estimate,) = apply_bh([estimate], alpha=settings.alpha)
    verified = None
    variants: dict[str, bool] = {}
    if settings.verify and estimate.outcome is Outcome.REGRESSION:
        variants = _verify_variants(draw(0, max(settings.looks)), d.size, settings)
        verified = variants["looks"]
    _, low, high = hodges_lehmann(d, 0.95)
    return BenchlabRun(estimate, verified, (float(np.expm1(low)), float(np.expm1(high))),
                       variants)


def run_benchlab(source: Source, slowdown: float, rng: np.random.Generator,
                 settings: CompareSettings) -> BenchlabRun:
    """One simulated process-pair comparison (``compare_jobs``, one job, one metric)."""

    def draw(first: int, count: int) -> np.ndarray:
        return log_ratios(*_abba(source.pairs(rng, (count,)), first, slowdown))

    return run_protocol(draw, settings)


def _verify_variants(d: np.ndarray, n: int, settings: CompareSettings) -> dict[str, bool]:
    """The library's verify rule and two alternatives, for the report's diagnosis.

    ``d`` holds the re-run's fresh log-ratios, as many as the last look. ``looks`` (the
    library's rule): the re-run goes through the same looks as the first session (20 -> 40 ->
    80, extending while undecided) and must end in a regression. ``once`` (the first version's
    rule): the re-run's first ``n`` pairs, ``n`` being where the first session stopped,
    decided once. ``significant``: those ``n`` pairs need only a significant increase (p below
    the look level, change > 0): significant again, in the same direction.
    """
    again = _decide(d[:n], settings)
    seen = [0]

    def grow(look: int) -> None:
        seen[0] = look

    estimate = through_looks(settings.looks, grow,
                             lambda: {"m": _decide(d[:seen[0]], settings)}, "m")["m"]
    level = look_level(settings.alpha, len(settings.looks))
    return {
        "looks": estimate.outcome is Outcome.REGRESSION,
        "once": again.outcome is Outcome.REGRESSION,
        "significant": again.p_value < level and again.change > 0.0,
    }


# --- FAI-PEP -------------------------------------------------------------------------------

FAIPEP_WINDOW = 12  # repo_driver._getCompareCommits: the latest commit and the 11 before it
FAIPEP_MIN_HISTORY = 5  # DelayRegressionDetector: fewer past runs never flag


def _faipep_summary(values: np.ndarray) -> dict[str, np.ndarray]:
    """p10, p50 and p90 of each run's iterations, as benchmark_driver._getStatistics takes them.

    p10 = sorted[n // 10], p90 = sorted[n - n // 10 - 1] (order statistics, no interpolation),
    p50 the usual median; computed along the last axis for a whole batch at once.
    """
    ordered = np.sort(values, axis=-1)
    n = ordered.shape[-1]
    return {"p10": ordered[..., n // 10], "p50": np.median(ordered, axis=-1),
            "p90": ordered[..., n - n // 10 - 1]}


def _faipep_flagged(latest_p50: np.ndarray, history_p90: np.ndarray) -> np.ndarray:
    """DelayRegressionDetector._detectionP50vsP90 for a batch: history along the last axis."""
    count = history_p90.shape[-1]
    if count < FAIPEP_MIN_HISTORY:
        return np.zeros(latest_p50.shape, dtype=bool)
    ordered = np.sort(history_p90, axis=-1)
    p90_of_p90s = ordered[..., int(count * 9 / 10)]
    # int(range / 10): truncation toward zero in the metric's unit (µs here); range >= 0.
    slack = np.floor((ordered[..., -1] - ordered[..., 0]) / 10.0)
    return latest_p50 > p90_of_p90s + slack


def _faipep_detect(source: Source, slowdown: float, rng: np.random.Generator, replicates: int,
                   regressed: int) -> dict[str, np.ndarray]:
    """One regression check per replicate, in FAI-PEP's diff mode and its raw mode.

    Each of the window's 12 commits is one A/B run: the treatment process runs first, then the
    control process (slot 0, slot 1); the control is the same base build for every commit, so
    FAI-PEP compares ``diff_summary`` values (treatment pX − control p(100−X)). The newest
    ``regressed`` commits carry the slowdown in their treatment.
    """
    runs = source.pairs(rng, (replicates, FAIPEP_WINDOW))
    treatment = runs[..., 0, :].copy()
    control = runs[..., 1, :]
    if regressed:
        treatment[:, -regressed:, :] *= 1.0 + slowdown
    t, c = _faipep_summary(treatment), _faipep_summary(control)
    kinds = {
        # benchmark_driver._mergeDelayData: diff p50 = t p50 − c p50, diff p90 = t p90 − c p10.
        "diff": (t["p50"] - c["p50"], t["p90"] - c["p10"]),
        # detectionOnMeasurement: the treatment's own summary, used when the control changed.
        "raw": (t["p50"], t["p90"]),
    }
    out = {}
    for kind, (p50, p90) in kinds.items():
        # _detectOneBenchmarkRegression: data[0] is the newest run, data[1] the one before,
        # data[2:] the history that both are judged against; both must be flagged.
        history = p90[:, :-2]
        out[kind] = (_faipep_flagged(p50[:, -1], history)
                     & _faipep_flagged(p50[:, -2], history))
    return out


def faipep_checks(source: Source, slowdown: float, rng: np.random.Generator, replicates: int,
                  verify: bool = True) -> dict[str, dict[str, np.ndarray]]:
    """FAI-PEP's check at the commit after a regression, without and with its verify step.

    With ``slowdown`` 0 this is an A/A check (a clean window). Otherwise the two newest
    commits are slow: the earliest check at which the "two latest flagged" rule can fire.
    regression_detectors.checkRegressions re-runs every commit of the window on a flag
    (``run_type`` verify) and detects again on those fresh runs; the regression stands only if
    that second detection fires too. Returns ``{kind: {"flagged": ..., "verified": ...}}``
    boolean arrays over the replicates.
    """
    regressed = 2 if slowdown else 0
    first = _faipep_detect(source, slowdown, rng, replicates, regressed)
    again = _faipep_detect(source, slowdown, rng, replicates, regressed) if verify else None
    return {
        kind: {"flagged": flagged,
               "verified": flagged & again[kind] if again is not None else flagged}
        for kind, flagged in first.items()
    }
