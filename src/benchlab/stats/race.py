"""Racing a matrix's cells: fresh processes go where the answer is still open.

Every cell of a contest (one model and test on one device, measured by several backends) gets
a few processes in rounds; then more rounds go only to the cells whose answer is open: their
own interval still wider than the goal, or their "× fastest" ratio neither decided (its
interval excludes 1) nor a tie (its interval inside ±``tie``). A settled cell whose
processes are so spread that even the most processes a cell gets could not bring its
interval to the goal stops too, saying the narrowest interval the budget could buy (the
machine's floor: on a noisy 2-vCPU VM ±5% is out of reach, docs/statistics.md). A cell that loses clearly, its
paired ratio to the fastest above ``clear_loss`` even at the low end of its interval, stops
at the minimum. The contest stops spending when its processes reach ``1 + extra`` times
those of its minimum, and no cell gets more than ``max_processes``. This is racing as in
F-Race (Birattari et al. 2002) and irace, and successive halving, with the stopping tests being
the intervals benchlab prints anyway (:mod:`benchlab.stats.runstats`).

The decisions here are pure functions of the per-process medians, so they can be tested without
measuring anything; :func:`benchlab.harness.planner.execute` runs the processes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from benchlab.stats.runstats import TIE, next_run_interval, paired_ratio, t_quantile
from benchlab.schema.result import StopReason

__all__ = ["RacePolicy", "Standing", "decide_round", "reachable_half_width"]

#: The verdicts of a "× fastest" ratio that answer the contest (runstats.PairedRatio.verdict).
_SETTLED = frozenset({"decided", "tie"})


@dataclass(frozen=True, slots=True)
class RacePolicy:
    """How a race spends processes.

    ``goal``: the relative half-width of the next-run interval a cell must reach.
    ``tie``: a "× fastest" ratio whose interval lies inside ``1 ± tie`` is settled as a tie.
    ``min_processes``: every cell gets at least this many (five: with three, the lab's
    between-run test missed a known 12% slowdown, docs/performance.md §11).
    ``max_processes``: no cell gets more.
    ``clear_loss``: a cell whose paired ratio to the fastest is above this at the low end of
    its interval stops after ``elimination_after`` rounds. ``extra``: a contest's processes
    beyond its minimum, as a share of the minimum (0.5: at most one and a half times the
    minimum in all).
    """

    goal: float = 0.05
    tie: float = TIE
    min_processes: int = 5
    max_processes: int = 12
    clear_loss: float = 1.5
    elimination_after: int = 5
    extra: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.goal < 1 or not 0 < self.tie < 1:
            raise ValueError("goal and tie are fractions between 0 and 1, e.g. 0.05 for ±5%")
        if not 2 <= self.elimination_after <= self.min_processes <= self.max_processes:
            raise ValueError("a race needs 2 <= elimination_after <= min_processes "
                             "<= max_processes")
        if self.clear_loss <= 1 or self.extra < 0:
            raise ValueError("clear_loss must be above 1 and extra not negative")

    def takes(self, repeat: int) -> bool:
        """Whether a test asking for ``repeat`` fixed processes is raced: one that asks for
        fewer than the race's minimum (a slow model, a single look) keeps its own count."""
        return repeat >= self.min_processes

    def allowance(self, cells: int) -> int:
        """How many processes a contest of ``cells`` cells may spend in all."""
        return cells * self.min_processes + math.floor(cells * self.min_processes * self.extra)


@dataclass(frozen=True, slots=True)
class Standing:
    """Why a cell stopped: ``reason`` is stored as the job's stop reason, ``why`` says it in a
    user's words (``details.race``)."""

    reason: StopReason
    why: str


def _half_width(medians: Sequence[float]) -> float:
    """The relative half-width of the next-run interval these process medians give."""
    centre = statistics.median(medians)
    interval = next_run_interval([[m] for m in medians], centre)
    if interval is None or centre <= 0:
        return math.inf
    return (interval.high - interval.low) / 2 / centre


