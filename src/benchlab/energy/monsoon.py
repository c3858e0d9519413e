"""A Monsoon HVPM power monitor read through Monsoon's Python API (imported only when used).

With several phones, each on its own monitor, a *monsoon map* says which monitor each device
is wired to (FAI-PEP's ``--monsoon_map``, "Map the phone hash to the monsoon serial number";
its ``utils/monsoon_power.py`` looks the device hash up in it): :func:`read_monsoon_map` reads
one, :func:`monitor_for` finds a device's monitor in it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from benchlab.energy.meters import MeterError, MeterKind, PowerReading
from benchlab.errors import UsageError
from benchlab.schema.settings import EnergySettings
from benchlab.schema.availability import Availability

__all__ = ["MonsoonEngine", "MonsoonMeter", "device_keys", "monitor_for", "read_monsoon_map"]


class MonsoonEngine(Protocol):
    """The part of ``Monsoon.sampleEngine.SampleEngine`` that :class:`MonsoonMeter` drives."""

    def startSampling(self, samples: int, granularity: int) -> Any:  # noqa: N802 - vendor API
        """Sample until the stop trigger fires (blocks)."""
        ...

    def setStopTrigger(  # noqa: N802 - vendor API
        self, triggerstyle: Callable[[Any, Any], Any], triggerlevel: float
    ) -> None:
        """Stop when ``triggerstyle(timestamp_s, triggerlevel)`` is true."""
        ...

    def getSamples(self) -> list[list[float]]:  # noqa: N802 - vendor API
        """Channels as lists: timestamps (s since sampling began), currents (mA), volts."""
        ...


# sampleEngine.triggers.SAMPLECOUNT_INFINITE: sample until the stop trigger fires.
_SAMPLECOUNT_INFINITE = 0xFFFFFFFF


def _greater_than(value: Any, level: Any) -> Any:
    return value > level


class MonsoonMeter:
    """A Monsoon HVPM powering the device under test, read through Monsoon's Python API.

    Sampling runs in the engine's own blocking loop in a thread; :meth:`stop` lowers the
    stop trigger (on the timestamp channel) to zero so the loop ends at its next batch. The
    engine stamps samples in seconds since sampling began; they are moved onto this host's
    ``time.monotonic()`` from the moment sampling was started. ``engine_factory`` replaces the
    USB connection with any object shaped like :class:`MonsoonEngine` (tests, other rigs).
    """

    kind: MeterKind = "power"

    def __init__(
        self,
        serial: int | str | None = None,
        voltage: float = 4.2,
        *,
        name: str = "monsoon",
        granularity: int = 1,
        max_duration_s: float = 24 * 3600.0,
        engine_factory: Callable[[], MonsoonEngine] | None = None,
    ) -> None:
        self.serial = serial
        self.voltage = voltage
        self.name = name
        self.granularity = granularity
        self.max_duration_s = max_duration_s
        self._factory = engine_factory
        self._engine: MonsoonEngine | None = None
        self._thread: threading.Thread | None = None
        self._t0: float | None = None
        self._error: BaseException | None = None

    def availability(self) -> Availability:
        """Usable when the Monsoon package imports and a power monitor is on USB."""
        if self._factory is not None:
            return Availability(ok=True, details={"engine": "injected"})
        try:
            from Monsoon import pmapi
        except ImportError as exc:
            why = f"the Monsoon Python API is not installed (pip install monsoon): {exc}"
            return Availability(ok=False, reason=why)
        try:
            serials = [str(s) for s in pmapi.USB_protocol().enumerateDevices()]
        except Exception as exc:  # noqa: BLE001 - pyusb raises backend-specific errors
            return Availability(ok=False, reason=f"cannot look for a Monsoon on USB: {exc}")
        if not serials:
            return Availability(ok=False, reason="no Monsoon power monitor found on USB")
        if self.serial is not None and str(self.serial) not in serials:
            return Availability(
                ok=False, reason=f"Monsoon {self.serial} not found on USB (found: {serials})"
            )
        return Availability(ok=True, details={"serials": serials, "voltage": self.voltage})

    def _connect(self) -> MonsoonEngine:
        from Monsoon import HVPM, sampleEngine

        monitor = HVPM.Monsoon()
        monitor.setup_usb(self.serial)
        monitor.setVout(self.voltage)
        engine = sampleEngine.SampleEngine(monitor)
        engine.ConsoleOutput(False)
        engine.disableCSVOutput()
        channels = sampleEngine.channels
        engine.enableChannel(channels.MainCurrent)
        engine.enableChannel(channels.MainVoltage)
        for unused in (channels.USBCurrent, channels.AuxCurrent, channels.USBVoltage):
            engine.disableChannel(unused)
        engine.setTriggerChannel(channels.timeStamp)
        engine.setStartTrigger(sampleEngine.triggers.GREATER_THAN, 0)
        return engine

    def start(self) -> None:
        """Connect once (setting the output voltage), then sample in a background thread."""
        if self._thread is not None:
            raise RuntimeError(f"meter {self.name} is already running")
        if self._engine is None:
            self._engine = self._factory() if self._factory is not None else self._connect()
        engine = self._engine
        # The engine's default stop trigger ends sampling after 10 s; push it out of the way.
        engine.setStopTrigger(_greater_than, self.max_duration_s)
        self._error = None
        started = threading.Event()

        def sample() -> None:
            self._t0 = time.monotonic()
            started.set()
            try:
                # Newer releases return False when the monitor fails to calibrate.
                if engine.startSampling(_SAMPLECOUNT_INFINITE, self.granularity) is False:
                    self._error = RuntimeError("the power monitor did not calibrate")
            except BaseException as exc:  # noqa: BLE001 - reported by stop()
                self._error = exc

        self._thread = threading.Thread(target=sample, name=f"benchlab-meter-{self.name}")
        self._thread.start()
        started.wait()

    def stop(self) -> list[PowerReading]:
        """End sampling and convert the engine's samples to host-clock power readings."""
        if self._thread is None or self._engine is None:
            raise RuntimeError(f"meter {self.name} was not started")
        self._engine.setStopTrigger(_greater_than, 0.0)
        self._thread.join()
        self._thread = None
        if self._error is not None:
            raise MeterError(f"Monsoon sampling failed: {self._error}") from self._error
        assert self._t0 is not None
        return _monsoon_readings(self._engine.getSamples(), self._t0, self.voltage)


