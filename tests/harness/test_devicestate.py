"""The temperature gate and the flags that explain noisy results."""

from __future__ import annotations

from typing import Any

from fake_clock import FakeClock

from benchlab.harness.devicestate import capture_state, state_flags, wait_until_cool


class CoolingPhone:
    """A scripted device whose temperature falls by ``step`` °C per state read."""

    def __init__(self, start: float, step: float) -> None:
        self.temp = start
        self.step = step
        self.reads = 0

    def device_state(self) -> dict[str, Any]:
        self.reads += 1
        now = self.temp
        self.temp -= self.step
        return {"temperatures_c": {"cpu:thermal_zone0": now, "skin:thermal_zone1": now - 10}}


def test_the_gate_waits_until_the_device_is_below_it() -> None:
    phone, clock = CoolingPhone(50.0, 2.0), FakeClock()
    outcome = wait_until_cool(phone, 45.0, 60.0, poll_s=5.0, sleep=clock.sleep, clock=clock)
    assert outcome.cooled
    assert (outcome.start_c, outcome.end_c) == (50.0, 44.0)
    assert outcome.waited_s == 15.0  # 50, 48, 46 → three polls 5 s apart, then 44
    assert phone.reads == 4


def test_the_gate_gives_up_at_its_limit_and_says_so() -> None:
    phone, clock = CoolingPhone(80.0, 0.1), FakeClock()
    outcome = wait_until_cool(phone, 40.0, 10.0, poll_s=2.0, sleep=clock.sleep, clock=clock)
    assert not outcome.cooled
    assert outcome.waited_s == 10.0
    assert "after 10 s" in outcome.reason
    flags = state_flags(None, None, gates=[outcome])
    assert flags == [{"flag": "not_cooled", "detail": outcome.reason}]


def test_a_device_without_sensors_passes_the_gate_with_the_reason() -> None:
    class Blind:
        def device_state(self) -> dict[str, Any]:
            return {"temperatures_c": None}

    outcome = wait_until_cool(Blind(), 40.0, 10.0)
    assert outcome.cooled and "no temperatures" in outcome.reason


def test_a_failing_state_read_is_recorded_not_raised() -> None:
    class Broken:
        def device_state(self) -> dict[str, Any]:
            raise ConnectionError("device offline")

    assert capture_state(Broken()) == {"error": "ConnectionError: device offline"}
    assert capture_state(object()) is None


def _state(temp: float, cpus: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"temperatures_c": {"cpu:tz0": temp}, "cpus": cpus}


def test_flags_name_heat_throttling_and_drift() -> None:
    before = _state(38.0, {
        "cpu0": {"governor": "schedutil", "cur_khz": 300000, "max_khz": 1800000},
        "cpu4": {"governor": "performance", "cur_khz": 2400000, "max_khz": 2400000},
        "cpu5": {"governor": "userspace", "cur_khz": 1200000, "max_khz": 2400000},
    })
    after = _state(47.5, {
        "cpu0": {"governor": "schedutil", "cur_khz": 1800000, "max_khz": 1800000},
        "cpu4": {"governor": "performance", "cur_khz": 1600000, "max_khz": 1600000},
        "cpu5": {"governor": "userspace", "cur_khz": 1000000, "max_khz": 2400000},
    })
    flags = {f["flag"]: f["detail"] for f in state_flags(
        before, after, gate_c=45.0,
        latency_warnings=["Trend across iterations: rising by 12% over the run"],
    )}
    assert flags["temperature_above_gate"] == "rose from 38.0 to 47.5 °C (gate 45 °C)"
    # schedutil moving its frequency is normal; a cap or a fixed governor moving is not
    assert "cpu0" not in flags["frequency_changed"]
    assert "cpu4 max 2400 → 1600 MHz" in flags["frequency_changed"]
    assert "cpu5 1200 → 1000 MHz" in flags["frequency_changed"]
    assert flags["samples_drift"].startswith("Trend")


def test_a_steady_cool_device_gets_no_flags() -> None:
    state = _state(35.0, {"cpu0": {"governor": "performance", "cur_khz": 1, "max_khz": 1}})
    assert state_flags(state, state, gate_c=45.0, latency_warnings=["high variability"]) == []