def reachable_half_width(medians: Sequence[float], processes: int) -> float:
    """The relative half-width the next-run interval would have with ``processes`` processes
    as spread as these at least are (the spread's 80% lower bound): the narrowest a cell can
    buy on this machine (inf with fewer than two)."""
    logs = [math.log(m) for m in medians if m > 0]
    if len(logs) < 2 or processes < 2:
        return math.inf
    spread = statistics.stdev(logs) * _spread_lower_bound(len(logs) - 1)
    return math.expm1(t_quantile(0.975, processes - 1) * spread * math.sqrt(2.0 / processes))


def _spread_lower_bound(df: int) -> float:
    """The factor that turns a sample standard deviation with ``df`` degrees of freedom into
    its one-sided 80% lower confidence bound, sqrt(df / chi2_0.8(df)) (Wilson-Hilferty's
    approximation of the quantile): a cell stops at the floor only when even a spread that
    small would keep it from the goal."""
    z = 0.8416  # the standard normal's 80% quantile
    chi2 = df * (1.0 - 2.0 / (9.0 * df) + z * math.sqrt(2.0 / (9.0 * df))) ** 3
    return math.sqrt(df / chi2)


def decide_round(
    contest: Mapping[Hashable, Sequence[float]],
    running: Sequence[Hashable],
    policy: RacePolicy,
    spent: int,
) -> dict[Hashable, Standing]:
    """Which of a contest's ``running`` cells stop now, and why (asked after every process).

    ``contest`` maps every cell of the contest (running or stopped) to its per-process medians
    in round order, each positive; ``spent`` is how many processes the contest has run in all.
    """
    fastest = min(contest, key=lambda c: statistics.median(contest[c])) if contest else None
    ratios = {}
    for cell, medians in contest.items():
        if fastest is not None and cell != fastest and min(len(medians),
                                                            len(contest[fastest])) >= 2:
            ratios[cell] = paired_ratio(contest[fastest], medians)
    out: dict[Hashable, Standing] = {}
    over_budget = spent >= policy.allowance(len(contest))
    for cell in running:
        medians = contest[cell]
        k = len(medians)
        ratio = ratios.get(cell)
        if (ratio is not None and ratio.low is not None and ratio.low >= policy.clear_loss
                and k >= policy.elimination_after):
            out[cell] = Standing(
                StopReason.CLEARLY_SLOWER,
                f"clearly slower: ×{ratio.value:.2f} [{ratio.low:.2f}–{ratio.high:.2f}] the "
                "fastest")
            continue
        if k < policy.min_processes:
            continue
        width = _half_width(medians)
        if cell == fastest:
            # A stopped cell's ratio cannot narrow: its rounds are over.
            settled = all(r.verdict(policy.tie) in _SETTLED
                          for c, r in ratios.items() if c in running)
        else:
            settled = ratio is not None and ratio.verdict(policy.tie) in _SETTLED
        reachable = reachable_half_width(medians, policy.max_processes)
        if width <= policy.goal and settled:
            out[cell] = Standing(StopReason.DECIDED, "decided")
        elif settled and reachable > policy.goal:
            out[cell] = Standing(
                StopReason.MACHINE_FLOOR,
                f"at this machine's floor: its processes differ by "
                f"{statistics.stdev(math.log(m) for m in medians):.1%}, so even "
                f"{policy.max_processes} processes would give ±{reachable:.1%}, not the "
                f"goal ±{policy.goal:.0%}; ±{width:.1%} with {k}")
        elif k >= policy.max_processes:
            out[cell] = Standing(StopReason.PROCESS_CAP,
                                 f"still open at the most processes a cell gets ({k})")
        elif over_budget:
            out[cell] = Standing(StopReason.RACE_BUDGET,
                                 "still open when its contest had spent its processes")
    return out
