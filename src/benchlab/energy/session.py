"""Energy for one job: pick a meter for the target, take an idle baseline, attribute windows.

:func:`choose_meter` asks the target for its meters (``power_meters()``: RAPL and NVML on the
host, the battery counters on an adb phone) or builds the one named (``monsoon`` works with any
target, being attached to this host). :class:`EnergySession` starts it, idles for a baseline,
records every process's measured window and turns the readings into energy per inference,
per process. With no usable meter the job's ``details.energy`` says ``unavailable`` and why.

Window alignment: benchlab's runner reports its timed loop on its system's monotonic clock
(``details.measure_window``). On this host that is the meters' clock (``window: "runner"``).
On another device (ssh, adb) the session first estimates how far the device's monotonic clock
is from this host's, from a few round trips (:func:`device_clock_offset`); the runner's window
is moved onto the host's clock when the offset is known to within 5% of the window
(``window: "runner, clock-aligned"``, with ``clock_offset_s`` and ``clock_uncertainty_s``).
Otherwise — a command that reports no window, a device without Python, a round trip too long —
the window is the whole command as seen from the host, load and warm-up included, and the
result says so (``window: "command"``) rather than pretending to a precision it lacks.

Collection time (:attr:`EnergySettings.collection_time`, FAI-PEP's ``collection_time``): while a
meter measures, :meth:`EnergySession.lengthen` raises each process's ``min_time`` to it, and
:meth:`EnergySession.wants_more` keeps the job starting fresh processes until the measured
windows add up to it (for commands whose iteration count is fixed). The account then gives
``collection_time_s`` and ``measured_s``, the windows' total.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from benchlab.energy.accounting import (
    ClockOffset,
    EnergyResult,
    EnergyWindow,
    energy_per_inference,
    unavailable,
)
from benchlab.energy.meters import MeterError, PowerMeter, PowerReading
from benchlab.energy.monsoon import monitor_for
from benchlab.errors import BenchlabError
from benchlab.schema.settings import EnergySettings, TestSettings
from benchlab.schema.commands import RunRequest

__all__ = ["EnergySession", "EnergySettings", "choose_meter", "device_clock_offset"]

_AUTO = "auto"
#: A device's window is moved onto the host clock only when the offset's uncertainty is at most
#: this share of the window; beyond it the edges could miss load or warm-up by that much.
MAX_ALIGNMENT_ERROR = 0.05
_READ_MONOTONIC = "import time; print(repr(time.monotonic()))"
_T = TypeVar("_T", bound=TestSettings)


def _named_meter(name: str, target: Any, voltage: float | None = None) -> PowerMeter | None:
    for meter in _target_meters(target):
        if meter.name == name or meter.name.endswith(f"-{name}"):
            return meter
    if name == "monsoon":
        from benchlab.energy.monsoon import MonsoonMeter

        return MonsoonMeter() if voltage is None else MonsoonMeter(voltage=voltage)
    if name == "rapl":
        from benchlab.energy.rapl import RaplMeter

        return RaplMeter()
    if name == "nvml":
        from benchlab.energy.nvml import NvmlMeter

        return NvmlMeter()
    return None


def _target_meters(target: Any) -> list[PowerMeter]:
    provider = getattr(target, "power_meters", None)
    return list(provider()) if provider is not None else []


def choose_meter(
    target: Any, which: str = _AUTO, *, voltage: float | None = None
) -> tuple[PowerMeter | None, str]:
    """The meter to use and ``""``, or ``None`` and why no meter can measure this target.

    ``voltage`` is the output voltage a Monsoon built here is set to (its default otherwise).
    """
    if which != _AUTO:
        meter = _named_meter(which, target, voltage)
        if meter is None:
            return None, f"no power meter called {which!r} (auto, rapl, nvml, battery, monsoon)"
        available = meter.availability()
        return (meter, "") if available.ok else (None, f"{meter.name}: {available.reason}")
    reasons = []
    for meter in _target_meters(target):
        available = meter.availability()
        if available.ok:
            return meter, ""
        reasons.append(f"{meter.name}: {available.reason}")
    if not reasons:
        return None, f"the {getattr(target, 'name', '?')} target has no power meter"
    return None, "; ".join(reasons)


def device_clock_offset(target: Any, rounds: int = 5) -> ClockOffset | None:
    """How far ``target``'s monotonic clock is from this host's, or ``None`` if it cannot say.

    Each round runs a one-line Python on the target that prints ``time.monotonic()`` (the
    runner's clock), timed on this host; :meth:`ClockOffset.from_round_trips` keeps the
    shortest round trip, whose half bounds the error.
    """
    request = RunRequest(argv=[target.python_executable(), "-c", _READ_MONOTONIC], timeout=30.0)

    def round_trip() -> tuple[float, float, float]:
        before = time.monotonic()
        result = target.run(request)
        after = time.monotonic()
        if not result.ok:
            raise ValueError(f"reading the device clock failed: {result.stderr.strip()[-200:]}")
        return before, float(result.stdout.strip().splitlines()[-1]), after

    try:
        return ClockOffset.estimate(round_trip, rounds)
    except (ValueError, IndexError, OSError, BenchlabError):
        return None


@dataclass
class EnergySession:
    """One job's energy measurement (see the module docstring).

    ``same_clock``: the runner's clock is the meters' (a job on this host). Otherwise
    ``clock_offset`` (when known) moves the runner's windows onto the host's clock.
    ``collection_time``: the least the job's measured windows add up to (s; 0: none).
    """

    meter: PowerMeter | None
    reason: str = ""
    idle_s: float = 2.0
    same_clock: bool = True
    clock_offset: ClockOffset | None = None
    collection_time: float = 0.0
    _baseline: tuple[float, float] | None = None
    _windows: list[tuple[EnergyWindow, str]] = field(default_factory=list)
    _running: bool = False
    _stalled: bool = False

    @classmethod
    def open(cls, target: Any, settings: EnergySettings) -> EnergySession:
        """Choose the meter for ``target``; an unusable one makes an ``unavailable`` session
        (but a monsoon map's monitor that cannot be used is a :class:`UsageError`).

        Off this host, with a usable meter, the device's clock offset is estimated here.
        """
        # A monsoon map picks the device's own monitor (FAI-PEP's --monsoon_map).
        mapped = monitor_for(target, settings) if settings.meter == "monsoon" else None
        meter, reason = (mapped, "") if mapped is not None else choose_meter(
            target, settings.meter, voltage=settings.voltage)
        same_clock = getattr(target, "name", "") == "host"
        offset = None if same_clock or meter is None else device_clock_offset(target)
        return cls(meter, reason, settings.idle_s, same_clock, offset,
                   collection_time=settings.collection_time)

    def lengthen(self, test: _T) -> _T:
        """``test`` with each process measuring at least the collection time (its ``min_time``,
        and ``max_time`` no shorter), when a meter measures; else ``test`` as it is."""
        floor = self.collection_time
        if self.meter is None or floor <= test.min_time:
            return test
        longest = test.max_time if test.max_time is None or test.max_time >= floor else floor
        return replace(test, min_time=floor, max_time=longest)

    @property
    def measured_s(self) -> float:
        """The measured windows recorded so far, added up (s)."""
        return sum(window.duration_s for window, _ in self._windows)

    def wants_more(self) -> bool:
        """Whether the job should run another process to reach the collection time: the meter
        runs, the windows add up to less, and every process so far gave a window."""
        return (self._running and not self._stalled
                and self.measured_s < self.collection_time)

    def start(self) -> None:
        """Start the meter and idle for the baseline (nothing of the job's runs yet)."""
        if self.meter is None:
            return
        try:
            self.meter.start()
        except MeterError as exc:
            self.meter, self.reason = None, str(exc)
            return
        self._running = True
        begin = time.monotonic()
        time.sleep(self.idle_s)
        self._baseline = (begin, time.monotonic())

    def add_process(
        self, command_span: tuple[float, float], runner_window: Mapping[str, Any] | None,
        iterations: int,
    ) -> None:
        """Record one process: its command span on the host clock and the runner's window."""
        if not self._running:
            return
        if iterations <= 0:
            self._stalled = True  # more processes like it would not add to the windows
            return
        if runner_window and runner_window.get("clock") == "monotonic":
            window = EnergyWindow(float(runner_window["start"]), float(runner_window["end"]),
                                  int(runner_window.get("iterations") or iterations))
            if self.same_clock:
                self._windows.append((window, "runner"))
                return
            offset = self.clock_offset
            if offset is not None and offset.uncertainty_s <= (
                    MAX_ALIGNMENT_ERROR * window.duration_s):
                self._windows.append((offset.window_to_meter_clock(window),
                                      "runner, clock-aligned"))
                return
        self._windows.append((EnergyWindow(*command_span, iterations), "command"))

    def finish(self) -> tuple[dict[str, Any], list[float]]:
        """``details.energy`` and the joules per inference of each process measured."""
        if self.meter is None:
            return unavailable("none", self.reason).to_dict(), []
        readings: list[PowerReading] = []
        if self._running:
            try:
                readings = self.meter.stop()
            except MeterError as exc:
                return unavailable(self.meter.name, str(exc)).to_dict(), []
        if not self._windows:
            return unavailable(self.meter.name, "no process reported a measured window"
                               ).to_dict(), []
        results: list[EnergyResult] = []
        for window, kind in self._windows:
            result = energy_per_inference(readings, window, baseline_window=self._baseline,
                                          meter=self.meter.name)
            results.append(result)
            if not result.ok:
                return result.to_dict(), []
        per_process = [r.joules_per_inference for r in results if r.joules_per_inference is not None]
        summary = results[-1].to_dict()
        summary["joules_per_inference"] = sum(per_process) / len(per_process)
        summary["per_process_joules_per_inference"] = per_process
        # Mean power over every window together: their energy over their length.
        measured_s = sum(r.window_s or 0.0 for r in results)
        summary["mean_power_w"] = sum(r.window_energy_j or 0.0 for r in results) / measured_s
        summary["net_power_w"] = summary["mean_power_w"] - (results[-1].baseline_w or 0.0)
        summary["per_process_mean_power_w"] = [r.mean_power_w for r in results]
        summary["per_process_window_s"] = [r.window_s for r in results]
        summary["measured_s"] = measured_s
        if self.collection_time:
            summary["collection_time_s"] = self.collection_time
        voltage = getattr(self.meter, "voltage", None)
        if isinstance(voltage, int | float):
            summary["meter_voltage_v"] = float(voltage)
        summary["window"] = self._windows[-1][1]
        if self._windows[-1][1] == "runner, clock-aligned" and self.clock_offset is not None:
            summary["clock_offset_s"] = self.clock_offset.offset_s
            summary["clock_uncertainty_s"] = self.clock_offset.uncertainty_s
        summary["readings"] = len(readings)
        return summary, per_process
