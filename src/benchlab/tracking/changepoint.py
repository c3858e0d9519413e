"""Change points in a series of per-commit changes, by binary segmentation with a t-test.

Each commit's evidence is its per-pair log-ratios against the pinned reference. A candidate
split between commits ``k`` and ``k+1`` pools the log-ratios on each side and compares the two
groups with Welch's t statistic; the split with the largest |t| is kept when the step is both
unlikely under no change (|t| above a strict threshold, as Otava's t-test variant of E-divisive
does with p < 0.001) and at least the minimum effect in size; each side is then searched again.
Pooled pair log-ratios make the test far more sensitive than one number per commit, and the
pinned reference makes every commit's level comparable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ChangePoint", "find_change_points"]

# |t| of a two-sided p of about 0.001 for the sample sizes track produces (tens of pairs).
T_THRESHOLD = 3.4


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """A step in the series: ``index`` is the first commit of the new level."""

    index: int
    before: float
    after: float
    t: float

    @property
    def change(self) -> float:
        """Relative change of the new level over the old one."""
        return math.exp(self.after - self.before) - 1.0


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, var


def _best_split(groups: Sequence[Sequence[float]]) -> ChangePoint | None:
    best: ChangePoint | None = None
    for k in range(1, len(groups)):
        left = [v for g in groups[:k] for v in g]
        right = [v for g in groups[k:] for v in g]
        if len(left) < 2 or len(right) < 2:
            continue
        (m1, v1), (m2, v2) = _mean_var(left), _mean_var(right)
        se = math.sqrt(v1 / len(left) + v2 / len(right))
        t = (m2 - m1) / se if se > 0 else (math.inf if m2 != m1 else 0.0)
        if best is None or abs(t) > abs(best.t):
            best = ChangePoint(k, m1, m2, t)
    return best


def find_change_points(
    groups: Sequence[Sequence[float]], min_effect: float = 0.01, offset: int = 0
) -> list[ChangePoint]:
    """Change points of a series whose element ``i`` holds commit ``i``'s pair log-ratios."""
    split = _best_split(groups)
    if split is None or abs(split.t) < T_THRESHOLD or abs(split.change) < min_effect:
        return []
    k = split.index
    found = [ChangePoint(k + offset, split.before, split.after, split.t)]
    found += find_change_points(groups[:k], min_effect, offset)
    found += find_change_points(groups[k:], min_effect, offset + k)
    return sorted(found, key=lambda c: c.index)
