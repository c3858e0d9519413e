"""Noise checks: reasons not to trust a metric's values, each naming what to do.

With the values of several fresh processes the process is the unit: iterations noisy inside
the processes, a trend most processes share, processes at distinct levels. One run's values
alone get the classic checks: variability, a trend over the run, several modes. Everything is
deterministic (no resampling), like the rest of :mod:`benchlab.stats.summary`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["finite_values", "noise_warnings"]

_CV_LIMIT = 0.10
_MAD_TO_SIGMA = 1.4826  # scales a MAD to a normal distribution's sigma
_MIN_N_NOISE = 8  # fewer values say nothing reliable about CV or trends
_TREND_Z = 3.0  # two-sided p of about 0.003
_TREND_MIN_CHANGE = 0.05  # level change over the run, relative to the median
_TREND_MAX_POINTS = 1000  # Mann-Kendall and Theil-Sen are quadratic: thin long runs
_MIN_N_MODES = 20
_MODE_MIN_MASS = 0.05
_MODE_MIN_COUNT = 4  # with n = 20, one stray value is already 5%
_MODE_MAX_VALLEY = 0.7  # a dip shallower than this (valley/lower peak) is noise, not two modes
_LEVEL_GAP = 0.10  # processes this far apart (relative) run at distinct levels...
_LEVEL_WITHIN_FACTOR = 4.0  # ...when the gap is also this many times the iterations' spread
_LEVEL_ODD_GAP = 0.25  # one odd process is a level of its own only this far from the rest


def finite_values(values: Sequence[float]) -> np.ndarray:
    """``values`` as a flat float array; ValueError unless every one is a finite number."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError("values must be a flat sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite numbers")
    return arr


def _trend(arr: np.ndarray) -> tuple[float, float] | None:
    """(Mann-Kendall z, Theil-Sen change over the run relative to the median) when the trend
    is significant (|z| > 3) and moves the level by more than 5%; else None."""
    n = arr.size
    if n > _TREND_MAX_POINTS:
        # Evenly spaced thinning keeps a trend's shape and, under no trend, the test's validity.
        positions = np.round(np.linspace(0, n - 1, _TREND_MAX_POINTS)).astype(int)
    else:
        positions = np.arange(n)
    x = arr[positions]
    m = x.size
    upper = np.triu_indices(m, k=1)
    diffs = (x[None, :] - x[:, None])[upper]
    s = float(np.sign(diffs).sum())
    _, ties = np.unique(x, return_counts=True)
    tie_term = float(np.sum(ties * (ties - 1.0) * (2.0 * ties + 5.0)))
    variance = (m * (m - 1.0) * (2.0 * m + 5.0) - tie_term) / 18.0
    if variance <= 0.0 or s == 0.0:
        return None
    z = (s - math.copysign(1.0, s)) / math.sqrt(variance)
    if abs(z) <= _TREND_Z:
        return None
    gaps = (positions[None, :] - positions[:, None])[upper]
    slope = float(np.median(diffs / gaps))
    median = float(np.median(arr))
    if median == 0.0:
        return None
    change = slope * (n - 1) / abs(median)
    if abs(change) <= _TREND_MIN_CHANGE:
        return None
    return z, change


def _trend_warning(arr: np.ndarray) -> str | None:
    """The trend of one run (:func:`_trend`) as a sentence."""
    found = _trend(arr)
    if found is None:
        return None
    z, change = found
    if change > 0:
        what = "values rise"
        meaning = "slowing down (throttling?)"
    else:
        what = "values fall"
        meaning = "speeding up (still warming up?)"
    return (
        f"Trend across iterations: {what} by {abs(change):.0%} over the run "
        f"(Mann-Kendall z = {z:.1f}); {meaning}"
    )


