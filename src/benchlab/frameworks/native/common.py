"""What the native-tool parsers share: one number pattern, tolerant number reading and an
ordered sample list."""

from __future__ import annotations

import math

from benchlab.schema.result import Sample

__all__ = ["NUMBER", "SampleList", "count_flag", "finite_float"]

#: A number as the tools print it, for a regular expression's capture group: optional sign,
#: integer or decimal, optional exponent (C++ streams print ``1e-05`` for a tiny value), or
#: ``nan``/``inf`` in any case (a tool's average over no runs). Read what it matches with
#: :func:`finite_float`. One pattern for every parser, so that none of them stops at a
#: value's exponent and reads ``1e-05`` as ``1``.
NUMBER = r"[-+]?(?:(?i:nan|inf)|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"


def finite_float(text: str) -> float | None:
    """``text`` as a finite float, or None (the tools print ``nan`` for an empty average)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def count_flag(name: str, value: object, lowest: int) -> int:
    """``value`` as a tool's count flag (runs, threads...): an int of at least ``lowest``.

    Raises ``ValueError`` naming the flag otherwise (``True`` is not a count); the message
    says the bound in words where there are words for it, since users read it in option
    errors as well as in tool command lines.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        wanted = {0: "a non-negative integer", 1: "a positive integer"}.get(
            lowest, f"an integer >= {lowest}")
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
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
