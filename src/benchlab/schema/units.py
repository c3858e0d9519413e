"""Units as data: the one table that converts a measured value into the unit a column states.

Every sample carries the unit its metric line gave. Reporters never assume it: they ask
:func:`convert` for the value in their column's unit and get ``None`` when the sample's unit is
unknown or measures something else (bytes under a milliseconds column), then say so instead of
relabelling the number.

Prefixes follow SI and IEC: ``KB``/``kB`` and ``MB`` are powers of 1000, ``KiB`` and ``MiB``
powers of 1024. A tool that writes ``kB`` for KiB (Linux's ``VmHWM``) is converted by its own
parser before its samples reach benchlab. Standard library only: runner processes import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Dimension", "Unit", "convert", "dimension_of", "same_dimension", "unit_of"]


class Dimension(StrEnum):
    """What a unit measures; values convert only within one dimension."""

    TIME = "time"
    SIZE = "size"  # bytes: model files and memory alike
    ENERGY = "energy"
    POWER = "power"
    RATE = "rate"  # events per second: tokens/s, queries/s, samples/s
    COUNT = "count"  # events counted: instructions, cache misses


@dataclass(frozen=True, slots=True)
class Unit:
    """A known unit: its dimension and how many of the dimension's base unit it is worth.

    Base units: seconds, bytes, joules, watts, events per second.
    """

    name: str
    dimension: Dimension
    factor: float


def _units() -> dict[str, Unit]:
    table: dict[str, tuple[Dimension, float]] = {
        "ns": (Dimension.TIME, 1e-9), "us": (Dimension.TIME, 1e-6),
        "µs": (Dimension.TIME, 1e-6), "μs": (Dimension.TIME, 1e-6),
        "ms": (Dimension.TIME, 1e-3), "s": (Dimension.TIME, 1.0),
        "min": (Dimension.TIME, 60.0),
        "B": (Dimension.SIZE, 1.0), "byte": (Dimension.SIZE, 1.0), "bytes": (Dimension.SIZE, 1.0),
        "kB": (Dimension.SIZE, 1e3), "KB": (Dimension.SIZE, 1e3), "MB": (Dimension.SIZE, 1e6),
        "GB": (Dimension.SIZE, 1e9), "KiB": (Dimension.SIZE, 2.0**10),
        "MiB": (Dimension.SIZE, 2.0**20), "GiB": (Dimension.SIZE, 2.0**30),
        "nJ": (Dimension.ENERGY, 1e-9), "uJ": (Dimension.ENERGY, 1e-6),
        "µJ": (Dimension.ENERGY, 1e-6), "mJ": (Dimension.ENERGY, 1e-3),
        "J": (Dimension.ENERGY, 1.0), "kJ": (Dimension.ENERGY, 1e3),
        "mWh": (Dimension.ENERGY, 3.6), "Wh": (Dimension.ENERGY, 3600.0),
        "uW": (Dimension.POWER, 1e-6), "µW": (Dimension.POWER, 1e-6),
        "mW": (Dimension.POWER, 1e-3), "W": (Dimension.POWER, 1.0),
        "kW": (Dimension.POWER, 1e3),
        "tokens/s": (Dimension.RATE, 1.0), "tok/s": (Dimension.RATE, 1.0),
        "1/s": (Dimension.RATE, 1.0), "Hz": (Dimension.RATE, 1.0),
        "count": (Dimension.COUNT, 1.0),
    }
    return {name: Unit(name, dim, factor) for name, (dim, factor) in table.items()}


_UNITS = _units()


def unit_of(name: str) -> Unit | None:
    """The :class:`Unit` called ``name`` (surrounding spaces ignored), or ``None`` if unknown."""
    return _UNITS.get(name.strip())


def dimension_of(name: str) -> Dimension | None:
    """What ``name`` measures, or ``None`` for an unknown (or dimensionless) unit."""
    unit = unit_of(name)
    return None if unit is None else unit.dimension


def same_dimension(a: str, b: str) -> bool:
    """Whether values in ``a`` convert to ``b`` (equal names always do, known or not)."""
    if a.strip() == b.strip():
        return True
    ua, ub = unit_of(a), unit_of(b)
    return ua is not None and ub is not None and ua.dimension is ub.dimension


def convert(value: float, from_unit: str, to_unit: str) -> float | None:
    """``value`` in ``from_unit`` expressed in ``to_unit``; ``None`` when they do not convert.

    Equal unit names convert trivially even when benchlab does not know them (``dB`` to
    ``dB``); anything else needs two known units of one dimension.
    """
    if from_unit.strip() == to_unit.strip():
        return value
    source, target = unit_of(from_unit), unit_of(to_unit)
    if source is None or target is None or source.dimension is not target.dimension:
        return None
    return value * source.factor / target.factor
