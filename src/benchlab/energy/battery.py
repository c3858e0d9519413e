"""A phone's battery fuel gauge (``/sys/class/power_supply/battery``) as a power meter."""

from __future__ import annotations

import time
from collections.abc import Callable

from benchlab.energy.meters import MeterError, MeterKind, PolledMeter, PowerReading, midpoint
from benchlab.schema.availability import Availability

__all__ = ["BatteryMeter"]

_CHARGER_STATES = frozenset({"charging", "full", "not charging"})
_USB_REASON = (
    "the phone is charging over USB; battery counters measure the charger, not the model — "
    "disconnect USB power (e.g. adb over Wi-Fi) or use a Monsoon"
)


class BatteryMeter(PolledMeter):
    """A phone's fuel gauge: ``/sys/class/power_supply/battery`` read through ``read_text``.

    ``read_text(path)`` returns a file's text or None (a target passes a function that cats
    the file on the device). ``current_now`` is in µA, ``voltage_now`` in µV and
    ``charge_counter`` in µAh. The sign of a discharging current differs between devices, so
    it is learned at :meth:`start` from ``status``: readings are signed so that the battery
    delivering power is positive. Only a discharging battery measures the phone; on a charger
    the gauge sees the charger's current, so the meter is unavailable then.
    """

    kind: MeterKind = "power"

    def __init__(
        self,
        read_text: Callable[[str], str | None],
        name: str = "android-battery",
        interval_s: float = 0.25,
        base: str = "/sys/class/power_supply/battery",
    ) -> None:
        super().__init__(interval_s)
        self.name = name
        self.base = base.rstrip("/")
        self._read_text = read_text
        self._discharge_sign = 1.0

    def _text(self, leaf: str) -> str | None:
        try:
            text = self._read_text(f"{self.base}/{leaf}")
        except OSError:
            return None
        return text.strip() if text is not None and text.strip() else None

    def _number(self, leaf: str) -> float | None:
        text = self._text(leaf)
        try:
            return float(text) if text is not None else None
        except ValueError:
            return None

    def availability(self) -> Availability:
        """Usable when the gauge files read and the battery is discharging."""
        status = self._text("status")
        if status is None:
            return Availability(ok=False, reason=f"cannot read {self.base}/status")
        if status.lower() in _CHARGER_STATES:
            return Availability(ok=False, reason=_USB_REASON, details={"status": status})
        for leaf in ("current_now", "voltage_now"):
            if self._number(leaf) is None:
                return Availability(ok=False, reason=f"cannot read {self.base}/{leaf}")
        details = {"status": status, "charge_counter": self._number("charge_counter") is not None}
        return Availability(ok=True, details=details)

    def reset(self) -> None:
        """Refuse to measure on a charger and learn which current sign means discharging."""
        status = self._text("status") or ""
        if status.lower() in _CHARGER_STATES:
            raise MeterError(_USB_REASON)
        current = self._number("current_now")
        if status.lower() == "discharging" and current:
            self._discharge_sign = 1.0 if current > 0 else -1.0
        else:
            # Modern Android reports a discharging battery's current as negative.
            self._discharge_sign = -1.0

    def close(self) -> None:
        """A charger plugged in during the measurement invalidates it: raise MeterError."""
        status = self._text("status") or ""
        if status.lower() in _CHARGER_STATES:
            raise MeterError(f"{_USB_REASON} (status became {status!r} during the measurement)")

    def read_once(self) -> PowerReading:
        """Power from current x voltage, plus the voltage and remaining charge."""
        before = time.monotonic()
        current_ua = self._number("current_now")
        voltage_uv = self._number("voltage_now")
        charge_uah = self._number("charge_counter")
        after = time.monotonic()
        if current_ua is None or voltage_uv is None:
            raise OSError(f"cannot read {self.base}/current_now or voltage_now")
        volts = voltage_uv * 1e-6
        return PowerReading(
            t=midpoint(before, after),
            power_w=self._discharge_sign * current_ua * 1e-6 * volts,
            voltage_v=volts,
            charge_c=charge_uah * 1e-6 * 3600.0 if charge_uah is not None else None,
        )
