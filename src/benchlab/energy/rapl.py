"""CPU package energy from Linux RAPL counters under ``/sys/class/powercap``."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

from benchlab.energy.meters import MeterKind, PolledMeter, PowerReading, midpoint
from benchlab.schema.availability import Availability

__all__ = ["RaplMeter"]

_RAPL_ZONE = re.compile(r"intel-rapl:\d+")


class RaplMeter(PolledMeter):
    """CPU package energy from Linux RAPL (``/sys/class/powercap/intel-rapl:N/energy_uj``).

    Only top-level zones are summed: ``intel-rapl:0:0`` (core, uncore, dram) are parts of
    package 0 and ``psys`` covers the whole platform including the packages, so adding either
    would count the same joules twice. ``domains`` picks zones by directory name instead.
    Counters wrap at ``max_energy_range_uj``; a smaller value than the last one means a wrap.
    """

    kind: MeterKind = "cumulative"

    def __init__(
        self,
        root: Path = Path("/sys/class/powercap"),
        domains: Sequence[str] | None = None,
        interval_s: float = 0.1,
        name: str = "rapl",
    ) -> None:
        super().__init__(interval_s)
        self.root = Path(root)
        self.domains = tuple(domains) if domains is not None else None
        self.name = name
        self._zones: list[Path] = []
        self._ranges: dict[Path, int] = {}
        self._last: dict[Path, int] = {}
        self._total_uj = 0

    def _pick_zones(self) -> list[Path]:
        if self.domains is not None:
            return [self.root / d for d in self.domains]
        zones = sorted(p for p in self.root.iterdir() if _RAPL_ZONE.fullmatch(p.name))
        return [z for z in zones if _read_str(z / "name") != "psys"]

    def availability(self) -> Availability:
        """Usable when the package zones exist and their counters can be read."""
        if not self.root.is_dir():
            return Availability(
                ok=False, reason=f"{self.root} not present (no RAPL driver or not permitted)"
            )
        try:
            zones = self._pick_zones()
        except OSError as exc:
            return Availability(ok=False, reason=f"cannot list {self.root}: {exc}")
        if not zones:
            return Availability(ok=False, reason=f"no RAPL package zones under {self.root}")
        names = {}
        for zone in zones:
            for leaf in ("energy_uj", "max_energy_range_uj"):
                try:
                    int((zone / leaf).read_text())
                except PermissionError:
                    # Since Linux 5.10 energy_uj is root-only (the PLATYPUS side channel).
                    return Availability(
                        ok=False, reason=f"{zone / leaf} is not readable (not permitted)"
                    )
                except (OSError, ValueError) as exc:
                    return Availability(ok=False, reason=f"cannot read {zone / leaf}: {exc}")
            names[zone.name] = _read_str(zone / "name") or zone.name
        return Availability(ok=True, details={"zones": names})

    def reset(self) -> None:
        """Find the zones and their wrap ranges; energy is counted from the first reading."""
        self._zones = self._pick_zones()
        self._ranges = {z: int((z / "max_energy_range_uj").read_text()) for z in self._zones}
        self._last = {}
        self._total_uj = 0

    def read_once(self) -> PowerReading:
        """Energy summed over the zones since :meth:`reset`, unwrapped, in joules."""
        before = time.monotonic()
        raw = {z: int((z / "energy_uj").read_text()) for z in self._zones}
        after = time.monotonic()
        for zone, value in raw.items():
            last = self._last.get(zone)
            if last is not None:
                delta = value - last
                if delta < 0:
                    delta += self._ranges[zone]
                self._total_uj += delta
            self._last[zone] = value
        return PowerReading(t=midpoint(before, after), energy_j=self._total_uj * 1e-6)


def _read_str(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
