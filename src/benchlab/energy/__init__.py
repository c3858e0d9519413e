"""Energy per inference: pluggable power meters and the arithmetic that turns readings into joules.

Meters (:mod:`benchlab.energy.meters` and one module per kind) sample a counter or a power
rail between ``start`` and ``stop``: RAPL on Linux CPUs (:mod:`~benchlab.energy.rapl`), NVML on
NVIDIA GPUs (:mod:`~benchlab.energy.nvml`), a phone's battery gauge
(:mod:`~benchlab.energy.battery`), a Monsoon power monitor (:mod:`~benchlab.energy.monsoon`).
:func:`energy_per_inference` (:mod:`benchlab.energy.accounting`) subtracts the idle baseline
from the energy over the measured window and divides by the iterations; where no meter can
measure, the result is ``"unavailable"`` with the reason.
"""

from __future__ import annotations

from benchlab.energy.accounting import (
    ClockOffset,
    EnergyResult,
    EnergyWindow,
    WindowNotCoveredError,
    energy_between,
    energy_per_inference,
    idle_baseline_w,
    unavailable,
)
from benchlab.energy.battery import BatteryMeter
from benchlab.energy.meters import (
    MeterError,
    MeterKind,
    PolledMeter,
    PowerMeter,
    PowerReading,
    ScriptedMeter,
)
from benchlab.energy.monsoon import MonsoonEngine, MonsoonMeter
from benchlab.energy.nvml import NvmlMeter
from benchlab.energy.rapl import RaplMeter

__all__ = [
    "BatteryMeter",
    "ClockOffset",
    "EnergyResult",
    "EnergyWindow",
    "MeterError",
    "MeterKind",
    "MonsoonEngine",
    "MonsoonMeter",
    "NvmlMeter",
    "PolledMeter",
    "PowerMeter",
    "PowerReading",
    "RaplMeter",
    "ScriptedMeter",
    "WindowNotCoveredError",
    "energy_between",
    "energy_per_inference",
    "idle_baseline_w",
    "unavailable",
]
