"""The lab's ▲/▼ rule: did a job's latency move between two of its runs?

Identical runs on a shared machine differ as much as their processes do, so a change is
flagged only beyond that spread (docs/statistics.md, "The lab's ▲/▼ flags", with the false
flags and the detection measured by ``bench/repeatability.py``). The overview and the compare
page both ask :func:`changed`, so the two pages never disagree about one change.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.stats.runstats import run_change, run_change_with_history
from benchlab.schema.result import Summary
from benchlab.schema.units import convert

__all__ = ["FLAG_HISTORY", "FLAG_HISTORY_LEVEL", "FLAG_LEVEL", "FLAG_MIN_EFFECT", "changed"]

#: The least change the overview flags: smaller moves are not worth a person's attention.
FLAG_MIN_EFFECT = 0.03
#: Confidence of the between-runs test on the two runs' processes alone.
FLAG_LEVEL = 0.99
#: Confidence of the test whose process spread is pooled over the cell's history.
FLAG_HISTORY_LEVEL = 0.98
#: Earlier ok results (besides the previous one) whose processes the history test pools.
FLAG_HISTORY = 6


def _in_unit(values: Sequence[float], unit: str, wanted: str) -> list[float] | None:
    converted = [convert(v, unit, wanted) for v in values]
    return None if any(v is None for v in converted) else [float(v or 0.0) for v in converted]


def changed(before: Summary, after: Summary, history: Sequence[Summary] = ()) -> bool:
    """The overview's rule: did the latency median move between two runs of one job?

    ``history`` holds the job's earlier ok results, oldest first, before ``before``. In
    order of preference:

    1. With enough processes in the history and the two runs (six degrees of freedom: three
       runs of three), the spread of a process around its run is pooled over all of them
       (:func:`benchlab.stats.runstats.run_change_with_history`); the change is flagged when a
       98% interval of the ratio excludes 1 and the median moved by at least 3%.
    2. With two or more processes in each of the two runs, Welch's t on their process
       medians alone (:func:`benchlab.stats.runstats.run_change`) at 99%, and at least 3%.
    3. With one process on a side there is no spread between processes to judge by; then only
       a change of at least 3% whose two intervals are disjoint is flagged.
    """
    earlier = _in_unit(before.process_p50s, before.unit, after.unit)
    if earlier is None:
        return False
    older = [_in_unit(s.process_p50s, s.unit, after.unit) for s in history]
    pooled = run_change_with_history([o for o in older if o], earlier, after.process_p50s,
                                     level=FLAG_HISTORY_LEVEL, min_effect=FLAG_MIN_EFFECT)
    if pooled is not None:
        return pooled.significant
    change = run_change(earlier, after.process_p50s, level=FLAG_LEVEL,
                        min_effect=FLAG_MIN_EFFECT)
    if change is not None:
        return change.significant
    low, high, p50 = (convert(getattr(before, a), before.unit, after.unit)
                      for a in ("ci_low", "ci_high", "p50"))
    if low is None or high is None or not p50 or p50 <= 0:
        return False
    disjoint = after.ci_low > high or after.ci_high < low
    return disjoint and abs(after.p50 / p50 - 1.0) >= FLAG_MIN_EFFECT
