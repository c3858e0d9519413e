"""Choosing an A/B mode for a job, and running interleaved sessions through the looks.

:func:`choose_mode` picks the strongest mode the two sides allow (in-process for Python
runtimes, lock-step for programs on the host, process pairs otherwise) or the one asked for.
:class:`SessionEvidence` is an interleaved mode's evidence for the driver
(:mod:`benchlab.ab.driver`): sessions, decided on their paired estimates (the median of each
session's block log-ratios), exactly as process pairs decide on their per-pair log-ratios.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from benchlab.schema.comparison import Fidelity, MetricComparison, Mode, PairedEstimate
from benchlab.ab.sessions import Session, balanced_orders
from benchlab.ab.sides import AUTO, CompareSettings, Side
from benchlab.ab.stats import decide_log_ratios, hodges_lehmann
from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import ModeUnavailable, UsageError
from benchlab.harness.jobrun import Job, summarize_samples
from benchlab.schema.result import LATENCY_KEY, DetailKey, Metric, Result, Sample, Status
from benchlab.targets.base import Target

__all__ = ["FIDELITY_CHECK", "SessionData", "SessionEvidence", "choose_mode", "parse_mode",
           "session_runner", "solo_calls"]
#: After this many sessions (or the first look, if sooner) the sides' fidelity is judged; an
#: interleaved mode that does not run the sides as they run alone is left for process pairs.
FIDELITY_CHECK = 6


def solo_calls(blocks: int) -> int:
    """How many calls of each side a session also times alone: half its blocks, at least 3."""
    return max(3, blocks // 2)


def parse_mode(text: str) -> Mode | None:
    """``auto`` → ``None``; otherwise the :class:`Mode` named (a clear error when unknown)."""
    if text == AUTO:
        return None
    try:
        return Mode(text)
    except ValueError:
        names = ", ".join([AUTO, *(m.value for m in Mode)])
        raise UsageError(f"unknown A/B mode {text!r}: choose one of {names}") from None


def choose_mode(control: Job, treatment: Job, pythons: tuple[str | None, str | None],
                target: Target, wanted: Mode | None) -> tuple[Mode, str | None]:
    """The mode to measure this job in, and why a stronger one was not possible (or ``None``).

    Programs (tests with their own commands) get lock-step on the host; runner frameworks
    get in-process when the sides can share a process. A mode asked for explicitly that the
    sides do not allow falls back the same way, with the reason.
    """
    from benchlab.ab.inprocess import inprocess_problem

    if wanted is Mode.PROCESS_PAIRS:
        return Mode.PROCESS_PAIRS, None
    if control.test.commands:
        if wanted is Mode.IN_PROCESS:
            return Mode.PROCESS_PAIRS, "in-process needs a Python runtime; this test runs commands"
        if target.name != "host":
            return Mode.PROCESS_PAIRS, f"lock-step runs on the host target only, not {target.name}"
        return Mode.LOCKSTEP, None
    problem = inprocess_problem(control, treatment, pythons, target.python_executable() or "")
    if problem is None and wanted in (None, Mode.IN_PROCESS):
        return Mode.IN_PROCESS, None
    if wanted is Mode.LOCKSTEP:
        problem = "lock-step is for programs that run their own commands"
    return Mode.PROCESS_PAIRS, f"{(wanted or Mode.IN_PROCESS).value} not possible: {problem}"


SessionRunner = Callable[[int], Session]


def session_runner(mode: Mode, pair: tuple[Job, Job], labels: tuple[str, str],
                   string_maps: tuple[dict, dict], target: Target,
                   cache: ArtifactCache, seed: int = 0) -> SessionRunner:
    """A function that runs session ``index`` of ``pair`` in ``mode``: blocks and warm-up
    from the test (``iter``, ``warmup``), a balanced random order per session, and the side
    that loads or starts first alternating from one session to the next."""
    control, treatment = pair
    blocks, warmup = control.test.iter, control.test.warmup

    def run(index: int) -> Session:
        order = balanced_orders(blocks, seed * 100_003 + index)
        first = "c" if index % 2 == 0 else "t"
        if mode is Mode.IN_PROCESS:
            from benchlab.ab.inprocess import inprocess_session

            return inprocess_session(control, treatment, target, cache, order=order,
                                     loaded_first=first, warmup=warmup,
                                     solo=solo_calls(blocks))
        from benchlab.ab.lockstep import lockstep_session

        return lockstep_session(pair, labels, string_maps, target, cache, order=order,
                                started_first=first, warmup=warmup,
                                timeout=control.test.timeout, index=index,
                                solo=solo_calls(blocks))

    return run


@dataclass
class SessionData:
    """The sessions of one job so far, in the order they ran."""

    mode: Mode
    sessions: list[Session] = field(default_factory=list)

    @property
    def estimates(self) -> list[float]:
        """Each session's paired estimate (log-ratio), on the wall clock: CPU time was no
        less noisy here (bench/detector/cpu_clock.py, docs/detector.md)."""
        return [s.estimate for s in self.sessions]

    def medians(self) -> tuple[list[float], list[float]]:
        """Each side's per-session median call time (ms)."""
        pairs = [s.medians for s in self.sessions]
        return [c for c, _ in pairs], [t for _, t in pairs]

    def fidelity(self, letter: str, tolerance: float | None) -> Fidelity | None:
        """How side ``c``/``t`` ran interleaved against itself alone, over the sessions that
        timed it alone; None when none did."""
        rounds = [(s.solo_median(letter), s.medians[0 if letter == "c" else 1])
                  for s in self.sessions]
        rounds = [(alone, together) for alone, together in rounds if alone]
        if not rounds:
            return None
        logs = [math.log(together / alone) for alone, together in rounds]
        centre, low, high = hodges_lehmann(logs)
        bounds = (math.exp(low), math.exp(high)) if len(logs) > 1 else (None, None)
        return Fidelity("control" if letter == "c" else "treatment", math.exp(centre),
                        *bounds, len(rounds), tolerance)

    def fidelities(self, tolerance: float | None) -> tuple[Fidelity, ...]:
        """Both sides' fidelity, where measured."""
        found = (self.fidelity(letter, tolerance) for letter in "ct")
        return tuple(f for f in found if f is not None)

    def regime(self) -> dict:
        """The threading regime the sessions reported (the last session's)."""
        return dict(self.sessions[-1].regime) if self.sessions else {}

    def samples(self, letter: str) -> list[Sample]:
        """Every call of one side (``c`` or ``t``) as latency samples, repetition = session."""
        return [Sample(Metric.LATENCY, value, "ms", "NET", index, k)
                for index, session in enumerate(self.sessions)
                for k, value in enumerate(session.control if letter == "c"
                                          else session.treatment)]


