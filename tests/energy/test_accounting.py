"""Energy-per-inference arithmetic against scripted meters whose true answer is known."""

from __future__ import annotations

import itertools

import pytest

from benchlab.energy import (
    ClockOffset,
    EnergyWindow,
    PowerReading,
    ScriptedMeter,
    WindowNotCoveredError,
    energy_between,
    energy_per_inference,
    idle_baseline_w,
    unavailable,
)

# Idle 2 W, 5 W while the model runs over [10, 13] s: 300 inferences cost (15 - 6) / 300 J.
IDLE_W, BUSY_W, START, END, ITERS = 2.0, 5.0, 10.0, 13.0, 300
TRUE_J = (BUSY_W * (END - START) - IDLE_W * (END - START)) / ITERS  # 0.03


def _power(t: float) -> float:
    return BUSY_W if START <= t <= END else IDLE_W


def _counter(t: float) -> float:
    """Exact cumulative energy of :func:`_power` from t = 0."""
    return IDLE_W * t + (BUSY_W - IDLE_W) * (min(max(t, START), END) - START)


# Binary-exact half-second grid, so the step edges fall on samples.
GRID = [i * 0.5 for i in range(41)]


def test_power_readings_give_the_known_answer() -> None:
    meter = ScriptedMeter(_power, times=GRID)
    meter.start()
    readings = meter.stop()
    result = energy_per_inference(
        readings, EnergyWindow(START, END, ITERS), baseline_window=(0.0, 8.0), meter=meter.name
    )
    assert result.ok and result.status == "ok"
    assert result.joules_per_inference == pytest.approx(TRUE_J)
    assert TRUE_J == pytest.approx(0.03)
    assert result.window_energy_j == pytest.approx(15.0)
    assert result.baseline_w == pytest.approx(2.0)
    assert result.window_s == pytest.approx(3.0)
    assert result.iterations == ITERS
    assert result.meter == "scripted"
    assert result.warning == ""
    assert result.details["net_energy_j"] == pytest.approx(9.0)


def test_cumulative_counter_gives_the_same_answer() -> None:
    # The counter starts at an arbitrary origin; only differences matter.
    readings = [PowerReading(t=t, energy_j=1234.5 + _counter(t)) for t in GRID]
    meter = ScriptedMeter(readings)
    assert meter.kind == "cumulative"
    meter.start()
    result = energy_per_inference(
        meter.stop(), EnergyWindow(START, END, ITERS), baseline_window=(0.0, 8.0)
    )
    assert result.joules_per_inference == pytest.approx(TRUE_J)
    assert result.window_energy_j == pytest.approx(15.0)


def test_given_baseline_watts_replace_the_idle_window() -> None:
    readings = ScriptedMeter(_power, times=GRID)._readings
    result = energy_per_inference(readings, EnergyWindow(START, END, ITERS), baseline_w=2.0)
    assert result.joules_per_inference == pytest.approx(TRUE_J)
    assert result.details["baseline_source"] == "given"
    with pytest.raises(ValueError, match="not both"):
        energy_per_inference(
            readings, EnergyWindow(START, END, ITERS), baseline_window=(0, 8), baseline_w=2.0
        )


def test_window_edges_between_readings_are_interpolated() -> None:
    # Edges at 10.25 and 12.75 fall mid-interval on the 0.5 s grid, inside the 5 W plateau.
    window = EnergyWindow(10.25, 12.75, ITERS)
    expected = (BUSY_W * 2.5 - IDLE_W * 2.5) / ITERS
    power = [PowerReading(t=t, power_w=_power(t)) for t in GRID]
    counter = [PowerReading(t=t, energy_j=_counter(t)) for t in GRID]
    for readings in (power, counter):
        assert energy_between(readings, 10.25, 12.75) == pytest.approx(12.5)
        result = energy_per_inference(readings, window, baseline_window=(0.25, 7.75))
        assert result.joules_per_inference == pytest.approx(expected)


def test_uneven_sampling_intervals() -> None:
    # p(t) = 1 + t W is linear, so trapezoids are exact on any grid: E = (b - a) + (b² - a²)/2.
    times = [0.0, 0.07, 0.5, 0.51, 1.3, 2.0, 2.05, 3.9, 4.0, 6.2]
    power = [PowerReading(t=t, power_w=1.0 + t) for t in times]
    counter = [PowerReading(t=t, energy_j=t + t * t / 2.0) for t in times]
    def exact(a: float, b: float) -> float:
        return (b - a) + (b * b - a * a) / 2.0

    # Power is linear, so edges may fall anywhere; the counter is quadratic, so its linear
    # interpolation is exact only at sample times.
    assert energy_between(power, 0.3, 3.95) == pytest.approx(exact(0.3, 3.95))
    assert energy_between(counter, 0.5, 3.9) == pytest.approx(exact(0.5, 3.9))
    a, b = 0.3, 3.95
    # Readings handed over out of order are sorted first.
    assert energy_between(list(reversed(power)), a, b) == pytest.approx(exact(a, b))
    assert idle_baseline_w(power, 0.0, 2.0) == pytest.approx(2.0)


