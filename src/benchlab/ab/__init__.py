"""A/B comparisons: control vs treatment in counterbalanced fresh-process pairs, with verdicts."""

from __future__ import annotations

from benchlab.ab.pairs import CompareSettings, Side, compare_jobs
from benchlab.ab.model import Comparison, MetricComparison, OpDelta, Outcome, PairedEstimate

__all__ = [
    "CompareSettings",
    "Comparison",
    "MetricComparison",
    "OpDelta",
    "Outcome",
    "PairedEstimate",
    "Side",
    "compare_jobs",
]
