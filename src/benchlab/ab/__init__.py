"""A/B comparisons: control vs treatment in counterbalanced fresh-process pairs, with verdicts."""

from __future__ import annotations

from benchlab.ab.sides import CompareSettings, Side, make_side
from benchlab.ab.driver import compare_jobs
from benchlab.schema.comparison import (
    Comparison,
    Fidelity,
    MetricComparison,
    Mode,
    OpDelta,
    Outcome,
    PairedEstimate,
)

__all__ = [
    "CompareSettings",
    "Comparison",
    "Fidelity",
    "MetricComparison",
    "Mode",
    "OpDelta",
    "Outcome",
    "PairedEstimate",
    "Side",
    "compare_jobs",
    "make_side",
]
