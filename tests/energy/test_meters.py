"""Meters: the polling thread, RAPL over a fake sysfs tree, NVML and Monsoon through stand-ins,
the battery gauge over a dict, and what the real meters say on this machine."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from benchlab.energy import (
    BatteryMeter,
    MeterError,
    MonsoonMeter,
    NvmlMeter,
    PolledMeter,
    PowerMeter,
    PowerReading,
    RaplMeter,
    ScriptedMeter,
)

# --- PolledMeter ----------------------------------------------------------------------------


class _Counting(PolledMeter):
    """A polled meter whose counter goes up by 1 J per read; every ``fail_every``-th read fails."""

    name = "counting"

    def __init__(self, interval_s: float, fail_every: int = 0) -> None:
        super().__init__(interval_s)
        self.reads = 0
        self.fail_every = fail_every
        self.threads: set[str] = set()

    def read_once(self) -> PowerReading:
        self.reads += 1
        self.threads.add(threading.current_thread().name)
        if self.fail_every and self.reads % self.fail_every == 0:
            raise OSError("flaky read")
        return PowerReading(t=time.monotonic(), energy_j=float(self.reads))


def test_polled_meter_collects_readings_in_a_thread_and_stops() -> None:
    meter = _Counting(interval_s=0.005)
    meter.start()
    time.sleep(0.15)
    readings = meter.stop()
    assert len(readings) >= 5
    assert all(a.t < b.t for a, b in zip(readings, readings[1:]))
    assert "benchlab-meter-counting" in meter.threads
    reads_at_stop = meter.reads
    time.sleep(0.05)
    assert meter.reads == reads_at_stop, "the thread kept reading after stop()"
    assert not any(t.name == "benchlab-meter-counting" for t in threading.enumerate())


def test_polled_meter_stops_promptly_and_brackets_the_window() -> None:
    meter = _Counting(interval_s=30.0)
    before = time.monotonic()
    meter.start()
    started = time.monotonic()
    meter.stop()
    assert time.monotonic() - started < 1.0
    # One reading when start() returns and one when stop() is called, however long the interval.
    meter.start()
    window_start = time.monotonic()
    window_end = time.monotonic()
    readings = meter.stop()
    assert len(readings) == 2
    assert before <= readings[0].t <= window_start and readings[1].t >= window_end


def test_polled_meter_counts_failed_reads_and_keeps_going() -> None:
    meter = _Counting(interval_s=0.002, fail_every=2)
    meter.start()
    time.sleep(0.05)
    readings = meter.stop()
    assert meter.failed_reads >= 1 and isinstance(meter.last_error, OSError)
    assert len(readings) >= 2


def test_polled_meter_start_stop_misuse() -> None:
    meter = _Counting(interval_s=1.0)
    with pytest.raises(RuntimeError):
        meter.stop()
    meter.start()
    with pytest.raises(RuntimeError):
        meter.start()
    meter.stop()
    with pytest.raises(ValueError):
        _Counting(interval_s=0.0)


def test_every_meter_satisfies_the_protocol(tmp_path: Path) -> None:
    meters = [
        RaplMeter(root=tmp_path),
        NvmlMeter(),
        MonsoonMeter(),
        BatteryMeter(lambda path: None),
        ScriptedMeter([PowerReading(t=0.0, power_w=1.0)]),
    ]
    for meter in meters:
        assert isinstance(meter, PowerMeter), type(meter).__name__
        assert meter.kind in ("cumulative", "power")


# --- RAPL -----------------------------------------------------------------------------------

MAX_UJ = 262_143_328_850


def _zone(path: Path, name: str, energy_uj: int, max_uj: int = MAX_UJ) -> Path:
    path.mkdir(parents=True)
    (path / "name").write_text(name + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return path


def _set(zone: Path, energy_uj: int) -> None:
    (zone / "energy_uj").write_text(f"{energy_uj}\n")


@pytest.fixture
def rapl_tree(tmp_path: Path) -> dict[str, Path]:
    """Two packages, their core subdomains (nested and top-level, as sysfs shows them), psys."""
    root = tmp_path / "powercap"
    zones = {
        "pkg0": _zone(root / "intel-rapl:0", "package-0", 1_000_000, max_uj=10_000_000),
        "core0": _zone(root / "intel-rapl:0" / "intel-rapl:0:0", "core", 500_000),
        "core0_top": _zone(root / "intel-rapl:0:0", "core", 500_000),
        "pkg1": _zone(root / "intel-rapl:1", "package-1", 7_000_000),
        "psys": _zone(root / "intel-rapl:2", "psys", 40_000_000),
        "mmio": _zone(root / "intel-rapl-mmio:0", "package-0", 1_000_000),
    }
    zones["root"] = root
    return zones


def test_rapl_sums_packages_only_and_unwraps(rapl_tree: dict[str, Path]) -> None:
    meter = RaplMeter(root=rapl_tree["root"], interval_s=60.0)
    available = meter.availability()
    assert available.ok, available.reason
    assert available.details["zones"] == {"intel-rapl:0": "package-0", "intel-rapl:1": "package-1"}

    meter.start()
    # Package 0 wraps at 10 J: 1.0 J -> 9.5 J (+8.5 J) would be one step; here it goes past the
    # end to 0.3 J, i.e. +9.3 J. Package 1 adds 2 J. Subdomains, psys and mmio move a lot and
    # must not count.
    _set(rapl_tree["pkg0"], 300_000)
    _set(rapl_tree["pkg1"], 9_000_000)
    for other in ("core0", "core0_top", "psys", "mmio"):
        _set(rapl_tree[other], 99_000_000)
    readings = meter.stop()
    assert [r.energy_j for r in readings] == pytest.approx([0.0, 9.3 + 2.0])
    assert meter.kind == "cumulative"


def test_rapl_accumulates_over_several_reads_with_a_wrap(rapl_tree: dict[str, Path]) -> None:
    meter = RaplMeter(root=rapl_tree["root"], domains=["intel-rapl:0"])
    meter.reset()
    totals = []
    for value in (1_000_000, 6_000_000, 9_900_000, 400_000, 2_400_000):
        _set(rapl_tree["pkg0"], value)
        totals.append(meter.read_once().energy_j)
    # +5 J, +3.9 J, wrap +0.5 J, +2 J.
    assert totals == pytest.approx([0.0, 5.0, 8.9, 9.4, 11.4])


def test_rapl_explicit_domains_can_pick_a_subdomain(rapl_tree: dict[str, Path]) -> None:
    meter = RaplMeter(root=rapl_tree["root"], domains=["intel-rapl:0:0"])
    assert meter.availability().details["zones"] == {"intel-rapl:0:0": "core"}


def test_rapl_missing_tree_is_unavailable(tmp_path: Path) -> None:
    available = RaplMeter(root=tmp_path / "nope").availability()
    assert not available.ok
    assert available.reason == f"{tmp_path / 'nope'} not present (no RAPL driver or not permitted)"
    assert not RaplMeter(root=tmp_path).availability().ok  # present but no zones


def test_rapl_unreadable_counter_is_unavailable(rapl_tree: dict[str, Path]) -> None:
    # A directory where the counter should be reads as an OSError for any user, root included.
    counter = rapl_tree["pkg1"] / "energy_uj"
    counter.unlink()
    counter.mkdir()
    available = RaplMeter(root=rapl_tree["root"]).availability()
    assert not available.ok and "cannot read" in available.reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_rapl_counter_without_permission_is_unavailable(rapl_tree: dict[str, Path]) -> None:
    (rapl_tree["pkg0"] / "energy_uj").chmod(0)
    available = RaplMeter(root=rapl_tree["root"]).availability()
    assert not available.ok and "not permitted" in available.reason


def test_real_rapl_on_this_machine_reports_why_when_unavailable() -> None:
    available = RaplMeter().availability()
    if not Path("/sys/class/powercap").exists():
        assert not available.ok
        assert available.reason == (
            "/sys/class/powercap not present (no RAPL driver or not permitted)"
        )
    else:
        assert available.ok or available.reason


# --- NVML -----------------------------------------------------------------------------------


class _FakeNvml:
    """The few pynvml functions NvmlMeter calls, over a scripted GPU."""

    class NVMLError(Exception):
        pass

    def __init__(self, energy_supported: bool = True, driver: bool = True) -> None:
        self.energy_supported = energy_supported
        self.driver = driver
        self.energy_mj = 5_000_000
        self.power_mw = 250_000
        self.inits = 0

    def nvmlInit(self) -> None:  # noqa: N802 - pynvml's names
        if not self.driver:
            raise self.NVMLError("Driver Not Loaded")
        self.inits += 1

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.inits -= 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:  # noqa: N802
        return f"gpu{index}"

    def nvmlDeviceGetName(self, handle: str) -> bytes:  # noqa: N802
        return b"Fake GPU"

    def nvmlSystemGetDriverVersion(self) -> str:  # noqa: N802
        return "999.1"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:  # noqa: N802
        if not self.energy_supported:
            raise self.NVMLError("Not Supported")
        self.energy_mj += 1500
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:  # noqa: N802
        return self.power_mw


def test_nvml_uses_the_energy_counter() -> None:
    nvml = _FakeNvml()
    meter = NvmlMeter(index=1, interval_s=60.0, library=nvml)
    available = meter.availability()
    assert available.ok and available.version == "999.1"
    assert available.details == {"gpu": "Fake GPU", "kind": "cumulative"}
    meter.start()
    readings = meter.stop()
    assert meter.kind == "cumulative" and meter.name == "nvml:1"
    assert [r.energy_j for r in readings] == pytest.approx([5004.5, 5006.0])
    assert nvml.inits == 0, "NVML left initialised"


def test_nvml_falls_back_to_power_readings() -> None:
    meter = NvmlMeter(interval_s=60.0, library=_FakeNvml(energy_supported=False))
    assert meter.availability().details["kind"] == "power"
    meter.start()
    readings = meter.stop()
    assert meter.kind == "power"
    assert [r.power_w for r in readings] == pytest.approx([250.0, 250.0])


def test_nvml_without_a_driver_is_unavailable() -> None:
    available = NvmlMeter(library=_FakeNvml(driver=False)).availability()
    assert not available.ok and "Driver Not Loaded" in available.reason


def test_nvml_without_pynvml_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    available = NvmlMeter().availability()
    assert not available.ok and "nvidia-ml-py" in available.reason


def test_real_nvml_on_this_machine_reports_why_when_unavailable() -> None:
    available = NvmlMeter().availability()
    assert available.ok or available.reason


# --- Monsoon --------------------------------------------------------------------------------


class _FakeEngine:
    """Shaped like Monsoon's SampleEngine: startSampling blocks until the stop trigger fires."""

    def __init__(self, samples: list[list[float]], fail: bool = False) -> None:
        self.samples = samples
        self.fail = fail
        self.trigger: tuple | None = None
        self.calls: list[tuple[int, int]] = []

    def setStopTrigger(self, triggerstyle, triggerlevel) -> None:  # noqa: N802
        self.trigger = (triggerstyle, triggerlevel)

    def startSampling(self, samples: int, granularity: int) -> None:  # noqa: N802
        self.calls.append((samples, granularity))
        if self.fail:
            raise OSError("USB disconnected")
        began = time.monotonic()
        while True:
            style, level = self.trigger
            if style(time.monotonic() - began, level):
                return
            time.sleep(0.001)

    def getSamples(self) -> list[list[float]]:  # noqa: N802
        return self.samples


