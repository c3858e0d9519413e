"""The race: processes go where the answer is open, clear losers stop early, each cell is
recorded as soon as it is decided, and ``--repeat`` keeps the fixed design."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from benchlab.harness.overrides import TestOverrides
from benchlab.harness.sweep import Sweep
from benchlab.stats.race import RacePolicy, Standing, decide_round, reachable_half_width
from benchlab.harness.rounds import Pace, measure_in_rounds
from benchlab.schema.result import JobIdentity, Result, Status, StopReason

# Three processes at least, so the rules show on short series; the default asks five.
POLICY = RacePolicy(min_processes=3, elimination_after=3)


def _steady(level: float, k: int, wobble: float = 0.001) -> list[float]:
    return [level * (1 + wobble * (i % 3 - 1)) for i in range(k)]


def test_a_clear_loser_stops_at_the_minimum_and_nothing_else_does() -> None:
    contest = {"fast": [1.0, 1.03, 0.97], "slow": _steady(3.0, 3)}
    out = decide_round(contest, ["fast", "slow"], POLICY, spent=6)
    assert set(out) == {"slow"}
    assert out["slow"].reason is StopReason.CLEARLY_SLOWER
    assert out["slow"].why.startswith("clearly slower: ×3.00 [")


def test_cells_whose_interval_meets_the_goal_and_whose_ratio_is_decided_stop() -> None:
    contest = {"fast": _steady(1.0, 3), "close": _steady(1.2, 3)}
    out = decide_round(contest, ["fast", "close"], POLICY, spent=6)
    assert {c: s.reason for c, s in out.items()} == {
        "fast": StopReason.DECIDED, "close": StopReason.DECIDED}


def test_an_undecided_ratio_keeps_both_cells_running_until_the_cap() -> None:
    # Twins 4% apart round by round in opposite directions: the ratio straddles 1 widely.
    fast = [1.0, 1.0, 1.0, 1.0]
    twin = [1.04, 0.96, 1.04, 0.96]
    out = decide_round({"a": fast, "b": twin}, ["a", "b"], POLICY, spent=8)
    assert out == {}
    capped = RacePolicy(min_processes=3, elimination_after=3, max_processes=4)
    out = decide_round({"a": fast, "b": twin}, ["a", "b"], capped, spent=8)
    assert {s.reason for s in out.values()} == {StopReason.PROCESS_CAP}


def test_a_tie_inside_the_band_is_an_answer() -> None:
    a = [1.0, 1.01, 0.99, 1.0]
    b = [1.005, 1.012, 0.996, 1.004]  # moves with a, round by round
    out = decide_round({"a": a, "b": b}, ["a", "b"], POLICY, spent=8)
    assert {s.reason for s in out.values()} == {StopReason.DECIDED}


def test_a_wide_cell_stops_when_the_contest_has_spent_its_allowance() -> None:
    wide = [1.0, 1.05, 0.96]  # wider than the goal now, within reach of more processes
    assert decide_round({"only": wide}, ["only"], POLICY, spent=3) == {}
    out = decide_round({"only": wide}, ["only"], POLICY, spent=POLICY.allowance(1))
    assert out["only"].reason is StopReason.RACE_BUDGET


def test_a_cell_the_machine_keeps_from_the_goal_stops_saying_its_floor() -> None:
    # Processes 10% apart: ±5% is out of reach even at the cap; the cell stops at the
    # minimum and says the narrowest interval the cap could buy.
    noisy = [1.0, 1.12, 0.9, 1.08, 0.93]
    floor = reachable_half_width(noisy, POLICY.max_processes)
    assert floor > POLICY.goal
    (stood,) = decide_round({"only": noisy}, ["only"], POLICY, spent=5).values()
    assert stood.reason is StopReason.MACHINE_FLOOR
    assert f"would give ±{floor:.1%}, not the goal ±5%" in stood.why
    # The same spread on a goal the cap can buy keeps the cell running.
    loose = RacePolicy(min_processes=3, elimination_after=3, goal=0.3)
    assert decide_round({"only": noisy}, ["only"], loose, spent=5)["only"].reason is (
        StopReason.DECIDED)
    # A quiet machine: more processes would reach the goal, so the floor is not said.
    assert reachable_half_width([1.0, 1.02, 0.99, 1.01, 0.98], 12) < POLICY.goal


def test_the_policy_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        RacePolicy(goal=1.5)
    with pytest.raises(ValueError):
        RacePolicy(min_processes=5, max_processes=4)
    with pytest.raises(ValueError):
        RacePolicy(clear_loss=0.9)
    assert not POLICY.takes(1) and not POLICY.takes(2) and POLICY.takes(3)
    assert POLICY.allowance(9) == 40  # 27 for three each, and half as many again
    default = RacePolicy()
    assert default.min_processes == default.elimination_after == 5 and default.takes(5)
    assert not default.takes(3)  # a test asking for three keeps its three


def test_repeat_on_the_command_line_keeps_the_fixed_design() -> None:
    assert Sweep.of().race_policy() == RacePolicy()
    assert Sweep.of(overrides=TestOverrides(repeat=5)).race_policy() is None
    assert Sweep.of(order="jobs").race_policy() is None
    assert Sweep.of(race=False).race_policy() is None
    custom = RacePolicy(goal=0.02)
    assert Sweep.of(race=custom, overrides=TestOverrides(repeat=5)).race_policy() is custom


# --- the scheduler, with measurements written for the test -------------------------------


@dataclass
class _Test:
    repeat: int = 5
    target_ci: float | None = None
    cooldown: float | None = None


@dataclass
class _Job:
    identity: JobIdentity
    test: _Test = field(default_factory=_Test)


class _Cell:
    """A job whose processes run at given levels; logs every step into a shared list."""

    def __init__(self, name: str, levels: Sequence[float], log: list[str],
                 model: str = "m", fail_at: int | None = None) -> None:
        self.job = _Job(JobIdentity("spec", model, "h", "default", name, {}, "host"))
        self.levels, self.log, self.fail_at = list(levels), log, fail_at
        self.done: list[float] = []
        self.closed = False
        self.interleavable = True
        self.raced: bool | None = None

    def step(self) -> Result | None:
        self.log.append(self.job.identity.framework)
        if self.fail_at is not None and len(self.done) == self.fail_at:
            return self._result(Status.FAILED, None)
        self.done.append(self.levels[len(self.done) % len(self.levels)])
        if not self.raced and len(self.done) >= self.job.test.repeat:
            return self._result(Status.OK, StopReason.FIXED_REPETITIONS)
        return None

    def process_medians(self) -> list[float]:
        return [v for v in self.done if not math.isnan(v)]

    def race_off(self) -> None:
        self.raced = False

    def conclude(self, standing: Standing) -> Result:
        return self._result(Status.OK, standing.reason)

    def close(self) -> None:
        self.closed = True

    def _result(self, status: Status, stop: StopReason | None) -> Result:
        details: dict[str, Any] = {"repetitions": len(self.done)}
        if stop is not None:
            details["job_stop_reason"] = stop.value
        return Result(identity=self.job.identity, status=status, details=details)


def _measure(cells: list[_Cell], race: RacePolicy | None) -> list[tuple[str, Result]]:
    recorded: list[tuple[str, Result]] = []

    def opened(job: Any, raced: bool) -> Any:
        cell = next(c for c in cells if c.job is job)
        cell.raced = raced
        return cell

    measure_in_rounds([c.job for c in cells], opened,  # type: ignore[arg-type]
                      lambda job, result: recorded.append((job.identity.framework, result)),
                      None, Pace(), race)
    assert all(c.closed for c in cells)
    return recorded


def test_a_fixed_design_runs_every_cell_in_rounds() -> None:
    log: list[str] = []
    cells = [_Cell("a", [1.0], log), _Cell("b", [3.0], log)]
    recorded = _measure(cells, None)
    assert log == ["a", "b"] * 5
    assert [r.details["repetitions"] for _, r in recorded] == [5, 5]


def test_a_race_spends_processes_where_the_contest_is_close() -> None:
    log: list[str] = []
    cells = [_Cell("fast", [1.0, 1.001, 0.999], log),
             _Cell("slow", [3.0, 3.003, 2.997], log),
             _Cell("twin", [1.04, 0.96], log)]
    recorded = _measure(cells, POLICY)
    by_name = {name: r for name, r in recorded}
    # The clear loser stops at the minimum, and is recorded first, before the race ends.
    assert recorded[0][0] == "slow"
    assert by_name["slow"].details["repetitions"] == 3
    assert by_name["slow"].stop_reason is StopReason.CLEARLY_SLOWER
    # The twins stay open (4% apart, alternating) until the contest's allowance is spent.
    assert by_name["twin"].stop_reason in (StopReason.RACE_BUDGET, StopReason.PROCESS_CAP)
    assert log.count("twin") > 3 and log.count("fast") > 3
    assert len(log) <= POLICY.allowance(3) + 2


def test_every_cell_shares_the_rounds_and_leaves_as_soon_as_it_is_decided() -> None:
    log: list[str] = []
    cells = [_Cell("a", [1.0], log, model="m1"), _Cell("b", [2.0], log, model="m2"),
             _Cell("c", [1.2], log, model="m1")]
    recorded = _measure(cells, POLICY)
    # One rotation over every cell (a drift falls on all alike); each contest is judged
    # after each of its processes, so a decided cell leaves mid-round.
    assert log == ["a", "b", "c"] * 3
    assert [name for name, _ in recorded] == ["a", "b", "c"]
    assert all(r.stop_reason is StopReason.DECIDED for _, r in recorded)


def test_a_failing_cell_leaves_the_contest_and_the_others_go_on() -> None:
    log: list[str] = []
    cells = [_Cell("a", [1.0], log), _Cell("broken", [0.5], log, fail_at=1),
             _Cell("b", [1.2], log)]
    recorded = dict(_measure(cells, POLICY))
    assert recorded["broken"].status is Status.FAILED
    # The broken cell's one fast process does not make it the fastest.
    assert recorded["a"].stop_reason is StopReason.DECIDED
    assert recorded["b"].stop_reason is StopReason.DECIDED


def test_tests_with_few_processes_or_a_target_keep_their_own_rule() -> None:
    log: list[str] = []
    one = _Cell("one", [1.0], log)
    one.job.test.repeat = 1
    targeted = _Cell("targeted", [1.0], log)
    targeted.job.test.target_ci = 0.01
    _measure([one, targeted], POLICY)
    assert one.raced is False and targeted.raced is False
    assert log.count("one") == 1 and log.count("targeted") == 5


def test_a_cell_without_latency_leaves_the_race_and_keeps_its_processes() -> None:
    log: list[str] = []
    quiet = _Cell("quiet", [math.nan], log)  # prints no latency
    cells = [_Cell("a", [1.0], log), quiet, _Cell("b", [1.2], log)]
    recorded = dict(_measure(cells, POLICY))
    assert log.count("quiet") == 5
    assert recorded["quiet"].stop_reason is StopReason.FIXED_REPETITIONS
    assert recorded["a"].stop_reason is recorded["b"].stop_reason is StopReason.DECIDED
