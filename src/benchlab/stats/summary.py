"""Summary statistics, confidence intervals, noise checks and the adaptive stopping rule.

Timings are skewed, heavy-tailed and sometimes multimodal, so the centre reported is the
median, with a distribution-free confidence interval from order statistics rather than a
normal-theory interval around the mean. Everything here is deterministic: no resampling, no
random numbers, so the same samples always give the same summary and the same warnings.

Iterations inside one process are not independent (docs/statistics.md): the interval
computed over them describes that process's run, not the population of runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from benchlab.stats.noise import finite_values, noise_warnings
from benchlab.stats.runstats import next_run_interval
from benchlab.schema.result import DetailKey, StopReason, Summary

__all__ = [
    "AdaptiveStop",
    "StopDecision",
    "StopReason",
    "ci_rel_halfwidth",
    "median_ci",
    "noise_warnings",
    "summarize",
]

_EXACT_CI_MAX_N = 20000

# Summary fields that an extra-percentile request may name; they are already reported.
_PRESENT = frozenset(
    {"count", "mean", "stdev", "min", "max", "median", "mad", "cv",
     "p0", "p10", "p50", "p90", "p99", "p100"}
)  # fmt: skip
_PERCENTILE_NAME = re.compile(r"p(\d+(?:\.\d+)?)")


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be between 0 and 1, got {level}")


def _lower_rank(n: int, level: float) -> int | None:
    """0-based index j so that [x(j), x(n-1-j)] covers the median with prob >= level.

    The number of values below the true median is Binomial(n, 1/2); the interval misses the
    median with probability 2*P(B <= j). Returns the largest such j, or None when even the full
    range (j = 0) falls short of ``level``.
    """
    alpha = 1.0 - level
    if n > _EXACT_CI_MAX_N:
        # The normal approximation (with continuity correction) is accurate here and O(1).
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        j = math.floor(n / 2.0 - 0.5 - z * math.sqrt(n) / 2.0)
        return j if j >= 0 else None
    k = np.arange(n // 2 + 1, dtype=float)
    # log pmf built from the ratio pmf(k+1)/pmf(k) = (n-k)/(k+1); no factorials, no overflow.
    steps = np.log((n - k[:-1]) / (k[:-1] + 1.0))
    log_pmf = -n * math.log(2.0) + np.concatenate(([0.0], np.cumsum(steps)))
    cdf = np.cumsum(np.exp(log_pmf))
    fits = np.nonzero(2.0 * cdf <= alpha * (1.0 + 1e-9))[0]
    return int(fits[-1]) if fits.size else None


def _median_ci_sorted(ordered: np.ndarray, level: float) -> tuple[float, float, bool]:
    """(low, high, exact) where exact is False when (min, max) had to stand in."""
    n = ordered.size
    j = _lower_rank(n, level)
    if j is None:
        return float(ordered[0]), float(ordered[-1]), False
    return float(ordered[j]), float(ordered[n - 1 - j]), True


def median_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval of the median, from order statistics.

    The interval holds the median with probability at least ``level`` whatever the
    distribution (continuous; ties only make it more conservative). When there are too few
    values for any interval to reach ``level`` (n <= 5 at 95%), (min, max) is returned; it
    then covers less than asked, and :func:`summarize` says so in a warning.
    """
    _check_level(level)
    arr = finite_values(values)
    if arr.size == 0:
        raise ValueError("median_ci needs at least one value")
    low, high, _ = _median_ci_sorted(np.sort(arr), level)
    return low, high


def ci_rel_halfwidth(values: Sequence[float], level: float = 0.95) -> float:
    """Half the width of the median's confidence interval, relative to ``|median|``.

    ``inf`` when it is undefined: no values, too few values for an interval at ``level``, or
    a zero median with a non-zero width (a zero-width interval at zero gives 0.0).
    """
    _check_level(level)
    arr = finite_values(values)
    if arr.size == 0:
        return math.inf
    ordered = np.sort(arr)
    low, high, exact = _median_ci_sorted(ordered, level)
    if not exact:
        return math.inf
    half = (high - low) / 2.0
    median = abs(float(np.median(ordered)))
    if median == 0.0:
        return 0.0 if half == 0.0 else math.inf
    return half / median