def test_window_not_covered_is_unavailable_not_a_number() -> None:
    readings = [PowerReading(t=t, power_w=3.0) for t in (1.0, 2.0, 3.0)]
    with pytest.raises(WindowNotCoveredError):
        energy_between(readings, 0.5, 2.0)
    with pytest.raises(WindowNotCoveredError):
        energy_between(readings, 2.0, 3.5)
    late = energy_per_inference(readings, EnergyWindow(2.0, 3.5, 10), baseline_w=1.0, meter="m")
    assert late.status == "unavailable"
    assert late.joules_per_inference is None and late.window_energy_j is None
    assert "do not cover the measured window" in late.reason
    assert str(late).startswith("unavailable: ")
    idle = energy_per_inference(readings, EnergyWindow(1.5, 2.5, 10), baseline_window=(0, 1))
    assert not idle.ok and "idle window" in idle.reason
    empty = energy_per_inference([], EnergyWindow(1.5, 2.5, 10))
    assert not empty.ok and "no readings" in empty.reason


def test_negative_net_energy_is_kept_with_a_warning() -> None:
    readings = [PowerReading(t=t, power_w=2.0) for t in GRID]
    result = energy_per_inference(readings, EnergyWindow(START, END, ITERS), baseline_w=2.5)
    assert result.ok
    assert result.joules_per_inference == pytest.approx((6.0 - 7.5) / ITERS)
    assert "negative" in result.warning


def test_missing_baseline_and_sparse_readings_warn() -> None:
    readings = [PowerReading(t=t, power_w=4.0) for t in (0.0, 10.0)]
    result = energy_per_inference(readings, EnergyWindow(2.0, 4.0, 4))
    assert result.joules_per_inference == pytest.approx(2.0)
    assert "no idle baseline" in result.warning
    assert "0 reading(s) inside the window" in result.warning


def test_mixed_reading_kinds_and_bad_windows_are_errors() -> None:
    mixed = [PowerReading(t=0.0, power_w=1.0), PowerReading(t=1.0, energy_j=1.0)]
    with pytest.raises(ValueError, match="mix"):
        energy_between(mixed, 0.0, 1.0)
    with pytest.raises(ValueError):
        EnergyWindow(2.0, 2.0, 1)
    with pytest.raises(ValueError):
        EnergyWindow(1.0, 2.0, 0)
    with pytest.raises(ValueError):
        PowerReading(t=0.0)
    with pytest.raises(ValueError):
        PowerReading(t=0.0, energy_j=1.0, power_w=1.0)


def test_unavailable_result() -> None:
    result = unavailable("rapl", "/sys/class/powercap not present")
    assert result.status == "unavailable" and not result.ok
    assert result.joules_per_inference is None
    assert result.to_dict()["reason"] == "/sys/class/powercap not present"
    assert str(result) == "unavailable: /sys/class/powercap not present"


def test_clock_offset_uses_the_shortest_round_trip() -> None:
    # The device clock is 1000 s ahead of the host. Slow exchanges have asymmetric legs (the
    # device reads its clock early), which bias the midpoint; the fastest one is symmetric.
    true_offset = 1000.0
    trips = [
        (0.0, true_offset + 0.01, 0.2),  # rtt 0.2, midpoint 0.1: off by 0.09
        (1.0, true_offset + 1.03, 1.06),  # rtt 0.06, symmetric: exact
        (2.0, true_offset + 2.01, 2.1),  # rtt 0.1, off by 0.04
    ]
    calls = itertools.cycle(trips)
    offset = ClockOffset.estimate(lambda: next(calls), rounds=3)
    assert offset.offset_s == pytest.approx(true_offset)
    assert offset.round_trip_s == pytest.approx(0.06)
    assert offset.uncertainty_s == pytest.approx(0.03)
    assert ClockOffset.from_round_trips(trips) == offset
    with pytest.raises(ValueError):
        ClockOffset.from_round_trips([])
    with pytest.raises(ValueError):
        ClockOffset.from_round_trips([(1.0, 5.0, 0.5)])


def test_window_timed_on_the_device_maps_onto_meter_readings() -> None:
    # The phone timed its inferences on its own clock, 1000 s ahead of the host's meter.
    offset = ClockOffset.from_round_trips([(4.0, 1004.5, 5.0)])
    device_window = EnergyWindow(START + 1000.0, END + 1000.0, ITERS)
    host_window = offset.window_to_meter_clock(device_window)
    assert (host_window.start, host_window.end) == pytest.approx((START, END))
    assert offset.to_meter_clock(1010.0) == pytest.approx(10.0)
    readings = ScriptedMeter(_power, times=GRID)._readings
    right = energy_per_inference(readings, host_window, baseline_window=(0.0, 8.0))
    assert right.joules_per_inference == pytest.approx(TRUE_J)
    # Left on the device clock the window lies outside every reading: unavailable, not 0.
    wrong = energy_per_inference(readings, device_window, baseline_window=(0.0, 8.0))
    assert not wrong.ok


def test_charge_counter_estimate_is_reported_next_to_the_power_integration() -> None:
    # 4 V, 0.5 A idle then 1.25 A busy: 2 W idle, 5 W busy; the gauge's charge falls by I·dt.
    def reading(t: float) -> PowerReading:
        amps = _power(t) / 4.0
        delivered = _counter(t) / 4.0
        return PowerReading(t=t, power_w=amps * 4.0, voltage_v=4.0, charge_c=10000.0 - delivered)

    readings = [reading(t) for t in GRID]
    result = energy_per_inference(readings, EnergyWindow(START, END, ITERS), baseline_window=(0, 8))
    assert result.joules_per_inference == pytest.approx(TRUE_J)
    assert result.details["charge_counter_window_energy_j"] == pytest.approx(15.0)
    assert result.details["charge_counter_joules_per_inference"] == pytest.approx(TRUE_J)
