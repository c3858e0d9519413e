"""NVIDIA GPU energy (or power) through NVML; ``pynvml`` is imported only when used."""

from __future__ import annotations

import time
from typing import Any

from benchlab.energy.meters import MeterKind, PolledMeter, PowerReading, midpoint
from benchlab.schema.availability import Availability

__all__ = ["NvmlMeter"]


class NvmlMeter(PolledMeter):
    """NVIDIA GPU energy through NVML (``pip install nvidia-ml-py``, module ``pynvml``).

    Uses the total-energy counter (mJ, Volta and newer) and falls back to power readings
    (mW) on GPUs without it; :attr:`kind` is settled when the GPU is probed. ``library`` takes
    a stand-in for ``pynvml`` with the same functions; by default the real one is imported.
    """

    def __init__(
        self,
        index: int = 0,
        interval_s: float = 0.05,
        name: str | None = None,
        library: Any = None,
    ) -> None:
        super().__init__(interval_s)
        self.index = index
        self.name = name or f"nvml:{index}"
        self.kind = "cumulative"
        self._library = library
        self._handle: Any = None

    def _nvml(self) -> Any:
        if self._library is not None:
            return self._library
        import pynvml

        return pynvml

    def _probe_kind(self, nvml: Any, handle: Any) -> MeterKind:
        try:
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            return "cumulative"
        except nvml.NVMLError:
            nvml.nvmlDeviceGetPowerUsage(handle)
            return "power"

    def availability(self) -> Availability:
        """Usable when pynvml imports, the driver starts and the GPU reports energy or power."""
        try:
            nvml = self._nvml()
        except ImportError as exc:
            return Availability(
                ok=False, reason=f"pynvml is not installed (pip install nvidia-ml-py): {exc}"
            )
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            why = f"NVML did not start (no NVIDIA driver or GPU): {exc}"
            return Availability(ok=False, reason=why)
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(self.index)
            gpu = nvml.nvmlDeviceGetName(handle)
            driver = nvml.nvmlSystemGetDriverVersion()
            kind = self._probe_kind(nvml, handle)
        except nvml.NVMLError as exc:
            return Availability(ok=False, reason=f"GPU {self.index} cannot be metered: {exc}")
        finally:
            nvml.nvmlShutdown()
        gpu = gpu.decode() if isinstance(gpu, bytes) else str(gpu)
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        return Availability(ok=True, version=driver, details={"gpu": gpu, "kind": kind})

    def reset(self) -> None:
        """Start NVML and decide between the energy counter and power readings."""
        nvml = self._nvml()
        nvml.nvmlInit()
        self._handle = nvml.nvmlDeviceGetHandleByIndex(self.index)
        self.kind = self._probe_kind(nvml, self._handle)

    def close(self) -> None:
        """Shut NVML down (it counts inits, so other users in the process are unaffected)."""
        self._handle = None
        self._nvml().nvmlShutdown()

    def read_once(self) -> PowerReading:
        """Total energy in joules, or power in watts on GPUs without the energy counter."""
        nvml = self._nvml()
        before = time.monotonic()
        if self.kind == "cumulative":
            value = nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        else:
            value = nvml.nvmlDeviceGetPowerUsage(self._handle)
        t = midpoint(before, time.monotonic())
        if self.kind == "cumulative":
            return PowerReading(t=t, energy_j=value * 1e-3)
        return PowerReading(t=t, power_w=value * 1e-3)
