"""Paired A/B statistics: signed-rank test, Hodges-Lehmann change, decisions and FDR control.

The unit of analysis is a pair of runs (control, treatment) taken back to back in ABBA or
random order, so slow drift of the device cancels inside each pair. Each pair is reduced to
its log-ratio ``log(t / c)``: timings are multiplicative (a 10% slowdown is 10% whatever the
base), and in log space a slowdown and the matching speed-up are mirror images.

On those log-ratios the Wilcoxon signed-rank test gives a p-value and the Hodges-Lehmann
estimator gives the change, with a confidence interval found by inverting the same test. Both
assume only that the log-ratios are symmetric about their centre, not that they are normal,
which matters because phones produce spikes (docs/statistics.md, References).

Everything is deterministic: no resampling and no random numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from statistics import NormalDist

import numpy as np

from benchlab.schema.comparison import Outcome, PairedEstimate

__all__ = [
    "apply_bh",
    "benjamini_hochberg",
    "decide",
    "decide_counts",
    "decide_log_ratios",
    "hodges_lehmann",
    "log_ratios",
    "look_level",
    "through_looks",
    "wilcoxon_signed_rank",
]

# Up to here the exact null distribution is cheap (n(n+1)/2 + 1 cells, n passes) and its
# counts (< 2**50) stay exact in int64; beyond it the normal approximation is very good.
_EXACT_MAX_N = 50
# Relative slack when comparing tail probabilities with alpha/2, so that a probability equal
# to the threshold on paper is not lost to rounding.
_TOL = 1e-9


def _as_1d(values: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite numbers")
    return arr


def _check_prob(value: float, name: str) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {value}")


def log_ratios(control: Sequence[float], treatment: Sequence[float]) -> np.ndarray:
    """Per-pair log-ratios ``log(treatment[i] / control[i])``.

    Raises ValueError when the sequences differ in length or hold a value that is not a
    finite positive number (a ratio of timings is meaningless otherwise).
    """
    c = _as_1d(control, "control")
    t = _as_1d(treatment, "treatment")
    if c.size != t.size:
        raise ValueError(f"control and treatment must pair up: {c.size} vs {t.size} values")
    if np.any(c <= 0.0) or np.any(t <= 0.0):
        raise ValueError("control and treatment values must be positive")
    # A difference of logs rather than log of the quotient: swapping the two sides then gives
    # exactly the negated value, so mirror-image pairs tie in |d| as they should.
    return np.log(t) - np.log(c)


@cache
def _null_cdf(n: int) -> np.ndarray:
    """CDF of the signed-rank statistic W+ for n untied, non-zero differences under H0.

    Under H0 each rank 1..n joins W+ independently with probability 1/2, so the number of
    ways to reach each sum is the coefficient list of prod_i (1 + x**i), built one rank at a
    time. Cell w of the result is P(W+ <= w).
    """
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=np.int64)
    counts[0] = 1
    for rank in range(1, n + 1):
        shifted = np.zeros_like(counts)
        shifted[rank:] = counts[:-rank]
        counts = counts + shifted
    cdf = np.cumsum(counts) / 2.0**n
    cdf.flags.writeable = False  # shared by the cache: nobody may alter it
    return cdf


def _midranks(values: np.ndarray) -> tuple[np.ndarray, float]:
    """Ranks 1..n with tied values sharing their average rank, and the tie term sum(t^3 - t)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts).astype(float)
    ranks = (ends - (counts - 1) / 2.0)[inverse]
    tie_term = float(np.sum(counts.astype(float) ** 3 - counts))
    return ranks, tie_term


def _exact_p(w_plus: int, n: int) -> float:
    """Two-sided exact p-value of an integer W+ among n untied non-zero differences."""
    cdf = _null_cdf(n)
    top = n * (n + 1) // 2
    # The null distribution is symmetric about top/2, so P(W+ >= w) = P(W+ <= top - w).
    tail = min(cdf[w_plus], cdf[top - w_plus])
    return float(min(1.0, 2.0 * tail))


def _normal_p(w_plus: float, n: int, tie_term: float = 0.0) -> float:
    """Two-sided normal-approximation p-value of W+, with tie and continuity corrections."""
    mean = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - tie_term / 48.0
    z = max(abs(w_plus - mean) - 0.5, 0.0) / math.sqrt(var)
    return float(min(1.0, 2.0 * NormalDist().cdf(-z)))


