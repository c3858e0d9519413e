"""Statistics with the process as the unit: what the next run will show, and paired ratios.

Iterations inside one process share its memory layout, its thread placement, the minute it
ran in; they vary less among themselves than fresh processes do, so an interval over pooled
iterations says how precisely *this* run measured its own median, not where an identical run
would land (Kalibera & Jones, "Rigorous benchmarking in reasonable time", 2013: the level
whose variance dominates must be the unit of the interval). Here each process contributes one
number, its median, and the intervals come from how those numbers spread.

Timings spread multiplicatively, so the arithmetic is on logarithms; every interval is a
ratio interval turned back into the metric's unit. Student's t accounts for estimating the
spread from few processes; with two processes it is honestly very wide. Everything is
deterministic (no resampling).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "TIE",
    "NextRunInterval",
    "PairedRatio",
    "RunChange",
    "next_run_interval",
    "paired_ratio",
    "run_change",
    "run_change_with_history",
    "t_quantile",
]


def _t_cdf_above_zero(x: float, df: float) -> float:
    """P(0 <= T <= x) for Student's t with ``df`` degrees of freedom, x >= 0 (Simpson's rule).

    The density is smooth and unimodal, so 4000 panels give about 1e-10 absolute error even
    for one degree of freedom at x = 600.
    """
    if x <= 0.0:
        return 0.0
    panels = 4000
    grid = np.linspace(0.0, x, panels + 1)
    log_norm = (math.lgamma((df + 1) / 2) - math.lgamma(df / 2)
                - 0.5 * math.log(df * math.pi))
    density = np.exp(log_norm - (df + 1) / 2 * np.log1p(grid * grid / df))
    weights = np.ones(panels + 1)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return float(np.dot(weights, density) * (x / panels) / 3.0)


@functools.lru_cache(maxsize=1024)
def t_quantile(prob: float, df: float) -> float:
    """The ``prob`` quantile of Student's t with ``df`` degrees of freedom (0.5 < prob < 1).

    Bisection on the distribution function; exact to about 1e-9 (12.706 for 0.975 at one
    degree of freedom, 4.303 at two, 1.960 in the limit).
    """
    if not 0.5 < prob < 1.0:
        raise ValueError(f"t_quantile needs 0.5 < prob < 1, got {prob}")
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    wanted = prob - 0.5
    low, high = 0.0, 1.0
    while _t_cdf_above_zero(high, df) < wanted:
        high *= 2.0
        if high > 1e7:
            return math.inf
    for _ in range(60):
        mid = (low + high) / 2.0
        if _t_cdf_above_zero(mid, df) < wanted:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def _transform(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """Logarithms when every value is positive (a ratio scale), else the values themselves."""
    if np.all(values > 0):
        return np.log(values), True
    return values.astype(float), False


@dataclass(frozen=True, slots=True)
class NextRunInterval:
    """Where the median of the next identical run is expected, from this run's processes.

    ``low``/``high`` are in the metric's unit; ``processes`` is how many processes the spread
    was estimated from; ``spread`` is the standard deviation of their medians (relative, on a
    log scale, when the values are positive).
    """

    low: float
    high: float
    level: float
    processes: int
    spread: float


def next_run_interval(
    process_values: Sequence[Sequence[float]], center: float, level: float = 0.95
) -> NextRunInterval | None:
    """A ``level`` prediction interval for the median of the next run of as many processes.

    Each process is reduced to its median m_i; with k processes whose log medians have
    sample standard deviation s, the next run's centre differs from this run's by about
    sqrt(2/k)·s (both runs estimate it from k processes), so the interval is
    ``center · exp(± t(k-1) · s · sqrt(2/k))``. None with fewer than two processes: one
    process says nothing about how the next one will differ.
    """
    medians = np.array([float(np.median(v)) for v in process_values if len(v)], dtype=float)
    k = medians.size
    if k < 2:
        return None
    scaled, is_log = _transform(medians)
    spread = float(np.std(scaled, ddof=1))
    half = t_quantile(0.5 + level / 2.0, k - 1) * spread * math.sqrt(2.0 / k)
    if is_log and center > 0:
        low, high = center * math.exp(-half), center * math.exp(half)
    else:
        low, high = center - half, center + half
    return NextRunInterval(low, high, level, k, spread)


#: A ratio whose interval lies inside 1 ± TIE is a tie: the two are equal for any purpose a
#: ranking serves (the race settles such a contest, docs/statistics.md).
TIE = 0.03


@dataclass(frozen=True, slots=True)
class PairedRatio:
    """``value`` = b / a from processes paired by round, with its ``level`` interval.

    ``separable`` is False when the interval holds 1: the two cannot be told apart.
    ``rounds`` counts the pairs (None interval bounds with fewer than two).
    """

    value: float
    low: float | None
    high: float | None
    level: float
    rounds: int

    @property
    def separable(self) -> bool:
        """True when the interval excludes 1 (one is faster, beyond the run's noise)."""
        return self.low is not None and self.high is not None and (
            self.low > 1.0 or self.high < 1.0)

    def verdict(self, tie: float = TIE) -> str:
        """``decided`` (the interval excludes 1), ``tie`` (it lies inside 1 ± ``tie``),
        ``open`` (it holds 1 but is wider), or ``plain`` (no interval: fewer than two
        rounds)."""
        if self.low is None or self.high is None:
            return "plain"
        if self.separable:
            return "decided"
        if self.low >= 1 - tie and self.high <= 1 + tie:
            return "tie"
        return "open"


def paired_ratio(
    a_by_round: Sequence[float], b_by_round: Sequence[float], level: float = 0.95
) -> PairedRatio:
    """The ratio b/a from per-round medians measured side by side, with a t interval.

    Round r's two values were measured in the same stretch of the run, so a drift of the
    machine moves both and cancels in their ratio. The estimate is the median of the
    per-round ratios: one odd process (this VM has processes 50% slower than their
    siblings) moves a mean of three ratios by a sixth of its excess and the median not at
    all, which measured halves how much the printed ratio moves between identical runs
    (docs/performance.md §11). The interval is a t interval of the mean log ratio over
    rounds (rounds - 1 degrees of freedom), widened to hold the estimate when an odd round
    pulls the two apart. Values must be positive; unmatched trailing rounds are left out.
    """
    rounds = min(len(a_by_round), len(b_by_round))
    if rounds == 0:
        raise ValueError("paired_ratio needs at least one round of each")
    a = np.asarray(a_by_round[:rounds], dtype=float)
    b = np.asarray(b_by_round[:rounds], dtype=float)
    if np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("paired_ratio needs positive values")
    logs = np.log(b) - np.log(a)
    estimate = float(np.median(logs))
    if rounds < 2:
        return PairedRatio(math.exp(estimate), None, None, level, rounds)
    centre = float(logs.mean())
    half = t_quantile(0.5 + level / 2.0, rounds - 1) * float(np.std(logs, ddof=1)) / math.sqrt(
        rounds)
    low, high = min(centre - half, estimate), max(centre + half, estimate)
    return PairedRatio(math.exp(estimate), math.exp(low), math.exp(high), level, rounds)


@dataclass(frozen=True, slots=True)
class RunChange:
    """The change between two runs' process medians: ratio after/before, and the verdict.

    ``low``/``high`` bound the ratio at ``level`` (Welch's t on log process medians); the
    change is ``significant`` when that interval excludes 1 and the ratio moved by at least
    ``min_effect``.
    """

    ratio: float
    low: float
    high: float
    level: float
    significant: bool


def _verdict(diff: float, half: float, level: float, min_effect: float) -> RunChange:
    """The change of log ratio ``diff`` ± ``half``: significant when the interval excludes no
    change and the ratio moved by at least ``min_effect``."""
    low, high = math.exp(diff - half), math.exp(diff + half)
    significant = (low > 1.0 or high < 1.0) and abs(math.expm1(diff)) >= min_effect
    return RunChange(math.exp(diff), low, high, level, significant)


def run_change(
    before: Sequence[float], after: Sequence[float], *, level: float = 0.99,
    min_effect: float = 0.03,
) -> RunChange | None:
    """Did the metric move between two runs, beyond how their processes spread?

    ``before`` and ``after`` are the per-process medians of each run. Welch's two-sample t on
    their logarithms (Welch-Satterthwaite degrees of freedom) gives the interval of the ratio;
    ``min_effect`` keeps changes too small to matter from being flagged by quiet cells.
    None when either run has fewer than two processes or a value is not positive.
    """
    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    if a.size < 2 or b.size < 2 or np.any(a <= 0) or np.any(b <= 0):
        return None
    la, lb = np.log(a), np.log(b)
    va, vb = float(np.var(la, ddof=1)) / a.size, float(np.var(lb, ddof=1)) / b.size
    diff = float(lb.mean() - la.mean())
    se = math.sqrt(va + vb)
    if se == 0.0:
        return _verdict(diff, 0.0, level, min_effect)
    df = (va + vb) ** 2 / (va * va / (a.size - 1) + vb * vb / (b.size - 1))
    return _verdict(diff, t_quantile(0.5 + level / 2.0, df) * se, level, min_effect)


def run_change_with_history(
    history: Sequence[Sequence[float]], before: Sequence[float], after: Sequence[float], *,
    level: float = 0.99, min_effect: float = 0.03, min_df: int = 6,
) -> RunChange | None:
    """:func:`run_change` with the process spread pooled over the cell's earlier runs.

    Three processes per run estimate their spread with two degrees of freedom, so one odd
    process makes Welch's interval useless. The spread of a cell's processes is a property of
    the cell on its machine, so every run of its history (``history``: earlier runs' process
    medians; then ``before`` and ``after``) contributes its own deviations from its own mean:
    a pooled variance with sum(k - 1) degrees of freedom, and a t interval of the ratio with
    them. None when the runs hold fewer than ``min_df`` degrees of freedom in all (then use
    :func:`run_change`), or a value is not positive.
    """
    runs = [np.asarray(r, dtype=float) for r in (*history, before, after)]
    if any(np.any(r <= 0) for r in runs if r.size) or runs[-1].size < 1 or runs[-2].size < 1:
        return None
    logs = [np.log(r) for r in runs if r.size >= 2]
    df = sum(r.size - 1 for r in logs)
    if df < min_df:
        return None
    pooled = sum(float(np.sum((r - r.mean()) ** 2)) for r in logs) / df
    a, b = np.log(runs[-2]), np.log(runs[-1])
    diff = float(b.mean() - a.mean())
    half = t_quantile(0.5 + level / 2.0, df) * math.sqrt(pooled * (1 / a.size + 1 / b.size))
    return _verdict(diff, half, level, min_effect)
