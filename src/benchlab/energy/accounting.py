"""Energy per inference from a meter's readings: window alignment and idle-baseline subtraction.

The figure is ``(E_window - P_idle * window_s) / iterations``: the energy the meter saw over
the measured window, less what the device would have used idling for as long, shared out over
the inferences run in the window. Windows rarely fall on sample times, so counters are
interpolated linearly at the window edges and power readings are integrated with the
trapezoid rule clipped exactly at the edges. A window the readings do not cover, or a meter
that is not there, gives an ``"unavailable"`` result with the reason — never a guessed number.

Readings and windows must share one clock. A window timed on a phone is moved onto the host's
clock with a :class:`ClockOffset` estimated from round trips to the phone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from benchlab.energy.meters import PowerReading
from benchlab.errors import WindowNotCoveredError

__all__ = [
    "ClockOffset",
    "EnergyResult",
    "EnergyWindow",
    "WindowNotCoveredError",
    "energy_between",
    "energy_per_inference",
    "idle_baseline_w",
    "unavailable",
]



@dataclass(frozen=True, slots=True)
class EnergyWindow:
    """The measured interval ``[start, end]`` (seconds, meter clock) and the inferences in it."""

    start: float
    end: float
    iterations: int

    def __post_init__(self) -> None:
        if not self.end > self.start:
            raise ValueError(f"window end {self.end} is not after its start {self.start}")
        if self.iterations <= 0:
            raise ValueError(f"a window needs at least one iteration, got {self.iterations}")

    @property
    def duration_s(self) -> float:
        """Length of the window in seconds."""
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class EnergyResult:
    """Energy per inference, or why there is none.

    ``status`` is ``"ok"`` with the numbers filled in, or ``"unavailable"`` with ``reason``
    and no numbers. ``mean_power_w`` is the mean power over the window (``window_energy_j /
    window_s``, idle power included). ``warning`` flags an ok figure to read with care
    (negative net energy, no idle baseline, too few readings in the window).
    """

    status: Literal["ok", "unavailable"]
    reason: str = ""
    joules_per_inference: float | None = None
    window_energy_j: float | None = None
    baseline_w: float | None = None
    window_s: float | None = None
    iterations: int | None = None
    mean_power_w: float | None = None
    meter: str = ""
    warning: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the result carries a figure."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        out = asdict(self)
        out["details"] = dict(self.details)
        return out

    def __str__(self) -> str:
        if not self.ok:
            return f"unavailable: {self.reason}"
        text = f"{self.joules_per_inference:.6g} J/inference ({self.meter})"
        return f"{text}; warning: {self.warning}" if self.warning else text


def unavailable(meter_name: str, reason: str) -> EnergyResult:
    """A result that says energy could not be measured, and why."""
    return EnergyResult(status="unavailable", reason=reason, meter=meter_name)


def _series(readings: Sequence[PowerReading]) -> tuple[str, np.ndarray, np.ndarray]:
    if not readings:
        raise WindowNotCoveredError("the meter returned no readings")
    ordered = sorted(readings, key=lambda r: r.t)
    if all(r.energy_j is not None for r in ordered):
        values = [r.energy_j for r in ordered]
        kind = "cumulative"
    elif all(r.power_w is not None for r in ordered):
        values = [r.power_w for r in ordered]
        kind = "power"
    else:
        raise ValueError("readings mix energy counters and power samples")
    return kind, np.array([r.t for r in ordered], float), np.array(values, float)


def _check_covered(t: np.ndarray, start: float, end: float) -> None:
    if t[0] > start or t[-1] < end:
        raise WindowNotCoveredError(
            f"readings span [{t[0]:.6f}, {t[-1]:.6f}] s but the window is "
            f"[{start:.6f}, {end:.6f}] s"
        )


def _integrate(t: np.ndarray, v: np.ndarray, start: float, end: float) -> float:
    # Interpolated values at the window edges stand in for samples there, so a sample
    # interval that straddles an edge contributes only its part inside the window.
    inside = (t > start) & (t < end)
    ts = np.concatenate(([start], t[inside], [end]))
    vs = np.concatenate(([np.interp(start, t, v)], v[inside], [np.interp(end, t, v)]))
    return float(np.sum((vs[1:] + vs[:-1]) * np.diff(ts)) / 2.0)


def energy_between(readings: Sequence[PowerReading], start: float, end: float) -> float:
    """Joules used in ``[start, end]`` according to ``readings`` (all of one kind).

    Counters are interpolated linearly at both edges; power readings are integrated with the
    trapezoid rule, clipped at the edges. Raises :class:`WindowNotCoveredError` when no
    reading is at or before ``start`` or none at or after ``end``.
    """
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    kind, t, v = _series(readings)
    _check_covered(t, start, end)
    if kind == "cumulative":
        return float(np.interp(end, t, v) - np.interp(start, t, v))
    return _integrate(t, v, start, end)


def idle_baseline_w(readings: Sequence[PowerReading], start: float, end: float) -> float:
    """Mean power in watts over an idle interval ``[start, end]``."""
    if not end > start:
        raise ValueError(f"the idle interval [{start}, {end}] is empty")
    return energy_between(readings, start, end) / (end - start)


def _charge_counter_energy(
    readings: Sequence[PowerReading], start: float, end: float
) -> float | None:
    # A battery's remaining charge falls by the charge delivered; times the mean cell voltage
    # that is the energy delivered. Coarse (the gauge updates slowly) but independent of the
    # current samples, so it is reported next to the power integration as a cross-check.
    if not readings or any(r.charge_c is None or r.voltage_v is None for r in readings):
        return None
    ordered = sorted(readings, key=lambda r: r.t)
    t = np.array([r.t for r in ordered], float)
    charge = np.array([r.charge_c for r in ordered], float)
    volts = np.array([r.voltage_v for r in ordered], float)
    try:
        _check_covered(t, start, end)
    except WindowNotCoveredError:
        return None
    delivered_c = float(np.interp(start, t, charge) - np.interp(end, t, charge))
    mean_v = _integrate(t, volts, start, end) / (end - start)
    return delivered_c * mean_v


def _span(window: EnergyWindow | tuple[float, float]) -> tuple[float, float]:
    if isinstance(window, EnergyWindow):
        return window.start, window.end
    start, end = window
    return float(start), float(end)


def energy_per_inference(
    readings: Sequence[PowerReading],
    window: EnergyWindow,
    baseline_window: EnergyWindow | tuple[float, float] | None = None,
    baseline_w: float | None = None,
    *,
    meter: str = "",
) -> EnergyResult:
    """``(E_window - P_idle * window_s) / iterations`` from one meter's readings.

    ``P_idle`` is the mean power over ``baseline_window`` (an idle interval in the same
    readings) or the given ``baseline_w``; with neither it is 0 and the result warns that the
    figure includes idle power. Readings that do not cover a window give an unavailable
    result. A negative net energy (idle noise larger than the model's draw) is kept, with a
    warning, because clamping it would bias averages over many runs.
    """
    if baseline_window is not None and baseline_w is not None:
        raise ValueError("give baseline_window or baseline_w, not both")
    warnings: list[str] = []
    try:
        window_j = energy_between(readings, window.start, window.end)
    except WindowNotCoveredError as exc:
        return unavailable(meter, f"the readings do not cover the measured window: {exc}")
    details: dict[str, Any] = {}
    if baseline_window is not None:
        idle_start, idle_end = _span(baseline_window)
        try:
            baseline = idle_baseline_w(readings, idle_start, idle_end)
        except WindowNotCoveredError as exc:
            return unavailable(meter, f"the readings do not cover the idle window: {exc}")
        details["baseline_source"] = "idle window"
        details["baseline_window"] = [idle_start, idle_end]
        if idle_start < window.end and window.start < idle_end:
            warnings.append("the idle window overlaps the measured window")
    elif baseline_w is not None:
        baseline = float(baseline_w)
        details["baseline_source"] = "given"
    else:
        baseline = 0.0
        details["baseline_source"] = "none"
        warnings.append("no idle baseline: the figure includes the device's idle power")

    net_j = window_j - baseline * window.duration_s
    if net_j < 0:
        warnings.append(
            f"net energy is negative ({net_j:.6g} J): the idle baseline exceeds the window's "
            "mean power, so the model's draw is within the meter's noise"
        )
    times = np.array([r.t for r in readings], float)
    inside = int(np.count_nonzero((times > window.start) & (times < window.end)))
    if inside < 2:
        warnings.append(
            f"only {inside} reading(s) inside the window: the meter samples too slowly for it"
        )
    details.update(net_energy_j=net_j, readings_in_window=inside)

    charge_j = _charge_counter_energy(readings, window.start, window.end)
    if charge_j is not None:
        charge_baseline = baseline
        if baseline_window is not None:
            idle_j = _charge_counter_energy(readings, *_span(baseline_window))
            if idle_j is not None:
                idle_start, idle_end = _span(baseline_window)
                charge_baseline = idle_j / (idle_end - idle_start)
        details["charge_counter_window_energy_j"] = charge_j
        details["charge_counter_joules_per_inference"] = (
            charge_j - charge_baseline * window.duration_s
        ) / window.iterations

    return EnergyResult(
        status="ok",
        joules_per_inference=net_j / window.iterations,
        window_energy_j=window_j,
        baseline_w=baseline,
        window_s=window.duration_s,
        iterations=window.iterations,
        mean_power_w=window_j / window.duration_s,
        meter=meter,
        warning="; ".join(warnings),
        details=details,
    )


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """How far a device's clock is ahead of the meter's: ``device = meter + offset_s``.

    ``round_trip_s`` is the round trip of the exchange the offset came from; the offset is
    known to within half of it.
    """

    offset_s: float
    round_trip_s: float = 0.0

    @classmethod
    def from_round_trips(cls, trips: Iterable[tuple[float, float, float]]) -> ClockOffset:
        """Offset from ``(host_before, device_time, host_after)`` exchanges.

        The device read its clock somewhere between the two host readings; taking the
        midpoint is exact when both legs take as long, and the shortest round trip leaves
        the least room for them not to, so that exchange is used.
        """
        best: tuple[float, float, float] | None = None
        for before, device, after in trips:
            if after < before:
                raise ValueError(f"host_after {after} is before host_before {before}")
            if best is None or after - before < best[2] - best[0]:
                best = (before, device, after)
        if best is None:
            raise ValueError("no round trips to estimate a clock offset from")
        before, device, after = best
        return cls(offset_s=device - (before + after) / 2.0, round_trip_s=after - before)

    @classmethod
    def estimate(
        cls, sample_fn: Callable[[], tuple[float, float, float]], rounds: int = 8
    ) -> ClockOffset:
        """Call ``sample_fn`` ``rounds`` times (each one round trip) and keep the best."""
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        return cls.from_round_trips(sample_fn() for _ in range(rounds))

    @property
    def uncertainty_s(self) -> float:
        """Largest error of the offset: half the round trip it was measured over."""
        return self.round_trip_s / 2.0

    def to_meter_clock(self, t_device: float) -> float:
        """A device timestamp on the meter's clock."""
        return t_device - self.offset_s

    def window_to_meter_clock(self, window: EnergyWindow) -> EnergyWindow:
        """A window timed on the device, moved onto the meter's clock."""
        return EnergyWindow(
            self.to_meter_clock(window.start), self.to_meter_clock(window.end), window.iterations
        )
