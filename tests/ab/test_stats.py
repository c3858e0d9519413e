"""Tests of the paired A/B statistics: exact and approximate signed-rank p-values, the
Hodges-Lehmann interval, Benjamini-Hochberg, the decision rule, and seeded simulations of its
error rates under lognormal noise."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from benchlab.schema.comparison import Outcome, PairedEstimate
from benchlab.ab.stats import (
    _exact_p,
    _normal_p,
    apply_bh,
    benjamini_hochberg,
    decide,
    hodges_lehmann,
    log_ratios,
    look_level,
    wilcoxon_signed_rank,
)


def _pairs(
    rng: np.random.Generator, n: int, change: float, sigma: float
) -> tuple[np.ndarray, np.ndarray]:
    """n (control, treatment) timings around 10 ms, lognormal noise, treatment scaled."""
    control = 10.0 * rng.lognormal(0.0, sigma, n)
    treatment = 10.0 * (1.0 + change) * rng.lognormal(0.0, sigma, n)
    return control, treatment


def _brute_force_p(d: list[float]) -> float:
    """Two-sided signed-rank p by enumerating every sign pattern (untied, non-zero d)."""
    n = len(d)
    order = np.argsort(np.abs(d))
    ranks = np.empty(n)
    ranks[order] = np.arange(1, n + 1)
    observed = sum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    sums = [
        sum(r for r, s in zip(ranks, signs, strict=True) if s)
        for signs in itertools.product((0, 1), repeat=n)
    ]
    lower = sum(s <= observed for s in sums) / len(sums)
    upper = sum(s >= observed for s in sums) / len(sums)
    return min(1.0, 2.0 * min(lower, upper))


# --- log_ratios ------------------------------------------------------------------------------


def test_log_ratios_values_and_mirror_symmetry() -> None:
    d = log_ratios([10.0, 20.0, 5.0], [11.0, 20.0, 4.0])
    assert d == pytest.approx([math.log(1.1), 0.0, math.log(0.8)])
    # Swapping sides negates exactly, so mirror pairs tie in absolute value.
    assert np.array_equal(log_ratios([4.0, 7.0], [5.0, 3.0]), -log_ratios([5.0, 3.0], [4.0, 7.0]))


@pytest.mark.parametrize(
    ("control", "treatment"),
    [([1.0, 2.0], [1.0]), ([1.0, 0.0], [1.0, 1.0]), ([1.0, 2.0], [-1.0, 1.0])],
)
def test_log_ratios_rejects_bad_input(control: list[float], treatment: list[float]) -> None:
    with pytest.raises(ValueError):
        log_ratios(control, treatment)


# --- wilcoxon_signed_rank --------------------------------------------------------------------


@pytest.mark.parametrize(("n", "expected"), [(6, 2 / 64), (10, 2 / 1024), (1, 1.0)])
def test_wilcoxon_all_positive_exact(n: int, expected: float) -> None:
    assert wilcoxon_signed_rank(np.arange(1.0, n + 1)) == pytest.approx(expected, abs=1e-15)
    assert wilcoxon_signed_rank(-np.arange(1.0, n + 1)) == pytest.approx(expected, abs=1e-15)


def test_wilcoxon_exact_matches_enumeration() -> None:
    rng = np.random.default_rng(11)
    for n in (3, 5, 8, 10):
        for _ in range(5):
            d = list(rng.normal(0.3, 1.0, n))
            assert wilcoxon_signed_rank(d) == pytest.approx(_brute_force_p(d), abs=1e-12)


def test_wilcoxon_symmetric_data_gives_p_near_one() -> None:
    assert wilcoxon_signed_rank([1, -2, -3, 4, 5, -6, -7, 8]) == 1.0  # exact: W+ = W- = 18
    assert wilcoxon_signed_rank([-3, -2, -1, 1, 2, 3]) == 1.0  # tied |d|: normal path
    assert wilcoxon_signed_rank(np.linspace(-1, 1, 101)) > 0.95  # n > 50: normal path


def test_wilcoxon_zeros_dropped_and_all_zero() -> None:
    assert wilcoxon_signed_rank([0.0, 0.0, 1, 2, 3, 4, 5, 6]) == pytest.approx(2 / 64)
    assert wilcoxon_signed_rank([0.0, 0.0, 0.0]) == 1.0
    assert wilcoxon_signed_rank([]) == 1.0


def test_normal_approximation_close_to_exact_at_50() -> None:
    top = 50 * 51 // 2
    gaps = [abs(_exact_p(w, 50) - _normal_p(w, 50)) for w in range(top + 1)]
    assert max(gaps) < 0.005
    # Where decisions are made, the relative error is small too.
    for w in (400, 434, 450):
        assert _normal_p(w, 50) == pytest.approx(_exact_p(w, 50), rel=0.05)


def test_wilcoxon_ties_use_corrected_normal() -> None:
    # |d| = 1,1,2,2,2,3 (ties): midranks 1.5,1.5,4,4,4,6; all positive so W+ = 21.
    d = [1, 1, 2, 2, 2, 3]
    tie_term = (2**3 - 2) + (3**3 - 3)
    var = 6 * 7 * 13 / 24 - tie_term / 48
    z = (21 - 10.5 - 0.5) / math.sqrt(var)
    assert wilcoxon_signed_rank(d) == pytest.approx(math.erfc(z / math.sqrt(2)))


# --- hodges_lehmann --------------------------------------------------------------------------


def test_hodges_lehmann_known_values() -> None:
    # Walsh averages of [1, 2, 3]: 1, 1.5, 2, 2, 2.5, 3; median 2. n = 3 is too small for
    # 95%, so the interval is the whole range.
    assert hodges_lehmann([1.0, 2.0, 3.0]) == (2.0, 1.0, 3.0)
    # n = 10 at 95%: P(W+ <= 8) = 0.0244 <= 0.025 < P(W+ <= 9), so k = 9.
    d = np.arange(1.0, 11.0)
    walsh = sorted((a + b) / 2 for i, a in enumerate(d) for b in d[i:])
    assert hodges_lehmann(d) == (5.5, walsh[8], walsh[-9])


def test_hodges_lehmann_interval_inverts_the_test() -> None:
    # Without ties the interval excludes 0 exactly when the exact test rejects at 1 - level.
    rng = np.random.default_rng(5)
    for n in (7, 12, 20, 35):
        for _ in range(20):
            d = rng.normal(0.4, 1.0, n)
            _, low, high = hodges_lehmann(d, 0.95)
            assert (not low <= 0.0 <= high) == (wilcoxon_signed_rank(d) <= 0.05)


def test_hodges_lehmann_large_n_and_bad_input() -> None:
    rng = np.random.default_rng(8)
    est, low, high = hodges_lehmann(rng.normal(1.0, 0.1, 200))
    assert low < est < high and abs(est - 1.0) < 0.03 and high - low < 0.06
    with pytest.raises(ValueError):
        hodges_lehmann([])
    with pytest.raises(ValueError):
        hodges_lehmann([1.0, 2.0], level=1.0)


# --- benjamini_hochberg ----------------------------------------------------------------------


def test_benjamini_hochberg_hand_example() -> None:
    p = [0.04, 0.001, 0.03, 0.2, 0.012]
    # Sorted: 0.001, 0.012, 0.03, 0.04, 0.2 -> p*5/rank: 0.005, 0.03, 0.05, 0.05, 0.2;
    # running minimum from the top changes nothing here.
    assert benjamini_hochberg(p) == pytest.approx([0.05, 0.005, 0.05, 0.2, 0.03])


def test_benjamini_hochberg_monotone_and_capped() -> None:
    # Raw scaled values 0.03, 0.025 (not monotone) -> both 0.025; 0.9*3/3 stays 0.9.
    assert benjamini_hochberg([0.01, 0.9, 0.0167]) == pytest.approx([0.025, 0.9, 0.025], abs=1e-3)
    assert benjamini_hochberg([0.8, 0.9]) == [0.9, 0.9]
    assert benjamini_hochberg([1.0, 1.0]) == [1.0, 1.0]
    assert benjamini_hochberg([]) == []
    with pytest.raises(ValueError):
        benjamini_hochberg([0.5, 1.5])


# --- look_level, decide, apply_bh ------------------------------------------------------------


def test_look_level() -> None:
    assert look_level(0.05, 1) == 0.05
    assert look_level(0.05, 3) == pytest.approx(0.05 / 3)
    with pytest.raises(ValueError):
        look_level(0.05, 0)


def test_decide_clear_cases_and_direction() -> None:
    rng = np.random.default_rng(1)
    c, t = _pairs(rng, 30, 0.10, 0.01)
    slow = decide(c, t)
    assert slow.outcome is Outcome.REGRESSION and slow.p_value < 0.05
    assert slow.ci_low < 0.10 < slow.ci_high and slow.n_pairs == 30 and slow.ci_level == 0.95
    assert decide(t, c).outcome is Outcome.IMPROVEMENT
    # Throughput: higher is better, so an increase is an improvement.
    assert decide(c, t, higher_is_worse=False).outcome is Outcome.IMPROVEMENT
    assert decide(t, c, higher_is_worse=False).outcome is Outcome.REGRESSION
    # A real but sub-threshold 10% change with min_effect 20% cannot be a regression.
    assert decide(c, t, min_effect=0.20).outcome is Outcome.NO_CHANGE


def test_decide_look_level_widens_interval() -> None:
    c, t = _pairs(np.random.default_rng(2), 20, 0.0, 0.05)
    one, three = decide(c, t), decide(c, t, n_looks=3)
    assert three.ci_level == pytest.approx(1 - 0.05 / 3)
    assert three.ci_low <= one.ci_low and three.ci_high >= one.ci_high


def test_decide_too_few_pairs_is_undecided() -> None:
    # Identical values would otherwise read as NO_CHANGE from a 5-pair "interval".
    est = decide([1.0, 2.0, 3.0, 4.0, 5.0], [1.001, 2.0, 3.0, 4.0, 5.0])
    assert est.outcome is Outcome.UNDECIDED
    assert decide([1.0] * 8, [1.0] * 8).outcome is Outcome.NO_CHANGE
    with pytest.raises(ValueError):
        decide([], [])


def test_apply_bh_sets_q_and_demotes() -> None:
    def est(p: float, outcome: Outcome) -> PairedEstimate:
        return PairedEstimate(20, 0.05, 0.02, 0.08, 0.95, p, outcome=outcome)

    estimates = [
        est(0.001, Outcome.REGRESSION),
        est(0.04, Outcome.REGRESSION),
        est(0.03, Outcome.IMPROVEMENT),
        est(0.9, Outcome.NO_CHANGE),
    ]
    out = apply_bh(estimates)
    # Sorted p*4/rank: 0.004, 0.06, 0.0533, 0.9; the running minimum from the top makes the
    # middle two 0.0533 > 0.05, so both decisive ones fail.
    assert [e.q_value for e in out] == pytest.approx([0.004, 0.16 / 3, 0.16 / 3, 0.9])
    assert [e.outcome for e in out] == [
        Outcome.REGRESSION,
        Outcome.UNDECIDED,
        Outcome.UNDECIDED,
        Outcome.NO_CHANGE,
    ]
    assert estimates[1].outcome is Outcome.REGRESSION  # inputs untouched
    assert apply_bh([]) == []


# --- simulations (seeded; n = 20 pairs, lognormal noise sigma = 0.05 unless stated) ------------


def _simulate(
    seed: int, reps: int, n: int, change: float, sigma: float, **kwargs: object
) -> tuple[Counter[Outcome], float]:
    """Outcome counts and the share of intervals covering the true change."""
    rng = np.random.default_rng(seed)
    outcomes: Counter[Outcome] = Counter()
    covered = 0
    for _ in range(reps):
        est = decide(*_pairs(rng, n, change, sigma), **kwargs)  # type: ignore[arg-type]
        outcomes[est.outcome] += 1
        covered += est.ci_low <= change <= est.ci_high
    return outcomes, covered / reps


def test_simulated_aa_false_positives_and_coverage() -> None:
    reps = 1000
    outcomes, coverage = _simulate(101, reps, 20, 0.0, 0.05)
    # Binomial SE of a 5% rate over 1000 replicates is ~0.7%: 2% slack is ~3 SE.
    assert outcomes[Outcome.REGRESSION] / reps <= 0.07
    assert (outcomes[Outcome.NO_CHANGE] + outcomes[Outcome.UNDECIDED]) / reps >= 0.9
    assert coverage >= 0.93


def test_simulated_power_at_ten_percent() -> None:
    reps = 400
    outcomes, coverage = _simulate(202, reps, 40, 0.10, 0.05)
    assert outcomes[Outcome.REGRESSION] / reps >= 0.90
    assert coverage >= 0.93


def test_simulated_tiny_change_is_no_change() -> None:
    reps = 200
    outcomes, _ = _simulate(303, reps, 40, 0.002, 0.002)
    assert outcomes[Outcome.NO_CHANGE] / reps >= 0.95


def test_simulated_sequential_looks_keep_alpha() -> None:
    # A/A extended 20 -> 40 -> 80 while undecided, with min_effect 0 so that only the
    # multi-look correction stands between noise and a false call.
    reps, looks = 1000, (20, 40, 80)
    rng = np.random.default_rng(404)
    false_calls = 0
    for _ in range(reps):
        control, treatment = _pairs(rng, looks[-1], 0.0, 0.05)
        for n in looks:
            est = decide(control[:n], treatment[:n], min_effect=0.0, n_looks=len(looks))
            if est.outcome is not Outcome.UNDECIDED:
                false_calls += est.outcome in (Outcome.REGRESSION, Outcome.IMPROVEMENT)
                break
    assert false_calls / reps <= 0.07