def _percentile_request(name: str) -> float | None:
    """The q of an extra ``pN`` request, None when the name is already a summary field."""
    key = name.strip().lower()
    if key in _PRESENT:
        return None
    match = _PERCENTILE_NAME.fullmatch(key)
    if match is None:
        raise ValueError(f"unknown statistic {name!r}: expected pN such as p95 or p99.9")
    q = float(match.group(1))
    if q > 100.0:
        raise ValueError(f"percentile {name!r} is above 100")
    return q


def summarize(
    values: Sequence[float],
    unit: str,
    *,
    ci_level: float = 0.95,
    extra_percentiles: Sequence[str] = (),
    segments: Sequence[Sequence[float]] | None = None,
) -> Summary:
    """Summary statistics of one metric's values.

    Percentiles use linear interpolation (numpy's default). ``stdev`` is the sample standard
    deviation (ddof=1; 0 for one value). ``mad`` is the median absolute deviation about the
    median, *unscaled* (multiply by 1.4826 to estimate a normal sigma). ``cv`` is
    ``stdev/|mean|`` (inf when the mean is 0 but values vary). ``ci_low``/``ci_high`` come from
    :func:`median_ci`; when too few values exist for that level, they are (min, max) and a
    warning says the interval is weaker than asked. ``extra_percentiles`` takes names like
    ``p95`` or ``p99.9``; names of fields already reported (``p50``, ``mean``, ``MAD``...) are
    accepted and skipped, anything else raises ``ValueError``. ``segments`` (the values split
    by the process they came from) is passed on to :func:`noise_warnings`; with two or more of
    them the interval becomes the process-level one of
    :func:`benchlab.stats.runstats.next_run_interval` (widened, never narrowed, from the pooled one),
    which predicts where the next identical run's median will land.
    """
    _check_level(ci_level)
    arr = finite_values(values)
    if arr.size == 0:
        raise ValueError("summarize needs at least one value")
    requests: dict[str, float] = {}
    for name in extra_percentiles:
        q = _percentile_request(name)
        if q is not None:
            requests[name.strip().lower()] = q
    ordered = np.sort(arr)
    n = ordered.size
    p10, p50, p90, p99 = (float(v) for v in np.percentile(ordered, [10, 50, 90, 99]))
    mean = float(ordered.mean())
    stdev = float(ordered.std(ddof=1)) if n > 1 else 0.0
    mad = float(np.median(np.abs(ordered - p50)))
    if mean != 0.0:
        cv = stdev / abs(mean)
    else:
        cv = 0.0 if stdev == 0.0 else math.inf
    low, high, exact = _median_ci_sorted(ordered, ci_level)
    warnings: list[str] = []
    if not exact:
        warnings.append(
            f"Too few samples ({n}) for a {ci_level:.0%} confidence interval of the median: "
            "the reported interval is the full range, which covers less than asked"
        )
    warnings.extend(noise_warnings(arr, segments=segments))
    parts = [seg for seg in segments or () if len(seg)]
    process_p50s = tuple(float(np.median(finite_values(seg))) for seg in parts)
    ahead = next_run_interval(parts, p50, ci_level)
    if ahead is not None:
        low, high = min(low, ahead.low), max(high, ahead.high)
        if ahead.processes == 2:
            warnings.append(
                "Only 2 processes: the interval rests on one difference between them and is "
                "wide; 3 or more processes (--repeat) make it useful")
    extra = {key: float(np.percentile(ordered, q)) for key, q in requests.items()}
    return Summary(
        unit=unit,
        count=n,
        mean=mean,
        stdev=stdev,
        min=float(ordered[0]),
        p10=p10,
        p50=p50,
        p90=p90,
        p99=p99,
        max=float(ordered[-1]),
        mad=mad,
        cv=cv,
        ci_low=low,
        ci_high=high,
        ci_level=ci_level,
        warnings=tuple(warnings),
        percentiles=extra,
        processes=max(len(parts), 1),
        process_p50s=process_p50s,
    )