class SessionEvidence:
    """One job's evidence in an interleaved mode (in-process or lock-step), grown a session
    at a time and decided on the sessions' paired latency estimates, exactly as process
    pairs decide on their per-pair log-ratios.

    With the settings' fidelity tolerance, the sides' fidelity is judged once, after
    :data:`FIDELITY_CHECK` sessions (or the first look): a side that ran outside it raises
    :class:`ModeUnavailable` saying so, and the driver measures the job another way.
    """

    def __init__(self, mode: Mode, pair: tuple[Job, Job], sides: tuple[Side, Side],
                 target: Target, cache: ArtifactCache, settings: CompareSettings,
                 progress: Callable[[str], None] | None, *, seed: int = 0,
                 judge_fidelity: bool = True) -> None:
        self.mode, self.pair, self.sides, self.target, self.cache = mode, pair, sides, target, cache
        self.settings, self.progress, self.seed = settings, progress, seed
        self.data = SessionData(mode)
        self._runner = session_runner(mode, pair, (sides[0].label, sides[1].label),
                                      (dict(sides[0].string_map), dict(sides[1].string_map)),
                                      target, cache, seed=seed)
        self._tolerance = settings.fidelity_tolerance if judge_fidelity else None
        self._check_at = min(FIDELITY_CHECK, settings.looks[0])

    def grow(self, look: int) -> None:
        data, label = self.data, self.pair[0].identity.model_name
        while len(data.sessions) < look:
            data.sessions.append(self._runner(len(data.sessions)))
            if self.progress:
                self.progress(f"{label}: {self.mode.value} session {len(data.sessions)}/{look}")
            if self._tolerance is not None and len(data.sessions) == self._check_at:
                _check_fidelity(data, self.mode, self._tolerance)

    def decide(self) -> dict[str, PairedEstimate]:
        return {LATENCY_KEY: decide_log_ratios(
            self.data.estimates, min_effect=self.settings.min_effect,
            alpha=self.settings.alpha, n_looks=len(self.settings.looks))}

    def results(self) -> list[Result]:
        """Every call of each side as one stored result."""
        out = []
        for letter, job in (("c", self.pair[0]), ("t", self.pair[1])):
            samples = self.data.samples(letter)
            out.append(Result(identity=job.identity, status=Status.OK, samples=tuple(samples),
                              summaries=summarize_samples(samples),
                              details={DetailKey.AB_MODE: self.mode.value,
                                       DetailKey.AB_SESSIONS: len(self.data.sessions)}))
        return out

    def comparisons(self, base: Job,
                    estimates: dict[str, PairedEstimate]) -> list[MetricComparison]:
        """The latency comparison, with the sessions' estimates, fidelity and regime."""
        control_ms, treatment_ms = self.data.medians()
        tolerance = self.settings.fidelity_tolerance
        return [MetricComparison(
            job=base.identity.label, model=base.identity.model_name,
            test=base.identity.test_identifier, metric=LATENCY_KEY, unit="ms",
            control=tuple(control_ms), treatment=tuple(treatment_ms),
            estimate=estimates[LATENCY_KEY], mode=self.mode, paired=tuple(self.data.estimates),
            fidelity=self.data.fidelities(tolerance), regime=self.data.regime(),
        )]

    def fresh(self) -> SessionEvidence:
        """Fresh sessions with other block orders, for verifying a regression (fidelity was
        judged on the first sessions already)."""
        return SessionEvidence(self.mode, self.pair, self.sides, self.target, self.cache,
                               self.settings, self.progress, seed=self.seed + 1,
                               judge_fidelity=False)


def _check_fidelity(data: SessionData, mode: Mode, tolerance: float) -> None:
    """Raise :class:`ModeUnavailable` when a side ran outside ``tolerance`` of itself alone."""
    off = [f for f in data.fidelities(tolerance) if not f.faithful]
    if off:
        raise ModeUnavailable(f"{mode.value} did not run the sides as they run alone: "
                              + "; ".join(f.describe() for f in off)
                              + f" (tolerance ±{tolerance:.0%})")
