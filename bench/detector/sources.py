"""Where simulated processes come from: replays of the recording, or a lognormal noise model.

A source hands out *pairs of processes that ran back to back*: an array of shape
``shape + (2, iterations)`` of timed iterations in µs, where slot 0 is the process that ran
first and slot 1 the one that ran second. Which slot is control and which is treatment is the
protocol's business (ABBA for benchlab, treatment first for FAI-PEP), and so is the injected
slowdown; sources know nothing about either, which is what lets both detectors see the same
noise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

RECORDING = Path(__file__).resolve().parent / "recorded_spin.json"


class Source(Protocol):
    """Anything that hands out back-to-back process pairs (see the module docstring)."""

    name: str
    description: str

    def pairs(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """``shape + (2, iterations)`` iteration times in µs; slot 0 ran first."""
        ...


@dataclass(frozen=True)
class Recording:
    """The recorded spin.py processes: iterations (processes × iterations, µs), running order."""

    iterations: np.ndarray
    meta: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path = RECORDING) -> Recording:
        """Read ``record.py``'s JSON; every process must have the same number of iterations."""
        if not path.exists():
            raise SystemExit(f"{path} is missing: run bench/detector/record.py once to make it")
        data = json.loads(path.read_text())
        rows = [p["iterations_us"] for p in data["processes"]]
        if len({len(r) for r in rows}) != 1 or len(rows) < 3:
            raise SystemExit(f"{path}: expected >= 3 processes with equal iteration counts")
        meta = {k: v for k, v in data.items() if k != "processes"}
        return cls(np.asarray(rows, dtype=float), meta)

    @property
    def medians(self) -> np.ndarray:
        """One observation per process, as the protocol takes it: the median of its iterations."""
        return np.median(self.iterations, axis=1)

    def describe(self) -> dict:
        """Noise figures of the recording, in log space (so 0.05 reads as about 5%)."""
        med = self.medians
        logs = np.log(med)
        within = np.log(self.iterations / med[:, None])
        adjacent = np.diff(logs)
        return {
            "processes": int(self.iterations.shape[0]),
            "iterations": int(self.iterations.shape[1]),
            "date": self.meta.get("date"),
            "machine": self.meta.get("machine"),
            "command": self.meta.get("command"),
            "median_us": {"min": float(med.min()), "median": float(np.median(med)),
                          "max": float(med.max())},
            "process_log_sd": float(np.std(logs, ddof=1)),
            # MAD-based, because a process that changes state mid-run has a few far iterations.
            "within_process_log_sd_robust": float(1.4826 * np.median(np.abs(within))),
            "adjacent_pair_log_ratio_sd": float(np.std(adjacent, ddof=1)),
            "lag1_autocorrelation": float(np.corrcoef(logs[:-1], logs[1:])[0, 1]),
        }


class ReplaySource:
    """Bootstrap of the recording that keeps each pair's two processes as they really ran.

    A simulated pair is two *adjacent* recorded processes (i, i + 1), drawn with replacement:
    the first-run/second-run structure, any order effect and the short-range drift between
    neighbours are all kept, and each process keeps its own iterations. Independent pairs are
    what the resampling cannot give back: slow drift across a whole session is lost.
    """

    def __init__(self, recording: Recording, name: str = "replay") -> None:
        self.name = name
        self.iterations = recording.iterations
        self.description = (
            f"bootstrap of adjacent process pairs from the {recording.iterations.shape[0]} "
            "recorded spin.py processes (bench/detector/recorded_spin.json)"
        )

    def pairs(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """``shape`` independent pairs: ``shape + (2, iterations)`` µs, slot 0 ran first."""
        first = rng.integers(0, self.iterations.shape[0] - 1, size=shape)
        return np.stack([self.iterations[first], self.iterations[first + 1]], axis=-2)


class LognormalSource:
    """Synthetic processes: a lognormal process level, lognormal iterations around it.

    Each process's level is ``base · exp(σ·Z)``, independent of every other process (no drift,
    no order effect: the textbook case); its iterations scatter around that level with
    log-SD ``sigma_within`` (taken from the recording, so only the process-to-process part
    differs from the replay).
    """

    def __init__(self, sigma: float, sigma_within: float, iterations: int = 30,
                 base_us: float = 1000.0) -> None:
        self.name = f"lognormal_{round(sigma * 100)}pct"
        self.sigma = sigma
        self.sigma_within = sigma_within
        self.n_iter = iterations
        self.base = base_us
        self.description = (
            f"synthetic: process level lognormal σ = {sigma:.0%} around {base_us:.0f} µs, "
            f"{iterations} iterations per process with log-SD {sigma_within:.2%}"
        )

    def pairs(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """``shape`` independent pairs: ``shape + (2, iterations)`` µs."""
        level = self.base * np.exp(self.sigma * rng.standard_normal(shape + (2, 1)))
        return level * np.exp(self.sigma_within * rng.standard_normal(shape + (2, self.n_iter)))
