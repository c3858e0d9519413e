"""The overview's ▲/▼ rule (``lab.views.changed``) on summaries as a run stores them."""

from __future__ import annotations

from benchlab.lab.flags import changed
from benchlab.stats.summary import summarize


def _summary(levels: list[float], unit: str = "ms") -> object:
    parts = [[level * (1 + 0.002 * (i % 5 - 2)) for i in range(30)] for level in levels]
    return summarize([v for p in parts for v in p], unit, segments=parts)


def test_identical_runs_whose_processes_disagree_are_not_flagged() -> None:
    before = _summary([10.0, 11.0, 10.4])
    after = _summary([10.9, 10.1, 10.6])
    # Their pooled iterations' intervals are disjoint, which used to be a flag.
    assert before.process_p50s and not changed(before, after)


def test_a_real_slowdown_beyond_the_processes_spread_is_flagged() -> None:
    before = _summary([10.0, 10.1, 9.95])
    assert changed(before, _summary([11.0, 11.1, 10.95]))
    assert changed(_summary([11.0, 11.1, 10.95]), before)  # and a speed-up
    assert not changed(before, _summary([10.2, 10.3, 10.15]))  # 2%: under the minimum


def test_units_are_converted_before_comparing() -> None:
    before = _summary([10.0, 10.1, 9.95])
    in_us = _summary([10_000.0, 10_100.0, 9_950.0], "us")
    assert not changed(before, in_us)
    assert changed(before, _summary([11_000.0, 11_100.0, 10_950.0], "us"))


def test_one_process_falls_back_to_disjoint_intervals_and_the_minimum() -> None:
    one = summarize([10.0 + 0.01 * (i % 7) for i in range(30)], "ms")
    slower = summarize([10.5 + 0.01 * (i % 7) for i in range(30)], "ms")
    assert not one.predicts_next_run
    assert changed(one, slower)
    assert not changed(one, summarize([10.2 + 0.01 * (i % 7) for i in range(30)], "ms"))


def test_history_pools_the_process_spread_so_one_odd_process_does_not_hide_a_change() -> None:
    # The previous run had one odd process: on its own (Welch, two degrees of freedom per
    # side) a 12% slowdown is lost in it; with the cell's steadier history pooled it is found.
    before = _summary([10.0, 8.7, 9.9])
    after = _summary([11.2, 11.3, 11.1])
    history = [_summary([10.0, 10.1, 9.9]), _summary([10.05, 9.95, 10.1]),
               _summary([9.9, 10.0, 10.1])]
    assert not changed(before, after)
    assert changed(before, after, history)
    # ...and the same history does not turn an identical run into a flag.
    assert not changed(before, _summary([10.0, 9.9, 10.05]), history)

