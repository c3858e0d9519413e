"""Noise warnings with the process as the unit: rare, and each names what to do."""

from __future__ import annotations

import numpy as np

from benchlab.stats.noise import noise_warnings
from benchlab.stats.summary import summarize


def _process(level: float, seed: int, n: int = 40, sigma: float = 0.01,
             drift: float = 0.0) -> list[float]:
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0.0, drift, n)
    return list(level * np.exp(rng.normal(0.0, sigma, n) + ramp))


def _warnings(parts: list[list[float]]) -> tuple[str, ...]:
    return noise_warnings([v for p in parts for v in p], segments=parts)


def test_steady_processes_a_few_percent_apart_raise_nothing() -> None:
    # Levels 1.0 and 1.06 alternating: the pooled values look bimodal to a density estimate,
    # but 6% between processes is what the interval is for, not a warning.
    parts = [_process(1.0 if i % 2 else 1.06, seed=i, sigma=0.004) for i in range(6)]
    pooled = [v for p in parts for v in p]
    assert any("Multimodal" in w for w in noise_warnings(pooled))
    assert _warnings(parts) == ()


def test_processes_at_two_levels_are_named_with_what_to_do() -> None:
    parts = [_process(level, seed=i) for i, level in enumerate((1.0, 1.3, 1.0, 1.0, 1.3))]
    (warning,) = _warnings(parts)
    assert warning.startswith("Processes at distinct levels: 3 near 0.99")
    assert "and 2 near 1.3 (30% apart)" in warning
    assert "--threads" in warning and "--cpu-list" in warning


def test_a_gap_inside_the_iterations_own_noise_is_not_a_level() -> None:
    parts = [_process(level, seed=i, sigma=0.06) for i, level in enumerate((1.0, 1.12, 1.0))]
    assert not any("levels" in w for w in _warnings(parts))


def test_warming_up_in_most_processes_says_raise_warmup() -> None:
    parts = [_process(1.0, seed=i, drift=-0.08 if i < 4 else 0.0) for i in range(5)]
    (warning,) = _warnings(parts)
    assert "values fall" in warning and "within 4 of 5 processes" in warning
    assert "raise --warmup" in warning


def test_a_trend_in_one_process_of_five_is_not_a_warning() -> None:
    parts = [_process(1.0, seed=i, drift=0.3 if i == 2 else 0.0) for i in range(5)]
    assert _warnings(parts) == ()


def test_noisy_iterations_inside_the_processes_say_so() -> None:
    parts = [_process(1.0, seed=i, sigma=0.25) for i in range(4)]
    warnings = _warnings(parts)
    assert any(w.startswith("High variability within processes") for w in warnings)


def test_the_summary_carries_the_process_level_warnings() -> None:
    parts = [_process(level, seed=i) for i, level in enumerate((1.0, 1.5, 1.0))]
    summary = summarize([v for p in parts for v in p], "ms", segments=parts)
    assert any(w.startswith("Processes at distinct levels") for w in summary.warnings)
