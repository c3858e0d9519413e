"""What the native-tool parsers share: tolerant number reading and an ordered sample list."""

from __future__ import annotations

import math

from benchlab.schema import Sample

__all__ = ["SampleList", "count_flag", "finite_float"]


def finite_float(text: str) -> float | None:
    """``text`` as a finite float, or None (the tools print ``nan`` for an empty average)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def count_flag(name: str, value: object, lowest: int) -> int:
    """``value`` as a tool's count flag (runs, threads...): an int of at least ``lowest``.

    Raises ``ValueError`` naming the flag otherwise (``True`` is not a count).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise ValueError(f"{name} must be an integer >= {lowest}, got {value!r}")
    return value


class SampleList:
    """Samples in order of appearance, indexed per ``type``/``metric`` as the protocol does."""

    def __init__(self) -> None:
        self.items: list[Sample] = []
        self._next: dict[tuple[str, str], int] = {}

    def add(self, type_: str, metric: str, value: float | None, unit: str) -> None:
        """Append one sample; a missing or non-finite value is skipped."""
        if value is None or not math.isfinite(value):
            return
        index = self._next.get((type_, metric), 0)
        self._next[(type_, metric)] = index + 1
        self.items.append(Sample(metric, float(value), unit, type_, 0, index))