def test_monsoon_converts_samples_to_host_clock_power() -> None:
    # Newer Monsoon layout: [time (s), main mA, usb mA, aux mA, main V, usb V].
    samples = [[0.0, 0.5, 1.0], [100.0, 200.0, 300.0], [], [], [4.0, 4.0, 4.2], []]
    engine = _FakeEngine(samples)
    meter = MonsoonMeter(voltage=4.0, engine_factory=lambda: engine)
    assert meter.availability().ok
    before = time.monotonic()
    meter.start()
    after_start = time.monotonic()
    time.sleep(0.02)  # the default stop trigger (far in the future) must not end sampling
    assert engine.calls and meter._thread is not None and meter._thread.is_alive()
    readings = meter.stop()
    assert [r.power_w for r in readings] == pytest.approx([0.4, 0.8, 1.26])
    assert before <= readings[0].t <= after_start
    assert [r.t - readings[0].t for r in readings] == pytest.approx([0.0, 0.5, 1.0])
    assert meter.kind == "power"


def test_monsoon_old_layouts_and_set_voltage() -> None:
    # Older releases return only enabled channels; without a voltage channel, use Vout.
    for samples, watts in (
        ([[0.0, 1.0], [1000.0, 500.0], [3.8, 3.8]], [3.8, 1.9]),
        ([[0.0, 1.0], [1000.0, 500.0]], [4.2, 2.1]),
    ):
        meter = MonsoonMeter(engine_factory=lambda s=samples: _FakeEngine(s))
        meter.start()
        assert [r.power_w for r in meter.stop()] == pytest.approx(watts)


