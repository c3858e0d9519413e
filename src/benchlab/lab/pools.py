"""Pool rules: which devices a job may run on, written ``abi=arm64-v8a,cores>=4``.

A rule is a conjunction of conditions on a device's properties. ``=`` and ``!=`` compare as
text (a list property matches when it contains the value: ``runtimes=onnxruntime``); ``>=``,
``<=``, ``>`` and ``<`` compare numbers. The canonical text of a rule (conditions sorted) is the
pool's name and its procrastinate queue is ``pool:<name>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchlab.errors import UsageError

__all__ = ["Condition", "PoolRule", "device_queue", "pool_queue"]

_CONDITION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$")
_NUMERIC = (">=", "<=", ">", "<")


def device_queue(device_id: str) -> str:
    """The procrastinate queue (and lock) of one device: ``device:<id>``."""
    return f"device:{device_id}"


def pool_queue(rule: PoolRule | str) -> str:
    """The procrastinate queue of a pool: ``pool:<canonical rule>``."""
    name = rule.name if isinstance(rule, PoolRule) else PoolRule.parse(rule).name
    return f"pool:{name}"


@dataclass(frozen=True)
class Condition:
    """One ``key op value`` condition of a pool rule."""

    key: str
    op: str
    value: str

    def text(self) -> str:
        """The condition as written: ``abi=arm64-v8a``."""
        return f"{self.key}{self.op}{self.value}"

    def holds(self, properties: Mapping[str, Any]) -> bool:
        """Whether a device with these properties meets the condition (a missing key: no)."""
        have = properties.get(self.key)
        if have is None:
            return self.op == "!="
        if self.op in _NUMERIC:
            try:
                left, right = float(have), float(self.value)
            except (TypeError, ValueError):
                return False
            return {">=": left >= right, "<=": left <= right,
                    ">": left > right, "<": left < right}[self.op]
        values = [str(v) for v in have] if isinstance(have, list | tuple | set) else [str(have)]
        equal = self.value in values
        return equal if self.op == "=" else not equal


@dataclass(frozen=True)
class PoolRule:
    """A conjunction of conditions; ``PoolRule.parse("abi=arm64-v8a,cores>=4")``."""

    conditions: tuple[Condition, ...]

    @classmethod
    def parse(cls, text: str) -> PoolRule:
        """Parse a rule; a malformed one is a :class:`UsageError` naming the bad part."""
        conditions = []
        for part in text.split(","):
            if not part.strip():
                continue
            found = _CONDITION.match(part)
            if found is None or not found.group(3):
                raise UsageError(
                    f"pool rule {text!r}: {part.strip()!r} is not 'property=value' "
                    "(operators: = != >= <= > <)"
                )
            key, op, value = found.groups()
            if op in _NUMERIC:
                try:
                    float(value)
                except ValueError:
                    raise UsageError(
                        f"pool rule {text!r}: {part.strip()!r} compares with {op}, "
                        "which needs a number"
                    ) from None
            conditions.append(Condition(key, op, value))
        if not conditions:
            raise UsageError("a pool rule needs at least one condition, e.g. 'abi=arm64-v8a'")
        return cls(tuple(sorted(set(conditions), key=lambda c: (c.key, c.op, c.value))))

    @property
    def name(self) -> str:
        """The canonical text: conditions sorted and joined by commas."""
        return ",".join(c.text() for c in self.conditions)

    def matches(self, properties: Mapping[str, Any]) -> bool:
        """Whether a device with these properties belongs to the pool."""
        return all(c.holds(properties) for c in self.conditions)