def wilcoxon_signed_rank(d: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that ``d`` is centred on zero.

    Zero differences are dropped before ranking (Wilcoxon's original convention), so they
    count neither for nor against a change; 1.0 is returned when nothing is left. With at
    most 50 remaining differences and no ties among their absolute values the p-value is
    exact, from the null distribution of the rank sum; otherwise it comes from the normal
    approximation with the tie-corrected variance and a continuity correction of 1/2.
    """
    arr = _as_1d(d, "d")
    arr = arr[arr != 0.0]
    n = arr.size
    if n == 0:
        return 1.0
    ranks, tie_term = _midranks(np.abs(arr))
    w_plus = float(np.sum(ranks[arr > 0.0]))
    if n <= _EXACT_MAX_N and tie_term == 0.0:
        return _exact_p(round(w_plus), n)
    return _normal_p(w_plus, n, tie_term)


def _ci_rank(n: int, level: float) -> int | None:
    """1-based k such that the k-th smallest and k-th largest Walsh averages bound a CI.

    The interval misses the centre exactly when W+ (equivalently W-) falls at or below k - 1,
    so k - 1 is the largest c with P(W+ <= c) <= (1 - level)/2 under the null. Returns None
    when even c = 0 is too likely, i.e. n is too small for any interval to reach ``level``.
    """
    half_alpha = (1.0 - level) / 2.0
    if n <= _EXACT_MAX_N:
        cdf = _null_cdf(n)
        fits = np.nonzero(cdf <= half_alpha * (1.0 + _TOL))[0]
        return int(fits[-1]) + 1 if fits.size else None
    mean = n * (n + 1) / 4.0
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    z = NormalDist().inv_cdf(1.0 - half_alpha)
    # P(W+ <= c) ~ Phi((c + 0.5 - mean) / sd): the continuity correction matches _normal_p.
    c = math.floor(mean - 0.5 - z * sd)
    return c + 1 if c >= 0 else None


def _walsh_averages(arr: np.ndarray) -> np.ndarray:
    """All (d_i + d_j) / 2 with i <= j, sorted."""
    rows, cols = np.triu_indices(arr.size)
    return np.sort((arr[rows] + arr[cols]) / 2.0)


def hodges_lehmann(d: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The Hodges-Lehmann centre of ``d`` and its confidence interval: (estimate, low, high).

    The estimate is the median of the n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j. The
    interval inverts the signed-rank test: it runs from the k-th smallest to the k-th largest
    Walsh average, with k taken from the exact null distribution of W+ for n <= 50 and from
    its normal approximation above. Unlike :func:`wilcoxon_signed_rank`, zeros are kept:
    they are observations of the centre like any other.

    When n is too small for any interval to reach ``level`` (n <= 5 at 95%), the full range
    (smallest, largest Walsh average) is returned; its real coverage, 1 - 2**(1 - n), is then
    below ``level``. :func:`decide` refuses to conclude from such an interval.
    """
    _check_prob(level, "level")
    arr = _as_1d(d, "d")
    if arr.size == 0:
        raise ValueError("hodges_lehmann needs at least one value")
    walsh = _walsh_averages(arr)
    estimate = float(np.median(walsh))
    k = _ci_rank(arr.size, level)
    if k is None:
        return estimate, float(walsh[0]), float(walsh[-1])
    return estimate, float(walsh[k - 1]), float(walsh[walsh.size - k])


def benjamini_hochberg(p: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the order of ``p``.

    q for the i-th smallest of m p-values is min over j >= i of p_(j) * m / j, capped at 1;
    rejecting every hypothesis with q <= alpha keeps the false discovery rate at or below
    alpha for independent or positively dependent tests.
    """
    arr = _as_1d(p, "p")
    if np.any((arr < 0.0) | (arr > 1.0)):
        raise ValueError("p-values must lie in [0, 1]")
    m = arr.size
    if m == 0:
        return []
    order = np.argsort(arr, kind="stable")
    scaled = arr[order] * m / np.arange(1, m + 1)
    # The running minimum from the largest p down keeps q monotone in p.
    q_sorted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    q = np.empty(m)
    q[order] = q_sorted
    return [float(x) for x in q]


def look_level(alpha: float, n_looks: int) -> float:
    """Significance level for each of ``n_looks`` interim analyses: Bonferroni, alpha / n_looks.

    A change is declared at the first look where the test rejects, so the overall false
    positive rate is P(reject at some look) <= sum of the per-look levels = alpha, whatever
    the correlation between looks (they share pairs, so they are strongly correlated). Stopping
    early for NO_CHANGE only removes chances to reject, so it never raises that rate.

    Bonferroni over Pocock or O'Brien-Fleming because those boundaries are derived for a
    normal statistic at equally spaced information, while our looks at 20, 40 and 80 pairs are
    geometric and the statistic is a rank sum; the Bonferroni bound needs neither assumption.
    The price is small with few looks: for three looks at two-sided 0.05 it uses 0.0167 per
    look against Pocock's 0.0221.
    """
    _check_prob(alpha, "alpha")
    if n_looks < 1:
        raise ValueError(f"n_looks must be at least 1, got {n_looks}")
    return alpha / n_looks


def decide(
    control: Sequence[float],
    treatment: Sequence[float],
    *,
    min_effect: float = 0.01,
    alpha: float = 0.05,
    n_looks: int = 1,
    higher_is_worse: bool = True,
) -> PairedEstimate:
    """Analyse paired runs and classify the change of treatment over control.

    ``n_looks`` is the number of looks planned in total (e.g. 3 for 20 -> 40 -> 80 pairs) and
    must be the same at every look; each look tests at ``look_level(alpha, n_looks)`` and
    reports the confidence interval at one minus that level. With delta = ``min_effect`` and
    delta' = 1 - 1/(1 + delta) (the same distance as delta in log space), the outcome is:

    - an increase when the interval lies wholly above delta and p < the look level;
    - a decrease when it lies wholly below -delta' and p < the look level;
    - NO_CHANGE when it lies wholly inside (-delta', delta): an equivalence verdict, so an
      absence of evidence alone never reads as "no change";
    - UNDECIDED otherwise, and also whenever there are too few pairs for the interval to
      reach its level. The caller extends the run, or reports UNDECIDED at the last look.

    For timings (``higher_is_worse``) an increase is a REGRESSION and a decrease an
    IMPROVEMENT; for metrics where higher is better (throughput) the two labels swap.
    """
    return decide_log_ratios(log_ratios(control, treatment), min_effect=min_effect,
                             alpha=alpha, n_looks=n_looks, higher_is_worse=higher_is_worse)


def decide_log_ratios(
    d: Sequence[float] | np.ndarray,
    *,
    min_effect: float = 0.01,
    alpha: float = 0.05,
    n_looks: int = 1,
    higher_is_worse: bool = True,
) -> PairedEstimate:
    """:func:`decide` on paired log-ratios ``log(treatment/control)`` given directly: one per
    process pair, or one per interleaved session (the median of its blocks' log-ratios)."""
    if min_effect < 0.0:
        raise ValueError(f"min_effect must not be negative, got {min_effect}")
    level_alpha = look_level(alpha, n_looks)
    d = _as_1d(d, "log-ratios")
    if d.size == 0:
        raise ValueError("decide needs at least one pair")
    ci_level = 1.0 - level_alpha
    p = wilcoxon_signed_rank(d)
    hl, lo, hi = hodges_lehmann(d, ci_level)
    change, ci_low, ci_high = math.expm1(hl), math.expm1(lo), math.expm1(hi)

    enough = _ci_rank(d.size, ci_level) is not None  # else the interval is the data's range
    outcome = _outcome(p < level_alpha, ci_low, ci_high, min_effect, higher_is_worse, enough)
    return PairedEstimate(
        n_pairs=int(d.size),
        change=change,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_level=ci_level,
        p_value=p,
        outcome=outcome,
    )


def _outcome(significant: bool, ci_low: float, ci_high: float, min_effect: float,
             higher_is_worse: bool, enough: bool = True) -> Outcome:
    """The verdict of an interval of the relative change (see :func:`decide`)."""
    up_threshold = min_effect
    down_threshold = -(1.0 - 1.0 / (1.0 + min_effect))
    if not enough:
        return Outcome.UNDECIDED
    if significant and ci_low > up_threshold:
        return Outcome.REGRESSION if higher_is_worse else Outcome.IMPROVEMENT
    if significant and ci_high < down_threshold:
        return Outcome.IMPROVEMENT if higher_is_worse else Outcome.REGRESSION
    if down_threshold < ci_low and ci_high < up_threshold:
        return Outcome.NO_CHANGE
    return Outcome.UNDECIDED


def decide_counts(
    control: Sequence[Sequence[float]],
    treatment: Sequence[Sequence[float]],
    *,
    min_effect: float = 0.01,
    alpha: float = 0.05,
    n_looks: int = 1,
    higher_is_worse: bool = True,
) -> PairedEstimate:
    """Decide on counted instructions: ``control[k]``/``treatment[k]`` are the per-call counts
    of the k-th process pair's two processes.

    A count has no timing noise; what varies is the work itself: call to call inside a process
    (memory pools, caches of the runtime) and, less, process to process. Each pair is
    reduced to the mean log-ratio of its calls taken in the same position after the warm-up
    (call i against call i: a runtime's memory pools make a call's work depend on its
    position, alike on both sides), with the standard error of that mean; where the sides
    counted different numbers of calls, to the log-ratio of the two processes' mean counts,
    whose variance is the sum of their squared relative standard errors. The interval is
    normal at the look's level, as wide as the larger of that within-process error and,
    from two pairs on, the spread of the pairs' log-ratios
    (``docs/statistics.md``, "Counted instructions"). So one pair decides when the calls agree
    with each other, and a process that counts differently from its twin widens the next
    look's interval instead of passing unseen. The verdicts are :func:`decide`'s.
    """
    if len(control) != len(treatment) or not control:
        raise ValueError("decide_counts needs one or more pairs of processes")
    ratios, within = [], []
    for c_calls, t_calls in zip(control, treatment, strict=True):
        if len(c_calls) == len(t_calls) > 1 and min(*c_calls, *t_calls) > 0:
            # Call i of one side with call i of the other: a runtime's pools and caches make
            # a call's work depend on its position after the warm-up, alike in both.
            mean, se = _mean_and_error([math.log(t / c)
                                        for c, t in zip(c_calls, t_calls, strict=True)])
            ratios.append(mean)
            within.append(se ** 2)
            continue
        (c_mean, c_se), (t_mean, t_se) = _mean_se(c_calls), _mean_se(t_calls)
        ratios.append(math.log(t_mean / c_mean))
        within.append((c_se / c_mean) ** 2 + (t_se / t_mean) ** 2)
    n = len(ratios)
    centre = math.fsum(ratios) / n
    variance = math.fsum(within) / n / n
    if n > 1:
        between = math.fsum((r - centre) ** 2 for r in ratios) / (n - 1) / n
        variance = max(variance, between)
    level_alpha = look_level(alpha, n_looks)
    sd = math.sqrt(variance)
    half = NormalDist().inv_cdf(1.0 - level_alpha / 2.0) * sd
    if sd > 0:
        p = 2.0 * (1.0 - NormalDist().cdf(abs(centre) / sd))
    else:
        p = 0.0 if centre != 0 else 1.0
    ci_low, ci_high = math.expm1(centre - half), math.expm1(centre + half)
    return PairedEstimate(
        n_pairs=n, change=math.expm1(centre), ci_low=ci_low, ci_high=ci_high,
        ci_level=1.0 - level_alpha, p_value=p,
        outcome=_outcome(p < level_alpha, ci_low, ci_high, min_effect, higher_is_worse),
    )


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean of a process's per-call counts and its standard error (0 with one call)."""
    if not values or min(values) <= 0:
        raise ValueError("a counted process needs one or more positive counts")
    return _mean_and_error(values)


def _mean_and_error(values: Sequence[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error (0 with one value)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n == 1:
        return mean, 0.0
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def apply_bh(estimates: Sequence[PairedEstimate], alpha: float = 0.05) -> list[PairedEstimate]:
    """Set Benjamini-Hochberg q-values across ``estimates`` and demote what fails them.

    Every estimate gets its q-value. A REGRESSION or IMPROVEMENT whose q exceeds ``alpha``
    becomes UNDECIDED: its own test passed, but among this many metrics it is not safe to
    call it a discovery. NO_CHANGE and UNDECIDED keep their outcome. Returns new objects in
    the input order.
    """
    _check_prob(alpha, "alpha")
    qs = benjamini_hochberg([e.p_value for e in estimates])
    decisive = (Outcome.REGRESSION, Outcome.IMPROVEMENT)
    adjusted = []
    for est, q in zip(estimates, qs, strict=True):
        outcome = Outcome.UNDECIDED if est.outcome in decisive and q > alpha else est.outcome
        adjusted.append(dataclasses.replace(est, q_value=q, outcome=outcome))
    return adjusted


def through_looks(
    looks: Sequence[int],
    grow: Callable[[int], None],
    decide_now: Callable[[], Mapping[str, PairedEstimate]],
    key: str,
) -> dict[str, PairedEstimate]:
    """The staged decision loop every A/B mode shares (process pairs, sessions, their
    verify re-runs, and track through them): at each look in turn, ``grow`` the evidence to
    that many pairs or sessions and decide every metric; stop at the first look where
    ``key`` is decided, or where it cannot be decided at all. Returns the last decisions."""
    estimates: dict[str, PairedEstimate] = {}
    for look in looks:
        grow(look)
        estimates = dict(decide_now())
        decided = estimates.get(key)
        if decided is None or decided.outcome is not Outcome.UNDECIDED:
            break
    return estimates
