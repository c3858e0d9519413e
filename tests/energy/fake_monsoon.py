"""A stand-in for Monsoon's Python API (the ``Monsoon`` package), for tests without a monitor.

:meth:`FakeMonsoon.install` puts modules shaped like ``Monsoon.pmapi``, ``Monsoon.HVPM`` and
``Monsoon.sampleEngine`` into ``sys.modules`` (through ``monkeypatch``, so they go away after
the test), so that :class:`benchlab.energy.monsoon.MonsoonMeter` runs its own code end to end:
it finds a monitor on "USB", connects, sets the output voltage and samples. The engine samples
every 2 ms until the meter's stop trigger fires: the main channel's current is ``idle_ma`` for
the first ``step_s`` seconds of sampling and ``busy_ma`` after, and the voltage channel echoes
the output voltage the meter set, so the power a run sees tells which voltage reached the meter.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from typing import Any

import pytest

_CHANNELS = ("timeStamp", "MainCurrent", "USBCurrent", "AuxCurrent", "MainVoltage", "USBVoltage")


class FakeMonsoon:
    """The fake monitor's state, shared by every module object it installs."""

    def __init__(self, *, idle_ma: float = 100.0, busy_ma: float = 500.0, step_s: float = 1.5,
                 serial: int = 20001, more_serials: tuple[int, ...] = ()) -> None:
        self.idle_ma = idle_ma
        self.busy_ma = busy_ma
        self.step_s = step_s
        self.serial = serial
        self.serials = (serial, *more_serials)  # the monitors on "USB" (a rig of several)
        self.vouts: list[float] = []  # every setVout call, in order
        self.connections: list[Any] = []  # the serial given to each setup_usb call

    def current_ma(self, t: float) -> float:
        """The main channel's current ``t`` seconds after sampling began."""
        return self.idle_ma if t < self.step_s else self.busy_ma

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeMonsoon:
        """Make ``import Monsoon...`` find this fake for the rest of the test."""
        fake = self

        class USBProtocol:
            def enumerateDevices(self) -> list[int]:  # noqa: N802 - vendor API
                return list(fake.serials)

        class Monitor:
            def __init__(self) -> None:
                self.vout = 0.0

            def setup_usb(self, serial: Any = None) -> None:
                fake.connections.append(serial)

            def setVout(self, volts: float) -> None:  # noqa: N802 - vendor API
                fake.vouts.append(volts)
                self.vout = volts

        class SampleEngine:
            def __init__(self, monitor: Monitor) -> None:
                self.monitor = monitor
                self.stop: tuple[Callable[[Any, Any], Any], float] | None = None
                self.samples: list[list[float]] = [[] for _ in _CHANNELS]

            def ConsoleOutput(self, on: bool) -> None:  # noqa: N802 - vendor API
                pass

            def disableCSVOutput(self) -> None:  # noqa: N802 - vendor API
                pass

            def enableChannel(self, channel: int) -> None:  # noqa: N802 - vendor API
                pass

            def disableChannel(self, channel: int) -> None:  # noqa: N802 - vendor API
                pass

            def setTriggerChannel(self, channel: int) -> None:  # noqa: N802 - vendor API
                pass

            def setStartTrigger(self, style: Any, level: float) -> None:  # noqa: N802
                pass

            def setStopTrigger(self, style: Callable[[Any, Any], Any],  # noqa: N802
                               level: float) -> None:
                self.stop = (style, level)

            def startSampling(self, samples: int, granularity: int = 1) -> None:  # noqa: N802
                self.samples = [[] for _ in _CHANNELS]
                began = time.monotonic()
                while True:
                    t = time.monotonic() - began
                    self.samples[0].append(t)
                    self.samples[1].append(fake.current_ma(t))
                    self.samples[4].append(self.monitor.vout)
                    assert self.stop is not None
                    style, level = self.stop
                    if style(t, level):
                        return
                    time.sleep(0.002)

            def getSamples(self) -> list[list[float]]:  # noqa: N802 - vendor API
                return self.samples

        package = types.ModuleType("Monsoon")
        pmapi = types.ModuleType("Monsoon.pmapi")
        pmapi.USB_protocol = USBProtocol  # type: ignore[attr-defined]
        hvpm = types.ModuleType("Monsoon.HVPM")
        hvpm.Monsoon = Monitor  # type: ignore[attr-defined]
        engine = types.ModuleType("Monsoon.sampleEngine")
        engine.SampleEngine = SampleEngine  # type: ignore[attr-defined]
        engine.channels = types.SimpleNamespace(  # type: ignore[attr-defined]
            **{name: index for index, name in enumerate(_CHANNELS)})
        engine.triggers = types.SimpleNamespace(  # type: ignore[attr-defined]
            GREATER_THAN=lambda value, level: value > level, SAMPLECOUNT_INFINITE=0xFFFFFFFF)
        for name, module in (("pmapi", pmapi), ("HVPM", hvpm), ("sampleEngine", engine)):
            setattr(package, name, module)
            monkeypatch.setitem(sys.modules, f"Monsoon.{name}", module)
        monkeypatch.setitem(sys.modules, "Monsoon", package)
        return self
