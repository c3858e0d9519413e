"""Settings that replace what the specs say for every test of a sweep: :class:`TestOverrides`.

Its own module, below both the harness that applies it and the :class:`~benchlab.harness.sweep.Sweep`
that carries it, so the harness can take a Sweep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from benchlab.errors import UsageError
from benchlab.schema.settings import check_settings
from benchlab.spec.types import TestCase

__all__ = ["TestOverrides"]


class TestOverrides:
    """Settings that replace what the specs say, for every test of a sweep.

    Keyword arguments are settings of :class:`benchlab.schema.settings.TestSettings`; ``None`` leaves
    the spec's value. An unknown name or a value out of bounds is a :class:`UsageError`.
    """

    __slots__ = ("_values",)
    __test__ = False  # a library class, not a pytest test class
    _values: Mapping[str, Any]

    def __init__(self, **settings: Any) -> None:
        values = {name: value for name, value in settings.items() if value is not None}
        problems = check_settings(values)
        if problems:
            raise UsageError("; ".join(problems))
        object.__setattr__(self, "_values", MappingProxyType(values))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"TestOverrides is immutable (cannot set {name!r})")

    @property
    def values(self) -> Mapping[str, Any]:
        """The settings this replaces, name → value."""
        return self._values

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={value!r}" for name, value in self._values.items())
        return f"TestOverrides({given})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TestOverrides) and dict(self._values) == dict(other._values)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))

    def apply(self, test: TestCase) -> TestCase:
        """``test`` with every set override in place."""
        return replace(test, **self._values) if self._values else test
