"""One job's energy session: runner windows from another device's clock land on the host's."""

from __future__ import annotations

import time
import pytest

from benchlab.energy import ScriptedMeter
from benchlab.energy.session import EnergySession, EnergySettings
from benchlab.targets.base import CommandResult, RunRequest

SHIFT_S = 1000.0  # the fake device's clock runs this far ahead of the host's
IDLE_W, LOAD_W, BUSY_W = 2.0, 4.0, 5.0


class FarDevice:
    """A device whose monotonic clock is ``SHIFT_S`` ahead of this host's; it offers ``meter``."""

    name = "phone"

    def __init__(self, meter: ScriptedMeter, python_ok: bool = True) -> None:
        self.meter, self.python_ok, self.requests = meter, python_ok, 0

    def power_meters(self) -> list[ScriptedMeter]:
        return [self.meter]

    def python_executable(self) -> str:
        return "python3"

    def run(self, request: RunRequest) -> CommandResult:
        self.requests += 1
        if not self.python_ok:
            return CommandResult(127, "", "python3: not found", 0.0)
        return CommandResult(0, f"{time.monotonic() + SHIFT_S!r}\n", "", 0.001)


def _busy_meter(start: float, end: float) -> ScriptedMeter:
    """Power on the host's clock, read every 10 ms: loading the model for the 0.5 s before
    ``start``, running it over [start, end], idle otherwise."""
    now = time.monotonic()

    def power(t: float) -> float:
        if start <= t <= end:
            return BUSY_W
        return LOAD_W if start - 0.5 <= t < start else IDLE_W
    return ScriptedMeter(power, times=[now - 1 + i * 0.01 for i in range(600)])


def _session(device: FarDevice) -> EnergySession:
    session = EnergySession.open(device, EnergySettings(meter="auto", idle_s=0.2))
    session.start()
    return session


def test_a_device_window_is_moved_onto_the_host_clock() -> None:
    begin = time.monotonic() + 1.0  # after the idle baseline the session takes
    device = FarDevice(_busy_meter(begin, begin + 2.0))
    session = _session(device)
    assert session.clock_offset is not None and device.requests == 5
    assert session.clock_offset.offset_s == pytest.approx(SHIFT_S, abs=0.01)
    # The runner timed 100 inferences over the busy span, on the device's clock; the command
    # around it, on the host's clock, also loaded the model first.
    window = {"clock": "monotonic", "start": begin + SHIFT_S, "end": begin + 2.0 + SHIFT_S,
              "iterations": 100}
    session.add_process((begin - 0.5, begin + 2.5), window, 100)
    energy, per_process = session.finish()
    assert energy["status"] == "ok", energy
    assert energy["window"] == "runner, clock-aligned"
    assert energy["clock_offset_s"] == pytest.approx(SHIFT_S, abs=0.01)
    assert 0 <= energy["clock_uncertainty_s"] < 0.05
    # (5 W - 2 W) over 2 s shared by 100 inferences; the command's span would add the load.
    assert per_process == [pytest.approx((BUSY_W - IDLE_W) * 2.0 / 100, rel=0.02)]


def test_without_a_clock_reading_the_whole_command_is_the_window() -> None:
    begin = time.monotonic() + 1.0  # after the idle baseline the session takes
    device = FarDevice(_busy_meter(begin, begin + 2.0), python_ok=False)
    session = _session(device)
    assert session.clock_offset is None
    window = {"clock": "monotonic", "start": begin + SHIFT_S, "end": begin + 2.0 + SHIFT_S,
              "iterations": 100}
    session.add_process((begin - 0.5, begin + 2.5), window, 100)
    energy, per_process = session.finish()
    assert energy["window"] == "command" and "clock_offset_s" not in energy
    with_load = ((LOAD_W - IDLE_W) * 0.5 + (BUSY_W - IDLE_W) * 2.0) / 100
    assert per_process == [pytest.approx(with_load, rel=0.02)]


def test_an_uncertain_offset_is_not_trusted_for_a_short_window() -> None:
    begin = time.monotonic() + 1.0  # after the idle baseline the session takes
    device = FarDevice(_busy_meter(begin, begin + 2.0))
    session = _session(device)
    assert session.clock_offset is not None
    short = {"clock": "monotonic", "start": begin + SHIFT_S,
             "end": begin + SHIFT_S + session.clock_offset.uncertainty_s, "iterations": 1}
    session.add_process((begin, begin + 2.0), short, 1)
    energy, _ = session.finish()
    assert energy["window"] == "command"