def _count_modes(arr: np.ndarray) -> int:
    """Modes of a Gaussian KDE with Silverman's bandwidth, ignoring negligible bumps.

    Runs on log values when all are positive, since timings spread multiplicatively. A bump
    counts as a mode only when its region holds >= 5% of the values (and at least 4 of them)
    and the valley separating it from its neighbour dips below 70% of the lower peak. These
    limits were tuned on simulated unimodal data (lognormal, normal, gamma, shifted
    exponential, rare outliers), where they raise a false alarm in a few percent of runs of
    20-50 values at most.
    """
    x = np.log(arr) if np.all(arr > 0) else arr.copy()
    n = x.size
    q1, q25, q75, q99 = np.percentile(x, [1, 25, 75, 99])
    sd = float(np.std(x, ddof=1))
    iqr = float(q75 - q25)
    spread = min(sd, iqr / 1.34) if iqr > 0 else sd
    h = 0.9 * spread * n ** (-0.2)
    distinct = np.unique(x)
    if distinct.size < 3 or h <= 0:
        return 1
    # Quantised timers put values on a lattice; smoothing less than its step invents modes.
    h = max(h, float(np.min(np.diff(distinct))))
    # The extreme 1% on each side is left out so one far outlier cannot stretch the grid;
    # it could not hold 5% of the values anyway.
    lo, hi = float(q1) - 3.0 * h, float(q99) + 3.0 * h
    points = int(min(4096, math.ceil((hi - lo) / (h / 4.0)) + 1))
    points = max(points, 64)
    step = (hi - lo) / (points - 1)
    h = max(h, step)
    bins = np.clip(np.round((x - lo) / step).astype(int), -1, points)
    inside = bins[(bins >= 0) & (bins < points)]
    counts = np.bincount(inside, minlength=points).astype(float)
    reach = int(math.ceil(4.0 * h / step))
    offsets = np.arange(-reach, reach + 1) * step
    full = np.convolve(counts, np.exp(-0.5 * (offsets / h) ** 2), mode="full")
    density = full[reach : reach + points]
    left = np.concatenate(([-np.inf], density[:-1]))
    right = np.concatenate((density[1:], [-np.inf]))
    peaks = list(np.nonzero((density > left) & (density >= right))[0])
    min_mass = max(_MODE_MIN_MASS, _MODE_MIN_COUNT / n)
    while len(peaks) > 1:
        valleys = [
            a + int(np.argmin(density[a : b + 1])) for a, b in zip(peaks, peaks[1:], strict=False)
        ]
        edges = [0, *(v + 1 for v in valleys), points]
        masses = [counts[a:b].sum() / n for a, b in zip(edges, edges[1:], strict=False)]
        worst: tuple[float, int] | None = None
        for i, valley in enumerate(valleys):
            smaller = min(masses[i], masses[i + 1])
            lower_peak = min(density[peaks[i]], density[peaks[i + 1]])
            if smaller < min_mass or density[valley] > _MODE_MAX_VALLEY * lower_peak:
                if worst is None or smaller < worst[0]:
                    worst = (smaller, i)
        if worst is None:
            break
        i = worst[1]
        # Merge the pair: the lower of the two peaks goes, its region joins the other's.
        drop = i if density[peaks[i]] < density[peaks[i + 1]] else i + 1
        del peaks[drop]
    return len(peaks)


def noise_warnings(
    values: Sequence[float], *, segments: Sequence[Sequence[float]] | None = None
) -> tuple[str, ...]:
    """Reasons not to trust these values, each a sentence for the user that names what to do;
    empty when none.

    With ``segments`` (the values split by the fresh process they came from), two or more of
    them, the process is the unit (:func:`_process_warnings`): iterations that vary widely
    inside the processes, a trend shared by most processes, and processes running at distinct
    levels. Otherwise the values are one run, checked in this order:

    * variability: a coefficient of variation above 10% (n >= 8, positive mean and median),
      when the bulk of the values is that noisy too: the robust CV, 1.4826*MAD/median, must
      also exceed 10%, so a handful of outliers inflating the stdev does not count;
    * a monotone trend (n >= 8): Mann-Kendall |z| > 3 with tie correction, and a Theil-Sen
      slope that moves the level by more than 5% of the median over the run, so tiny drifts
      that long runs make significant pass;
    * several modes (n >= 20): peaks of a Gaussian KDE on log values with Silverman's
      bandwidth, ignoring bumps that hold under 5% of the values or barely dip.

    Isolated outliers are not a warning by themselves: the median shrugs them off.
    """
    parts = [finite_values(seg) for seg in segments or () if len(seg)]
    if len(parts) >= 2:
        return _process_warnings(parts)
    arr = finite_values(values)
    found: list[str] = []
    n = arr.size
    if n >= _MIN_N_NOISE:
        mean = float(arr.mean())
        median = float(np.median(arr))
        if mean > 0 and median > 0:
            cv = float(arr.std(ddof=1)) / mean
            # A few outliers inflate the stdev alone; the MAD-based spread tells them apart.
            robust_cv = _robust_cv(arr)
            if cv > _CV_LIMIT and robust_cv > _CV_LIMIT:
                found.append(
                    f"High variability: CV is {cv:.1%} (above {_CV_LIMIT:.0%}); "
                    "single numbers from this run are unreliable"
                )
        trend = _trend_warning(arr)
        if trend:
            found.append(trend)
    if n >= _MIN_N_MODES:
        modes = _count_modes(arr)
        if modes > 1:
            found.append(
                f"Multimodal: the values cluster around {modes} distinct levels; "
                "the median may sit between them"
            )
    return tuple(found)


