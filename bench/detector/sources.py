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


# --- interleaved sessions -----------------------------------------------------------------

INPROCESS_RECORDING = Path(__file__).resolve().parent / "recorded_inprocess.json"
LOCKSTEP_RECORDING = Path(__file__).resolve().parent / "recorded_lockstep.json"
LOCKSTEP_C_RECORDING = Path(__file__).resolve().parent / "recorded_lockstep_c.json"


def robust_sd(values: np.ndarray) -> float:
    """1.4826 × the median absolute deviation from the median: the SD if the bulk is normal,
    unmoved by a few far values (a session or pair caught by a neighbour's burst)."""
    values = np.asarray(values, dtype=float)
    return float(1.4826 * np.median(np.abs(values - np.median(values))))


@dataclass(frozen=True)
class SessionRecording:
    """Recorded A/A interleaved sessions (``record_interleaved.py``), in running order.

    ``control`` and ``treatment`` are (sessions × blocks) call times in µs in block order;
    ``orders`` the side that went first in each block; ``first`` the side loaded (in-process)
    or started (lock-step) first. Both sides ran the same code, so the true change is 0.
    """

    mode: str
    control: np.ndarray
    treatment: np.ndarray
    orders: tuple[str, ...]
    first: tuple[str, ...]
    meta: dict = field(default_factory=dict)
    # The calls' CPU times (µs), same shape, where the sessions measured them (in-process).
    control_cpu: np.ndarray | None = None
    treatment_cpu: np.ndarray | None = None

    @classmethod
    def load(cls, path: Path) -> SessionRecording:
        """Read ``record_interleaved.py``'s JSON; every session must have the same blocks."""
        if not path.exists():
            raise SystemExit(f"{path} is missing: run bench/detector/record_interleaved.py")
        data = json.loads(path.read_text())
        rows = data["sessions"]
        if len({len(r["control_us"]) for r in rows}) != 1 or len(rows) < 3:
            raise SystemExit(f"{path}: expected >= 3 sessions with equal block counts")
        meta = {k: v for k, v in data.items() if k != "sessions"}
        cpu = all("control_cpu_us" in r and "treatment_cpu_us" in r for r in rows)
        return cls(data["mode"], np.asarray([r["control_us"] for r in rows], dtype=float),
                   np.asarray([r["treatment_us"] for r in rows], dtype=float),
                   tuple(r["order"] for r in rows), tuple(r["first"] for r in rows), meta,
                   np.asarray([r["control_cpu_us"] for r in rows], dtype=float) if cpu else None,
                   np.asarray([r["treatment_cpu_us"] for r in rows], dtype=float) if cpu
                   else None)

    def estimates(self, slowdown: float = 0.0, clock: str = "wall") -> np.ndarray:
        """Each session's paired estimate, by the library's own definition (the median block
        log-ratio, :meth:`benchlab.ab.sessions.Session.estimate_on` on ``clock``), with the
        treatment's calls all ``1 + slowdown`` times longer."""
        from benchlab.schema.comparison import Mode
        from benchlab.ab.sessions import session_from_blocks

        if clock == "cpu" and self.control_cpu is None:
            raise ValueError(f"this {self.mode} recording has no CPU times")
        mode = Mode(self.mode)
        out = []
        for i, (c, t, order, first) in enumerate(zip(self.control, self.treatment, self.orders,
                                                     self.first, strict=True)):
            cpu = ((self.control_cpu[i].tolist(),
                    (self.treatment_cpu[i] * (1.0 + slowdown)).tolist())
                   if self.control_cpu is not None else ((), ()))
            session = session_from_blocks(mode, c.tolist(), (t * (1.0 + slowdown)).tolist(),
                                          order, first, cpu=cpu)
            out.append(session.estimate_on(clock))
        return np.array(out)

    def describe(self, clock: str = "wall") -> dict:
        """Noise figures of the recording on ``clock``, in log space (0.01 reads as 1%)."""
        est = self.estimates(clock=clock)
        control, treatment = ((self.control_cpu, self.treatment_cpu) if clock == "cpu"
                              else (self.control, self.treatment))
        blocks = np.log(treatment / control)  # per block, per session
        within = np.std(blocks, axis=1, ddof=1)
        within_robust = np.array([robust_sd(row) for row in blocks])
        lead_c = np.array([[o == "c" for o in order] for order in self.orders])
        first_c = np.array([f == "c" for f in self.first])
        medians = np.log(np.median(treatment, axis=1) / np.median(control, axis=1))
        return {
            "mode": self.mode,
            "clock": clock,
            "sessions": int(est.size),
            "blocks": int(self.control.shape[1]),
            "date": self.meta.get("date"),
            "machine": self.meta.get("machine"),
            "command": self.meta.get("command"),
            "wall_s": self.meta.get("wall_s"),
            "call_us": {"min": float(np.min(control)), "median": float(np.median(control)),
                        "max": float(np.max(control))},
            # The A/A spread of what the decision sees: one estimate per session.
            "session_estimate_sd": float(np.std(est, ddof=1)),
            "session_estimate_sd_robust": robust_sd(est),
            "session_estimate_mean": float(np.mean(est)),
            # The spread of single blocks inside one session (median over sessions).
            "within_session_block_sd": float(np.median(within)),
            "within_session_block_sd_robust": float(np.median(within_robust)),
            # Order effects: block log-ratio when the control's call came first minus when the
            # treatment's did (a second call that runs faster or slower shows here), and the
            # session estimate when the control was loaded/started first minus otherwise.
            "block_lead_effect": float(np.mean(blocks[lead_c]) - np.mean(blocks[~lead_c])),
            "first_side_effect": float(np.mean(est[first_c]) - np.mean(est[~first_c])),
            # What the sessions would give as process pairs do it: log(median t / median c).
            "medians_log_ratio_sd": float(np.std(medians, ddof=1)),
        }


class SessionReplay:
    """Bootstrap of recorded sessions: session k of a simulated comparison is a recorded
    session drawn with replacement among those loaded/started first by the side the real
    protocol would put first at k (control at even k), so the alternation is kept."""

    def __init__(self, recording: SessionRecording, slowdowns: tuple[float, ...],
                 clock: str = "wall") -> None:
        program = recording.meta.get("program", "spin.py")
        self.name = (recording.mode + ("" if program == "spin.py" else f" ({program})")
                     + ("" if clock == "wall" else f" ({clock} clock)"))
        self.recording = recording
        self.description = (
            f"bootstrap of the {recording.control.shape[0]} recorded {recording.mode} A/A "
            f"sessions of {recording.control.shape[1]} blocks, {clock} clock"
        )
        self._estimates = {s: recording.estimates(s, clock) for s in slowdowns}
        first = np.array(recording.first)
        self._by_first = (np.flatnonzero(first == "c"), np.flatnonzero(first == "t"))

    def draw(self, rng: np.random.Generator, slowdown: float, first_index: int,
             count: int) -> np.ndarray:
        """``count`` session estimates for sessions ``first_index ..``, slowdown injected."""
        parity = (np.arange(first_index, first_index + count) % 2).astype(bool)
        c_first, t_first = self._by_first
        picks = np.where(parity, t_first[rng.integers(0, t_first.size, count)],
                         c_first[rng.integers(0, c_first.size, count)])
        return self._estimates[slowdown][picks]