def test_monsoon_sampling_failure_is_a_meter_error() -> None:
    meter = MonsoonMeter(engine_factory=lambda: _FakeEngine([[], []], fail=True))
    meter.start()
    with pytest.raises(MeterError, match="USB disconnected"):
        meter.stop()


def test_monsoon_without_the_package_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "Monsoon", None)
    available = MonsoonMeter().availability()
    assert not available.ok and "pip install monsoon" in available.reason


# --- Android battery ------------------------------------------------------------------------

BATTERY = "/sys/class/power_supply/battery"


def _gauge(status: str, current_ua: int | None, voltage_uv: int = 4_000_000) -> dict[str, str]:
    files = {f"{BATTERY}/status": status + "\n", f"{BATTERY}/voltage_now": f"{voltage_uv}\n"}
    if current_ua is not None:
        files[f"{BATTERY}/current_now"] = f"{current_ua}\n"
    files[f"{BATTERY}/charge_counter"] = "3000000\n"
    return files


@pytest.mark.parametrize("status", ["Charging", "Full", "Not charging"])
def test_battery_on_a_charger_is_unavailable(status: str) -> None:
    meter = BatteryMeter(_gauge(status, -500_000).get)
    available = meter.availability()
    assert not available.ok
    assert available.reason.startswith("the phone is charging over USB; battery counters measure")
    assert "adb over Wi-Fi" in available.reason and "Monsoon" in available.reason
    with pytest.raises(MeterError, match="charging over USB"):
        meter.start()