def _robust_cv(arr: np.ndarray) -> float:
    median = float(np.median(arr))
    if median <= 0:
        return 0.0
    return _MAD_TO_SIGMA * float(np.median(np.abs(arr - median))) / median


def _process_warnings(parts: Sequence[np.ndarray]) -> tuple[str, ...]:
    """The noise checks with the process as the unit; each warning says what to do.

    * variability: the median process's robust CV (1.4826*MAD/median of its iterations)
      above 10%: the iterations themselves are noisy, typically another program taking the
      CPU; the median holds, the tail percentiles do not;
    * a trend inside most processes, the same way (Mann-Kendall and Theil-Sen as for one
      run, in more than half of the processes with 8 values or more): still warming up, or
      throttling;
    * levels: the process medians fall into two groups more than 10% apart, the gap four
      times the iterations' own spread at least: the processes differ (thread placement,
      memory layout), which the interval already pays for, and which steadier settings or
      more processes address. A single odd process counts only 25% or more away.
    """
    found: list[str] = []
    long_enough = [p for p in parts if p.size >= _MIN_N_NOISE and float(np.median(p)) > 0]
    if long_enough:
        spread = float(np.median([_robust_cv(p) for p in long_enough]))
        if spread > _CV_LIMIT:
            found.append(
                f"High variability within processes: iterations vary by ±{spread:.0%} "
                "(robust CV of the median process); another program taking the CPU? The "
                "median holds, p90/p99 do not: measure on a quiet machine"
            )
        changes = [found[1] for p in long_enough for found in [_trend(p)] if found]
        for sign, (what, advice) in {1: ("rise", "slowing down (throttling?): add --cooldown "
                                           "or a --temperature-gate"),
                                     -1: ("fall", "still warming up: raise --warmup")}.items():
            same = [change for change in changes if math.copysign(1, change) == sign]
            if len(same) * 2 > len(parts):
                found.append(
                    f"Trend across iterations: values {what} by a median "
                    f"{float(np.median(np.abs(same))):.0%} within {len(same)} of "
                    f"{len(parts)} processes; {advice}")
    medians = np.array([float(np.median(p)) for p in parts])
    if np.all(medians > 0) and medians.size >= 3:
        logs = np.sort(np.log(medians))
        gaps = np.diff(logs)
        at = int(np.argmax(gaps))
        within = float(np.median([_robust_cv(p) for p in parts if p.size >= 2] or [0.0]))
        smaller = min(at + 1, logs.size - at - 1)
        if (gaps[at] > math.log1p(_LEVEL_GAP) and gaps[at] > _LEVEL_WITHIN_FACTOR * within
                and (smaller >= 2 or gaps[at] > math.log1p(_LEVEL_ODD_GAP))):
            low, high = math.exp(float(np.median(logs[: at + 1]))), math.exp(
                float(np.median(logs[at + 1:])))
            found.append(
                f"Processes at distinct levels: {at + 1} near {low:.4g} and "
                f"{logs.size - at - 1} near {high:.4g} ({high / low - 1:.0%} apart); the "
                "interval is wide for it: fewer threads than cores (--threads) or pinning "
                "(--cpu-list) may steady them, more processes narrow it"
            )
    return tuple(found)
