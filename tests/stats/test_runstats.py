"""Process-level statistics: the next-run interval, paired ratios and the between-runs test.

The coverage checks simulate the two levels a benchmark has (a level per fresh process, noise
per iteration) with a fixed seed, so they are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlab.stats.runstats import next_run_interval, paired_ratio, run_change, t_quantile
from benchlab.stats.summary import summarize


@pytest.mark.parametrize(("df", "expected"), [(1, 12.7062), (2, 4.3027), (4, 2.7764),
                                                (10, 2.2281), (1000, 1.9623)])
def test_t_quantile_matches_the_tables(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=2e-4)


def test_t_quantile_agrees_with_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for prob in (0.9, 0.975, 0.995):
        for df in (1.0, 2.5, 7.0, 40.0):
            assert t_quantile(prob, df) == pytest.approx(stats.t.ppf(prob, df), rel=1e-6)


def _run(rng: np.random.Generator, processes: int, between: float, within: float,
         scale: float = 1.0) -> list[np.ndarray]:
    return [scale * np.exp(rng.normal(0, between) + rng.normal(0, within, 30))
            for _ in range(processes)]


def test_one_process_predicts_nothing() -> None:
    assert next_run_interval([[1.0, 1.1, 0.9]], 1.0) is None
    summary = summarize([1.0, 1.1, 0.9] * 4, "ms", segments=[[1.0, 1.1, 0.9] * 4])
    assert summary.processes == 1 and not summary.predicts_next_run


def test_processes_that_disagree_widen_the_interval() -> None:
    agree = next_run_interval([[10.0, 10.1], [10.05, 10.0], [10.0, 10.02]], 10.0)
    disagree = next_run_interval([[10.0, 10.1], [12.0, 12.1], [9.0, 9.1]], 10.0)
    assert agree is not None and disagree is not None
    assert disagree.high - disagree.low > 20 * (agree.high - agree.low)
    assert disagree.low < 10.0 < disagree.high and disagree.processes == 3


def test_summarize_never_narrows_the_pooled_interval() -> None:
    rng = np.random.default_rng(3)
    parts = [list(10 + rng.normal(0, 1, 40)) for _ in range(3)]
    pooled = summarize([v for p in parts for v in p], "ms")
    leveled = summarize([v for p in parts for v in p], "ms", segments=parts)
    assert leveled.ci_low <= pooled.ci_low and leveled.ci_high >= pooled.ci_high
    assert leveled.processes == 3 and len(leveled.process_p50s) == 3


@pytest.mark.parametrize(("processes", "between", "within"),
                         [(3, 0.05, 0.03), (3, 0.0, 0.03), (5, 0.08, 0.01), (2, 0.05, 0.02)])
def test_the_interval_holds_the_next_runs_median_about_95_percent(
    processes: int, between: float, within: float
) -> None:
    rng = np.random.default_rng(processes * 100 + int(between * 1000))
    trials, covered = 1500, 0
    for _ in range(trials):
        this, following = _run(rng, processes, between, within), _run(rng, processes, between,
                                                                        within)
        center = float(np.median(np.concatenate(this)))
        summary = summarize(list(np.concatenate(this)), "ms", segments=this)
        nxt = float(np.median(np.concatenate(following)))
        covered += summary.ci_low <= nxt <= summary.ci_high
        assert summary.p50 == pytest.approx(center)
    assert 0.92 <= covered / trials <= 0.995


def test_a_paired_ratio_cancels_what_both_sides_share() -> None:
    rng = np.random.default_rng(7)
    drift = np.exp(rng.normal(0, 0.2, 6))  # the machine's speed, round by round
    fast = 4.0 * drift * np.exp(rng.normal(0, 0.005, 6))
    slow = 5.0 * drift * np.exp(rng.normal(0, 0.005, 6))
    ratio = paired_ratio(fast, slow)
    assert ratio.rounds == 6 and ratio.value == pytest.approx(1.25, rel=0.01)
    assert ratio.separable and ratio.high - ratio.low < 0.03
    unpaired = paired_ratio(fast, slow[::-1])  # the same values, rounds scrambled
    assert unpaired.high - unpaired.low > 5 * (ratio.high - ratio.low)
    twin = paired_ratio(fast, fast * np.array([1.003, 0.996, 1.002, 0.998, 1.001, 0.999]))
    assert not twin.separable
    single = paired_ratio([2.0], [3.0])
    assert single.value == pytest.approx(1.5) and single.low is None and not single.separable


def test_run_change_rarely_flags_identical_runs_and_finds_a_15_percent_slowdown() -> None:
    rng = np.random.default_rng(11)
    trials = 2000
    false_flags = found = 0
    for _ in range(trials):
        before = [float(np.median(p)) for p in _run(rng, 3, 0.02, 0.03)]
        same = [float(np.median(p)) for p in _run(rng, 3, 0.02, 0.03)]
        slower = [float(np.median(p)) for p in _run(rng, 3, 0.02, 0.03, scale=1.15)]
        change = run_change(before, same)
        false_flags += bool(change and change.significant)
        change = run_change(before, slower)
        found += bool(change and change.significant and change.ratio > 1)
    assert false_flags / trials <= 0.02
    assert found / trials >= 0.75
    assert run_change([1.0], [1.0, 1.1]) is None
    assert run_change([1.0, 1.0], [1.0, 1.0]) is not None


def test_a_change_below_the_minimum_effect_is_not_flagged() -> None:
    change = run_change([1.000, 1.001, 1.0005], [1.020, 1.021, 1.0205])
    assert change is not None and change.low > 1.0 and not change.significant
    bigger = run_change([1.000, 1.001, 1.0005], [1.05, 1.051, 1.0505])
    assert bigger is not None and bigger.significant
    assert math.isclose(bigger.ratio, 1.05, rel_tol=1e-3)