def test_battery_unreadable_files_are_unavailable() -> None:
    assert "status" in BatteryMeter(lambda path: None).availability().reason
    no_current = BatteryMeter(_gauge("Discharging", None).get).availability()
    assert not no_current.ok and "current_now" in no_current.reason

    def denied(path: str) -> str:
        raise PermissionError(path)

    assert not BatteryMeter(denied).availability().ok


@pytest.mark.parametrize("current_ua", [-500_000, 500_000])
def test_battery_discharging_gives_abs_current_times_voltage(current_ua: int) -> None:
    # Modern Android reports discharge as negative current, some devices as positive.
    meter = BatteryMeter(_gauge("Discharging", current_ua).get, interval_s=60.0)
    available = meter.availability()
    assert available.ok and available.details["charge_counter"] is True
    meter.start()
    readings = meter.stop()
    assert len(readings) == 2
    for reading in readings:
        assert reading.power_w == pytest.approx(0.5 * 4.0)
        assert reading.voltage_v == pytest.approx(4.0)
        assert reading.charge_c == pytest.approx(3000.0 * 3.6)  # 3000 mAh in coulombs


def test_battery_current_against_the_discharge_sign_is_negative_power() -> None:
    files = _gauge("Discharging", -500_000)
    meter = BatteryMeter(files.get)
    meter.reset()
    files[f"{BATTERY}/current_now"] = "100000"  # flowing into the battery
    assert meter.read_once().power_w == pytest.approx(-0.4)


def test_battery_charger_plugged_in_during_the_measurement(tmp_path: Path) -> None:
    files = _gauge("Discharging", -500_000)
    meter = BatteryMeter(files.get, interval_s=60.0)
    meter.start()
    files[f"{BATTERY}/status"] = "Charging"
    with pytest.raises(MeterError, match="during the measurement"):
        meter.stop()


# --- Scripted -------------------------------------------------------------------------------


def test_scripted_meter_is_deterministic_and_checks_kinds() -> None:
    meter = ScriptedMeter(lambda t: 2.0 * t, times=[2.0, 0.0, 1.0], kind="cumulative")
    assert meter.availability().details == {"scripted": True}
    meter.start()
    assert [(r.t, r.energy_j) for r in meter.stop()] == [(0.0, 0.0), (1.0, 1.0), (2.0, 4.0)]
    with pytest.raises(RuntimeError):
        meter.stop()
    with pytest.raises(ValueError):
        ScriptedMeter([PowerReading(t=0.0, power_w=1.0)], kind="cumulative")
    with pytest.raises(ValueError):
        ScriptedMeter(lambda t: 1.0)
