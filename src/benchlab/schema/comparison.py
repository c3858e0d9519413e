"""The shape of an A/B comparison's outcome: what reporters read and what ``compare`` returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Comparison", "Fidelity", "MetricComparison", "Mode", "OpDelta", "Outcome",
           "PairedEstimate"]


class Mode(StrEnum):
    """How the two sides of a job were measured against each other (docs/ab.md).

    ``IN_PROCESS``: one fresh process loads both sides and alternates single calls in
    randomised AB/BA blocks (Python runtimes). ``LOCKSTEP``: two live processes, one per side,
    each running one iteration per step, steps alternated the same way (programs that speak the
    step protocol). ``PROCESS_PAIRS``: fresh processes in counterbalanced ABBA pairs, one
    observation (the median) per process (anything else). In the first two, each fresh
    process or process pair gives one paired estimate, the median of its blocks' log-ratios.
    ``COUNTED``: fresh processes in ABBA pairs under valgrind, each call's executed
    instructions counted (``compare --measure instructions``); decided on each pair's
    log-ratio of mean counts.
    """

    IN_PROCESS = "in-process"
    LOCKSTEP = "lockstep"
    PROCESS_PAIRS = "process-pairs"
    COUNTED = "counted"

    @property
    def description(self) -> str:
        """What the mode measured, in one phrase for reports."""
        return {
            Mode.IN_PROCESS: "both sides in one fresh process per session, single calls "
                             "alternated in random AB/BA blocks; verdict on each session's "
                             "median block log-ratio",
            Mode.LOCKSTEP: "one live process per side, stepped one iteration at a time in "
                           "random AB/BA blocks; verdict on each session's median block "
                           "log-ratio",
            Mode.PROCESS_PAIRS: "counterbalanced ABBA pairs of fresh processes; verdict on "
                                "each pair's log-ratio of process medians",
            Mode.COUNTED: "counterbalanced ABBA pairs of fresh processes under valgrind, "
                          "each measured call's instructions counted; verdict on each "
                          "pair's log-ratio of mean counts",
        }[self]

    @property
    def interleaved(self) -> bool:
        """Whether the sides alternate call by call (paired estimates per session)."""
        return self not in (Mode.PROCESS_PAIRS, Mode.COUNTED)


class Outcome(StrEnum):
    """The verdict on one metric: the three decisions, plus undecided when the budget ran out."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no_change"
    UNDECIDED = "undecided"


@dataclass(frozen=True, slots=True)
class PairedEstimate:
    """The paired analysis of one metric over ``n_pairs`` (control, treatment) observations.

    ``change`` is the relative change of treatment over control, ``exp(HL) - 1`` where HL is the
    Hodges-Lehmann estimate of the per-pair log-ratios; ``ci_low``/``ci_high`` bound it at
    ``ci_level``. ``p_value`` is the two-sided Wilcoxon signed-rank p; ``q_value`` the
    Benjamini-Hochberg adjusted p across all metrics of the comparison (None until adjusted).
    """

    n_pairs: int
    change: float
    ci_low: float
    ci_high: float
    ci_level: float
    p_value: float
    q_value: float | None = None
    outcome: Outcome = Outcome.UNDECIDED


@dataclass(frozen=True, slots=True)
class OpDelta:
    """How one operator's time moved between control and treatment (medians per process)."""

    op: str
    control: float
    treatment: float
    unit: str

    @property
    def delta(self) -> float:
        """Treatment minus control, in ``unit``."""
        return self.treatment - self.control

    @property
    def change(self) -> float:
        """Relative change (treatment / control - 1); inf when control is 0."""
        return self.treatment / self.control - 1.0 if self.control else float("inf")


@dataclass(frozen=True, slots=True)
class Fidelity:
    """How one side ran in its A/B sessions against the same side alone.

    ``ratio`` is the side's interleaved call time over its solo call time (1.0: the A/B
    regime is the regime the side ships in): the Hodges-Lehmann centre over ``sessions`` of
    each session's log ratio of medians, with its signed-rank interval at ``level``
    (``low``/``high``; None with one session). ``tolerance`` is how far from 1 the ratio may
    be (0.05: ±5%; None: not judged).
    """

    side: str
    ratio: float
    low: float | None
    high: float | None
    sessions: int
    tolerance: float | None
    level: float = 0.95

    @property
    def faithful(self) -> bool:
        """False when the ratio is outside the tolerance and its interval excludes 1."""
        if self.tolerance is None or abs(self.ratio - 1.0) <= self.tolerance:
            return True
        if self.low is None or self.high is None:
            return False
        return self.low <= 1.0 <= self.high

    def describe(self) -> str:
        """``control 1.01× [0.99–1.03] its solo latency`` for reports."""
        interval = (f" [{self.low:.2f}–{self.high:.2f}]"
                    if self.low is not None and self.high is not None else "")
        return f"{self.side} {self.ratio:.2f}×{interval} its solo latency"


@dataclass(frozen=True, slots=True)
class MetricComparison:
    """One metric of one job, compared: the raw per-process values of both sides and the verdict.

    ``control``/``treatment`` hold one value per fresh process (the median of that process's
    iterations), paired by index in the order they ran. ``verified`` is None when no verify
    re-run was needed, else whether the re-run confirmed the regression. ``mode`` says how the
    sides were measured; in an interleaved mode ``paired`` holds each session's estimate (the
    median of its within-block log-ratios), which the verdict was decided on, ``fidelity``
    how each side ran there against itself alone, and ``regime`` each side's threading
    settings as its runtime reported them.
    """

    job: str
    model: str
    test: str
    metric: str
    unit: str
    control: tuple[float, ...]
    treatment: tuple[float, ...]
    estimate: PairedEstimate
    verified: bool | None = None
    op_deltas: tuple[OpDelta, ...] = ()
    mode: Mode = Mode.PROCESS_PAIRS
    paired: tuple[float, ...] = ()
    fidelity: tuple[Fidelity, ...] = ()
    regime: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Comparison:
    """A whole comparison: every metric's verdict, the settings, and the stopping story.

    ``failed`` lists jobs that could not be compared because one of their runs failed;
    ``skipped`` the jobs that were never measured (no framework could run them, no model file
    of a side's format), each with its reason.
    """

    control: str
    treatment: str
    metrics: tuple[MetricComparison, ...]
    min_effect: float
    alpha: float
    looks: tuple[int, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    failed: tuple[str, ...] = field(default_factory=tuple)
    skipped: tuple[str, ...] = field(default_factory=tuple)

    @property
    def modes(self) -> list[Mode]:
        """The modes the jobs were measured in, strongest first (reports name them)."""
        used = {m.mode for m in self.metrics}
        return [mode for mode in Mode if mode in used]

    @property
    def regressions(self) -> list[MetricComparison]:
        """Metrics whose final outcome is a regression (confirmed when verification ran)."""
        return [
            m for m in self.metrics
            if m.estimate.outcome is Outcome.REGRESSION and m.verified is not False
        ]

    @property
    def compared_nothing(self) -> bool:
        """True when no metric of any job was compared: every job skipped or failed."""
        return not self.metrics

    @property
    def exit_code(self) -> int:
        """1 when a regression was found, a job could not be compared, or nothing was
        compared at all (a gate that measured nothing must not pass)."""
        return 1 if self.regressions or self.failed or self.compared_nothing else 0
