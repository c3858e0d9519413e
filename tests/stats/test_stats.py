"""Tests of summaries, the median's confidence interval, noise warnings and adaptive stopping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlab.stats.summary import (
    AdaptiveStop,
    StopReason,
    ci_rel_halfwidth,
    median_ci,
    noise_warnings,
    summarize,
)


def _lognormal(seed: int, n: int, sigma: float = 0.05, scale: float = 10.0) -> np.ndarray:
    return scale * np.random.default_rng(seed).lognormal(0.0, sigma, n)


def _has(warnings: tuple[str, ...], start: str) -> bool:
    return any(w.startswith(start) for w in warnings)


# --- summarize -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        [5.0, 1.0, 3.0, 2.0, 4.0],
        [1.0, 2.0],
        [7.25],
        list(np.random.default_rng(3).lognormal(0, 0.5, 37)),
        list(np.random.default_rng(4).normal(100, 5, 1000)),
    ],
)
def test_percentiles_match_numpy_linear_interpolation(values: list[float]) -> None:
    summary = summarize(values, "ms", extra_percentiles=["p95", "p99.9", "p0.5"])
    expected = np.percentile(values, [10, 50, 90, 99, 95, 99.9, 0.5])
    extra = summary.percentiles
    got = [summary.p10, summary.p50, summary.p90, summary.p99,
           extra["p95"], extra["p99.9"], extra["p0.5"]]  # fmt: skip
    assert got == pytest.approx(list(expected), rel=1e-12)
    assert summary.min == min(values) and summary.max == max(values)
    assert summary.count == len(values)
    assert summary.mean == pytest.approx(float(np.mean(values)))


def test_basic_moments_mad_and_cv() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 100.0]
    summary = summarize(values, "ms")
    assert summary.unit == "ms"
    assert summary.stdev == pytest.approx(float(np.std(values, ddof=1)))
    # median 3; absolute deviations 2, 1, 0, 1, 97; their median is 1 (unscaled)
    assert summary.mad == 1.0
    assert summary.cv == pytest.approx(summary.stdev / summary.mean)


def test_single_value_has_zero_spread() -> None:
    summary = summarize([4.0], "ms")
    assert (summary.stdev, summary.mad, summary.cv) == (0.0, 0.0, 0.0)
    assert (summary.ci_low, summary.ci_high) == (4.0, 4.0)


def test_extra_percentile_names_already_present_are_accepted_silently() -> None:
    summary = summarize([1.0, 2.0, 3.0], "ms", extra_percentiles=["p50", "mean", "MAD", "P95"])
    assert dict(summary.percentiles) == {"p95": pytest.approx(2.9)}


@pytest.mark.parametrize("name", ["p101", "q95", "median95", "p", ""])
def test_unknown_extra_percentile_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError):
        summarize([1.0, 2.0], "ms", extra_percentiles=[name])


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [1.0, float("inf")]])
def test_summarize_rejects_empty_or_non_finite_input(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        summarize(bad, "ms")


def test_summary_round_trips_through_schema_dict() -> None:
    summary = summarize(list(_lognormal(1, 30)), "ms", extra_percentiles=["p95"])
    assert type(summary).from_dict(summary.to_dict()) == summary


# --- median confidence interval --------------------------------------------------------------


def test_median_ci_uses_order_statistics() -> None:
    # n = 10 at 95%: P(B <= 1) = 11/1024, so the 2nd and 9th values bound the median.
    assert median_ci(list(range(1, 11)), 0.95) == (2.0, 9.0)
    # n = 6 is the smallest n with a 95% interval: the full range covers 1 - 2/64.
    assert median_ci([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]) == (1.0, 6.0)


def test_too_few_samples_give_the_range_and_a_warning() -> None:
    summary = summarize([3.0, 1.0, 2.0, 5.0, 4.0], "ms")
    assert (summary.ci_low, summary.ci_high) == (1.0, 5.0)
    assert _has(summary.warnings, "Too few samples (5)")
    assert not _has(summarize([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "ms").warnings, "Too few")
    assert math.isinf(ci_rel_halfwidth([1.0, 2.0, 3.0]))


def test_median_ci_covers_the_true_median() -> None:
    # lognormal(mu=0) has median exactly 1
    hits = 0
    for seed in range(400):
        low, high = median_ci(list(_lognormal(seed, 50, sigma=0.3, scale=1.0)), 0.95)
        hits += low <= 1.0 <= high
    assert hits / 400 >= 0.93


def test_median_ci_narrows_as_samples_grow() -> None:
    widths = [ci_rel_halfwidth(list(_lognormal(7, n, sigma=0.2))) for n in (20, 200, 2000)]
    assert widths[0] > widths[1] > widths[2] > 0


def test_large_samples_use_the_approximation_consistently() -> None:
    values = list(_lognormal(9, 30000, sigma=0.1, scale=1.0))
    low, high = median_ci(values)
    median = float(np.median(values))
    assert low < median < high
    assert 0 < ci_rel_halfwidth(values) < 0.01


def test_ci_rel_halfwidth_edge_cases() -> None:
    assert math.isinf(ci_rel_halfwidth([]))
    assert ci_rel_halfwidth([2.0] * 10) == 0.0
    assert ci_rel_halfwidth([0.0] * 10) == 0.0
    assert math.isinf(ci_rel_halfwidth([-1.0] * 4 + [0.0] * 3 + [1.0] * 4))
    with pytest.raises(ValueError):
        ci_rel_halfwidth([1.0], level=1.0)


# --- noise warnings --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", [20, 100, 1000])
def test_stationary_lognormal_noise_raises_no_warning(seed: int, n: int) -> None:
    assert noise_warnings(list(_lognormal(seed, n))) == ()


def test_high_cv_is_reported_with_its_value() -> None:
    values = list(_lognormal(2, 40, sigma=0.3))
    cv = float(np.std(values, ddof=1) / np.mean(values))
    (warning,) = [w for w in noise_warnings(values) if w.startswith("High variability")]
    assert f"{cv:.1%}" in warning


def test_rising_ramp_is_flagged_as_slowing_down() -> None:
    n = 100
    values = 10.0 * (1.0 + 0.2 * np.arange(n) / (n - 1)) * _lognormal(3, n, 0.03, 1.0)
    warnings = noise_warnings(list(values))
    (trend,) = [w for w in warnings if w.startswith("Trend")]
    assert "slowing down" in trend and "throttling" in trend
    assert not _has(warnings, "High variability")


def test_falling_ramp_is_flagged_as_speeding_up() -> None:
    n = 60
    values = 10.0 * (1.2 - 0.2 * np.arange(n) / (n - 1)) * _lognormal(4, n, 0.02, 1.0)
    (trend,) = [w for w in noise_warnings(list(values)) if w.startswith("Trend")]
    assert "speeding up" in trend


def test_small_drift_over_a_long_run_is_not_flagged() -> None:
    # a 2% drift is statistically certain over 5000 values, but too small to matter
    n = 5000
    values = 10.0 * (1.0 + 0.02 * np.arange(n) / (n - 1)) * _lognormal(5, n, 0.01, 1.0)
    assert not _has(noise_warnings(list(values)), "Trend")


def test_two_well_separated_modes_are_flagged() -> None:
    rng = np.random.default_rng(6)
    slow = rng.random(200) < 0.3
    values = 10.0 * rng.lognormal(0, 0.03, 200) * np.where(slow, 1.5, 1.0)
    warnings = noise_warnings(list(values))
    assert _has(warnings, "Multimodal: the values cluster around 2")


def test_rare_outliers_alone_are_not_a_warning() -> None:
    values = _lognormal(8, 200, 0.02)
    values[[17, 90, 150]] *= 3.0
    assert noise_warnings(list(values)) == ()


def test_quantised_timer_values_are_not_mistaken_for_modes() -> None:
    values = np.round(10.0 + np.random.default_rng(10).normal(0, 0.6, 200))
    assert not _has(noise_warnings(list(values)), "Multimodal")


def test_too_few_values_raise_no_noise_warning() -> None:
    assert noise_warnings([1.0, 5.0, 2.0, 9.0, 3.0, 7.0, 4.0]) == ()
    assert noise_warnings([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == ()


def test_summary_carries_noise_warnings() -> None:
    values = list(_lognormal(2, 40, sigma=0.3))
    assert _has(summarize(values, "ms").warnings, "High variability")


# --- adaptive stopping -----------------------------------------------------------------------


def _drive(stop: AdaptiveStop, values: np.ndarray, seconds_per_value: float):  # noqa: ANN202
    for n in range(1, len(values) + 1):
        decision = stop.should_stop(values[:n], n * seconds_per_value)
        if decision is not None:
            return decision
    return None


def test_low_noise_run_stops_when_the_target_is_reached() -> None:
    stop = AdaptiveStop(target_rel_halfwidth=0.01, min_iters=10, max_time=60.0)
    decision = _drive(stop, _lognormal(11, 5000, sigma=0.02), 0.01)
    assert decision is not None and decision.reason == StopReason.TARGET_CI_REACHED
    assert decision.rel_halfwidth <= 0.01
    assert decision.iterations < 200 and decision.elapsed < 60.0


def test_noisy_run_stops_on_the_time_budget() -> None:
    stop = AdaptiveStop(target_rel_halfwidth=0.001, min_iters=10, max_time=5.0)
    decision = _drive(stop, _lognormal(12, 5000, sigma=0.5), 0.01)
    assert decision is not None and decision.reason == "time_budget_exhausted"
    assert decision.iterations == 500
    assert decision.rel_halfwidth > 0.001
    assert decision.to_detail()["stop_reason"] == "time_budget_exhausted"


def test_without_a_target_it_runs_min_iters_and_min_time() -> None:
    values = _lognormal(13, 500)
    decision = _drive(AdaptiveStop(min_iters=30), values, 0.01)
    assert decision is not None and decision.reason == StopReason.FIXED_ITERATIONS
    assert decision.iterations == 30
    decision = _drive(AdaptiveStop(min_iters=30, min_time=2.0), values, 0.01)
    assert decision is not None and decision.iterations == 200


def test_max_iterations_and_time_budget_precedence() -> None:
    values = _lognormal(14, 500, sigma=0.5)
    decision = _drive(AdaptiveStop(target_rel_halfwidth=0.0001, max_iters=50), values, 0.01)
    assert decision is not None and decision.reason == StopReason.MAX_ITERATIONS
    assert decision.iterations == 50
    # the time budget wins even before min_iters is reached
    early = AdaptiveStop(min_iters=100, max_time=0.5).should_stop(values[:3], 0.6)
    assert early is not None and early.reason == StopReason.TIME_BUDGET_EXHAUSTED
    assert math.isinf(early.rel_halfwidth) and early.to_detail()["ci_rel_halfwidth"] is None


def test_constant_values_stop_at_the_first_check() -> None:
    stop = AdaptiveStop(target_rel_halfwidth=0.01, min_iters=12)
    decision = _drive(stop, np.full(100, 3.0), 0.001)
    assert decision is not None and decision.iterations == 12
    assert decision.rel_halfwidth == 0.0


def test_the_interval_is_rechecked_at_a_bounded_stride() -> None:
    # Noisy first 300 values, then a long run of identical ones: the target becomes reachable
    # at some n; the stop must follow within one stride (16 values here), not much later.
    values = np.concatenate([_lognormal(15, 300, sigma=0.5), np.full(3000, 10.0)])
    reachable = next(
        n for n in range(300, len(values)) if ci_rel_halfwidth(values[:n]) <= 0.01
    )
    decision = _drive(AdaptiveStop(target_rel_halfwidth=0.01, min_iters=10), values, 0.0)
    assert decision is not None and decision.reason == StopReason.TARGET_CI_REACHED
    assert reachable <= decision.iterations <= reachable + 16


@pytest.mark.parametrize(
    "kwargs",
    [
        {"target_rel_halfwidth": 0.0},
        {"min_iters": 0},
        {"min_iters": 10, "max_iters": 5},
        {"max_time": 0.0},
        {"min_time": -1.0},
        {"ci_level": 1.5},
    ],
)
def test_invalid_configurations_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        AdaptiveStop(**kwargs)  # type: ignore[arg-type]


def test_cv_warning_needs_the_bulk_to_be_noisy_not_just_outliers() -> None:
    values = _lognormal(8, 200, 0.02)
    values[[17, 90, 150]] *= 3.0
    assert summarize(list(values), "ms").cv > 0.10  # the stdev alone would cry wolf
    assert not _has(noise_warnings(list(values)), "High variability")
