"""How the lab's pages and their JSON show a stored summary's numbers.

One rule for the overview, the trends, the comparison and a run's page: times in ms whatever
they were measured in, other units as measured, and no NaN or infinity (JSON has neither; a
missing number is ``None``).
"""

from __future__ import annotations

import math

from benchlab.report.matrix import summary_in
from benchlab.schema.result import Summary
from benchlab.schema.units import Dimension, dimension_of

__all__ = ["display_unit", "finite", "shown_stat"]


def finite(value: float | None) -> float | None:
    """``value``, or ``None`` for a missing, NaN or infinite one."""
    return value if value is not None and math.isfinite(value) else None


def display_unit(unit: str) -> str:
    """Times are shown in ms whatever they were measured in; other units as measured."""
    return "ms" if dimension_of(unit) is Dimension.TIME else unit


def shown_stat(summary: Summary, attr: str) -> float | None:
    """The summary's ``attr`` (``p50``, ``ci_low``...) in its display unit, finite or None."""
    return finite(summary_in(summary, display_unit(summary.unit), attr))