def _monsoon_readings(
    samples: Sequence[Sequence[float]], t0: float, vout: float
) -> list[PowerReading]:
    # Newer Monsoon releases return every channel ([time, main, usb, aux, mainV, usbV], the
    # disabled ones empty); older ones only the enabled ones ([time, main, mainV]).
    layouts = {6: (1, 4), 3: (1, 2), 2: (1, None)}
    if len(samples) not in layouts:
        raise MeterError(f"unexpected Monsoon sample layout with {len(samples)} channels")
    current_at, volts_at = layouts[len(samples)]
    times, current_ma = samples[0], samples[current_at]
    volts = samples[volts_at] if volts_at is not None else []
    if len(volts) != len(times):
        volts = [vout] * len(times)
    return [
        PowerReading(t=t0 + float(t), power_w=float(i) * 1e-3 * float(v), voltage_v=float(v))
        for t, i, v in zip(times, current_ma, volts, strict=True)
    ]


def read_monsoon_map(given: str | Path) -> tuple[tuple[tuple[str, str], ...], str]:
    """The (device, monitor serial) pairs of a monsoon map and where they came from.

    ``given`` is a JSON or YAML file mapping a device's serial (an adb serial, an ssh host,
    this host's hostname) to its Monsoon's serial number, or, as FAI-PEP's ``--monsoon_map``
    takes it, that JSON object itself. A bad map is a :class:`UsageError` naming the file and
    the entry."""
    text = str(given)
    inline = text.lstrip().startswith("{")
    source = "--monsoon-map" if inline else text
    try:
        raw = text if inline else Path(text).read_text()
    except OSError as exc:
        raise UsageError(f"{source}: cannot read the monsoon map: {exc.strerror or exc}") from None
    if inline or Path(text).suffix.lower() == ".json":
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise UsageError(f"{source}: the monsoon map is not JSON: {exc}") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise UsageError(f"{source}: the monsoon map is not YAML: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise UsageError(f"{source}: the monsoon map must map each device's serial to its "
                         f"Monsoon's serial number, e.g. {{\"R58M123\": 20001}}")
    pairs = []
    for device, monitor in data.items():
        if isinstance(monitor, bool) or not isinstance(monitor, (str, int)) or monitor == "":
            raise UsageError(f"{source}: device {device!r}: the Monsoon serial number must be "
                             f"a number or a string, not {monitor!r}")
        pairs.append((str(device), str(monitor)))
    return tuple(pairs), source


def device_keys(target: Any) -> list[str]:
    """The names a monsoon map may know ``target``'s device by, the most specific first: its
    adb serial, its ssh host, this host's hostname (FAI-PEP's device hash)."""
    keys: list[str] = []
    chosen = getattr(target, "chosen_serial", None)
    for key in (chosen() if callable(chosen) else None, getattr(target, "serial", None),
                getattr(target, "host", None),
                socket.gethostname() if getattr(target, "name", "") == "host" else None):
        if key and str(key) not in keys:
            keys.append(str(key))
    return keys


def monitor_for(target: Any, settings: EnergySettings) -> MonsoonMeter | None:
    """The Monsoon ``target``'s device is wired to by ``settings.monsoon_map`` (``None``
    without a map), set to the settings' voltage; a device the map has no entry for, or whose
    monitor is not on USB, is a :class:`UsageError` naming the map, the device and the
    monitor."""
    if not settings.monsoon_map:
        return None
    monitors = dict(settings.monsoon_map)
    keys = device_keys(target)
    found = next((key for key in keys if key in monitors), None)
    source = settings.monsoon_map_source or "--monsoon-map"
    if found is None:
        raise UsageError(f"{source}: no Monsoon for device {' / '.join(keys) or '?'} (the map "
                         f"names {', '.join(sorted(monitors))})")
    voltage = {} if settings.voltage is None else {"voltage": settings.voltage}
    monitor = monitors[found]
    # Monsoon's USB protocol compares the serial number it is given with the device's (an int).
    meter = MonsoonMeter(int(monitor) if monitor.isdigit() else monitor, **voltage)
    available = meter.availability()
    if not available.ok:
        raise UsageError(f"{source}: device {found} is wired to Monsoon {monitor}, "
                         f"which cannot be used: {available.reason}")
    return meter
