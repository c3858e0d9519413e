"""Power meters: where the joules come from.

A meter is started before a measurement and stopped after it; ``stop`` returns timestamped
:class:`PowerReading` s in the meter's clock. Two kinds exist, and the accounting treats them
differently: ``"cumulative"`` meters report a running energy counter (RAPL, NVML total energy),
``"power"`` meters report instantaneous power (Monsoon, a phone's battery current x voltage).

Every meter answers :meth:`PowerMeter.availability` with a reason when it cannot measure here;
a result built from an unavailable meter says so instead of carrying a number. This module
holds the shared pieces (readings, the protocol, the polling base, a scripted meter); the real
meters live in :mod:`~benchlab.energy.rapl`, :mod:`~benchlab.energy.nvml`,
:mod:`~benchlab.energy.monsoon` and :mod:`~benchlab.energy.battery`. Drivers and vendor APIs
(``pynvml``, ``Monsoon``) are imported inside the meter that uses them, so importing any of
these modules costs nothing on machines that have neither.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from benchlab.errors import InfrastructureError
from benchlab.schema.availability import Availability

__all__ = [
    "MeterError",
    "MeterKind",
    "PolledMeter",
    "PowerMeter",
    "PowerReading",
    "ScriptedMeter",
    "midpoint",
]

MeterKind = Literal["cumulative", "power"]
"""``"cumulative"``: readings carry ``energy_j``; ``"power"``: readings carry ``power_w``."""


class MeterError(InfrastructureError):
    """A meter's readings cannot be trusted: the device changed state while it was measured."""


@dataclass(frozen=True, slots=True)
class PowerReading:
    """One sample of a meter at time ``t`` (seconds, in the meter's clock).

    Exactly one of ``energy_j`` (a cumulative counter, joules since an arbitrary origin) and
    ``power_w`` (instantaneous watts) is set. Battery meters add the cell voltage and the
    battery's remaining-charge counter (coulombs) so a second energy estimate can be made.
    """

    t: float
    energy_j: float | None = None
    power_w: float | None = None
    voltage_v: float | None = None
    charge_c: float | None = None

    def __post_init__(self) -> None:
        if (self.energy_j is None) == (self.power_w is None):
            raise ValueError("a PowerReading carries exactly one of energy_j and power_w")


@runtime_checkable
class PowerMeter(Protocol):
    """Anything that can measure energy between :meth:`start` and :meth:`stop`."""

    name: str
    kind: MeterKind

    def availability(self) -> Availability:
        """Whether this meter can measure here, and why not when it cannot."""
        ...

    def start(self) -> None:
        """Begin sampling; the first reading is taken before this returns."""
        ...

    def stop(self) -> list[PowerReading]:
        """End sampling and return the readings in time order, the last taken after the call."""
        ...


class PolledMeter:
    """Base for meters read by polling: a background thread calls :meth:`read_once`.

    Readings bracket the measurement: one is taken in :meth:`start` before it returns and one
    in :meth:`stop` after the thread ends, so any window between the two calls is covered.
    A failed read is counted (``failed_reads``, ``last_error``) and skipped; the thread keeps
    going because a transient ``adb`` or sysfs hiccup should not end a long measurement.
    """

    name: str = "polled"
    kind: MeterKind = "cumulative"

    def __init__(self, interval_s: float = 0.1) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        self.interval_s = interval_s
        self.failed_reads = 0
        self.last_error: Exception | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._readings: list[PowerReading] = []

    def read_once(self) -> PowerReading:
        """Take one reading now. Subclasses implement this."""
        raise NotImplementedError

    def reset(self) -> None:
        """Prepare for a new measurement (open handles, clear counters); called by start."""

    def close(self) -> None:
        """Release what :meth:`reset` opened; called by stop after the last reading."""

    def start(self) -> None:
        """Take the first reading, then poll every ``interval_s`` in a daemon thread."""
        if self._thread is not None:
            raise RuntimeError(f"meter {self.name} is already running")
        self.reset()
        with self._lock:
            self._readings = []
            self.failed_reads = 0
            self.last_error = None
        self._stop.clear()
        self._sample()
        self._thread = threading.Thread(
            target=self._loop, name=f"benchlab-meter-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self) -> list[PowerReading]:
        """Stop polling, take a closing reading and return all readings in time order."""
        if self._thread is None:
            raise RuntimeError(f"meter {self.name} was not started")
        self._stop.set()
        self._thread.join()
        self._thread = None
        try:
            self._sample()
        finally:
            self.close()
        with self._lock:
            readings, self._readings = self._readings, []
        return sorted(readings, key=lambda r: r.t)

    def _loop(self) -> None:
        next_t = time.monotonic() + self.interval_s
        # Event.wait returns as soon as stop() sets it, so stopping never waits out an interval.
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            self._sample()
            # A read slower than the interval moves the schedule instead of causing a burst.
            next_t = max(next_t + self.interval_s, time.monotonic())

    def _sample(self) -> None:
        try:
            reading = self.read_once()
        except Exception as exc:  # noqa: BLE001 - any driver error is one lost sample
            with self._lock:
                self.failed_reads += 1
                self.last_error = exc
            return
        with self._lock:
            self._readings.append(reading)


def midpoint(before: float, after: float) -> float:
    """The time a reading taken between clock readings ``before`` and ``after`` stands for."""
    return (before + after) / 2.0


class ScriptedMeter:
    """A meter whose readings are given in advance — for tests and demos, never measurement.

    ``readings`` is either the readings themselves or a function from time to watts, sampled
    at ``times``; with ``kind="cumulative"`` the function is integrated (trapezoid between
    consecutive times, exact when power is linear between them) into a counter from 0 J.
    """

    def __init__(
        self,
        readings: Sequence[PowerReading] | Callable[[float], float],
        *,
        times: Sequence[float] | None = None,
        kind: MeterKind | None = None,
        name: str = "scripted",
    ) -> None:
        self.name = name
        if callable(readings):
            if times is None:
                raise ValueError("a power function needs the times to sample it at")
            self.kind: MeterKind = kind or "power"
            self._readings = _sample_function(readings, sorted(times), self.kind)
        else:
            self._readings = sorted(readings, key=lambda r: r.t)
            kinds = {"cumulative" if r.energy_j is not None else "power" for r in self._readings}
            if len(kinds) > 1 or (kind is not None and kinds and kinds != {kind}):
                raise ValueError(f"readings of kind {sorted(kinds)} given for kind {kind!r}")
            self.kind = kind or (kinds.pop() if kinds else "power")
        self.started = False

    def availability(self) -> Availability:
        """Always available; the details say the numbers are scripted."""
        return Availability(ok=True, details={"scripted": True})

    def start(self) -> None:
        """Mark the meter started; the readings do not depend on when."""
        self.started = True

    def stop(self) -> list[PowerReading]:
        """Return the scripted readings."""
        if not self.started:
            raise RuntimeError(f"meter {self.name} was not started")
        self.started = False
        return list(self._readings)


def _sample_function(
    power: Callable[[float], float], times: list[float], kind: MeterKind
) -> list[PowerReading]:
    if kind == "power":
        return [PowerReading(t=t, power_w=float(power(t))) for t in times]
    readings: list[PowerReading] = []
    energy = 0.0
    for i, t in enumerate(times):
        if i:
            energy += (power(times[i - 1]) + power(t)) / 2.0 * (t - times[i - 1])
        readings.append(PowerReading(t=t, energy_j=energy))
    return readings