@dataclass(frozen=True, slots=True)
class StopDecision:
    """The verdict to stop: why, after how many values, and how precise the median was.

    ``rel_halfwidth`` is :func:`ci_rel_halfwidth` of the values at the time of the decision
    (``inf`` when too few values for an interval).
    """

    reason: StopReason
    iterations: int
    elapsed: float
    rel_halfwidth: float

    def to_detail(self) -> dict[str, object]:
        """Plain-JSON facts for a result's ``details`` (an infinite width becomes None)."""
        width = self.rel_halfwidth if math.isfinite(self.rel_halfwidth) else None
        return {
            DetailKey.STOP_REASON: self.reason.value,
            "iterations": self.iterations,
            "elapsed_s": self.elapsed,
            "ci_rel_halfwidth": width,
        }


class AdaptiveStop:
    """Decides, iteration by iteration, when a measuring loop has measured enough.

    Rules, first match wins: ``elapsed >= max_time`` stops ("time_budget_exhausted", even
    before ``min_iters``); ``len(values) >= max_iters`` stops ("max_iterations"); nothing stops
    before both ``min_iters`` values and ``min_time`` seconds; then without a target the loop
    stops at once ("fixed_iterations"), and with one it stops when the median's relative CI
    half-width is at most ``target_rel_halfwidth`` ("target_ci_reached").

    The configuration is read-only; the object also remembers when it last computed the
    interval, so use a fresh one per loop. Cost: the interval (a sort) is recomputed only once
    the count has grown since the last check by 10% or by 16 values, whichever comes first,
    but never by less than 1%: so it is checked at nearly every value of a short run, every
    16 values of a medium one, and a long fast run (10^5+ values) pays about one sort per 1%
    of growth, well under a microsecond per value. The price is stopping up to 16 values (or
    1%) after the target was first met. The time and iteration limits are checked every call.
    """

    __slots__ = (
        "_checked_at",
        "_ci_level",
        "_max_iters",
        "_max_time",
        "_min_iters",
        "_min_time",
        "_target",
    )

    def __init__(
        self,
        *,
        target_rel_halfwidth: float | None = None,
        min_iters: int = 1,
        min_time: float = 0.0,
        max_time: float | None = None,
        max_iters: int | None = None,
        ci_level: float = 0.95,
    ) -> None:
        if target_rel_halfwidth is not None and not target_rel_halfwidth > 0:
            raise ValueError("target_rel_halfwidth must be positive")
        if min_iters < 1:
            raise ValueError("min_iters must be at least 1")
        if max_iters is not None and max_iters < min_iters:
            raise ValueError("max_iters must be at least min_iters")
        if min_time < 0 or (max_time is not None and max_time <= 0):
            raise ValueError("min_time must be >= 0 and max_time > 0")
        _check_level(ci_level)
        self._target = target_rel_halfwidth
        self._min_iters = int(min_iters)
        self._min_time = float(min_time)
        self._max_time = None if max_time is None else float(max_time)
        self._max_iters = None if max_iters is None else int(max_iters)
        self._ci_level = ci_level
        self._checked_at = 0

    def _decide(self, reason: StopReason, values: Sequence[float], elapsed: float) -> StopDecision:
        width = ci_rel_halfwidth(values, self._ci_level)
        return StopDecision(reason, len(values), elapsed, width)

    def should_stop(self, values: Sequence[float], elapsed: float) -> StopDecision | None:
        """A :class:`StopDecision` when the loop should stop now, else None.

        ``values`` are all values measured so far (in order) and ``elapsed`` the seconds spent
        measuring them; the caller owns the clock, which keeps this testable.
        """
        n = len(values)
        if self._max_time is not None and elapsed >= self._max_time:
            return self._decide(StopReason.TIME_BUDGET_EXHAUSTED, values, elapsed)
        if self._max_iters is not None and n >= self._max_iters:
            return self._decide(StopReason.MAX_ITERATIONS, values, elapsed)
        if n < self._min_iters or elapsed < self._min_time:
            return None
        if self._target is None:
            return self._decide(StopReason.FIXED_ITERATIONS, values, elapsed)
        if self._checked_at:
            last = self._checked_at
            step = max(1, min(16, math.ceil(0.1 * last)), math.ceil(0.01 * last))
            if n < self._checked_at + step:
                return None
        self._checked_at = n
        width = ci_rel_halfwidth(values, self._ci_level)
        if width <= self._target:
            return StopDecision(StopReason.TARGET_CI_REACHED, n, elapsed, width)
        return None
