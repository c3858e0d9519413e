"""A crude physical model of the stand-in phone, ticking in a background thread.

This is not a thermal or battery model of any real device; it exists so that code reading
sensors sees them move the way a phone's do, in the right direction and on the right files:

* **Load** is the number of shell commands running (busy when at least one runs).
* **Temperature**: busy, every zone rises at ``HEAT_RATE_C_S x share`` toward
  ``ambient + (hot - ambient) x share``; idle, it decays exponentially toward ambient with
  time constant ``COOL_TAU_S``. ``thermal_zoneK/temp`` is in millidegrees, the battery's
  ``temp`` in tenths of a degree (both as in Linux/Android).
* **Thermal capping**: when the hottest ``cpu*`` zone exceeds ``profile.throttle_c`` every
  cluster but the little one is capped to the highest operating point <= ``THROTTLE_FRACTION``
  of its maximum (``scaling_max_freq`` drops); the cap lifts below ``throttle_c -
  HYSTERESIS_C``. A line goes to the log buffer each time.
* **Frequency**: ``scaling_cur_freq`` follows the governor: performance -> max, powersave ->
  min, userspace -> ``scaling_setspeed``, anything else (schedutil...) -> max when busy, min
  when idle; always snapped to an operating point and within [min, capped max].
* **Battery**: charging adds ``CHARGE_CURRENT_UA`` until full ("Full"); discharging draws
  ``BUSY_CURRENT_UA`` or ``IDLE_CURRENT_UA`` (negative = discharging, as modern Android
  reports ``current_now``); ``charge_counter`` (uAh), ``capacity`` and ``voltage_now`` follow.

Files are written atomically (temporary file + rename), so readers never see them empty.
Inputs written from outside (a test, ``adb shell echo ... >``) are adopted, not overwritten:
each tick compares every simulated file with what the model last wrote there and, if it
differs, takes the new value as the current state and continues from it (temperatures,
``capacity``, ``charge_counter``, battery ``status``, ``usb/online``, a policy's
``scaling_max_freq`` as the user limit). Governor, ``scaling_min_freq`` and
``scaling_setspeed`` are only ever read. A write landing between the model's check and its
rename can still be lost; :meth:`PhoneSimulation.set_temperature` and
:meth:`~PhoneSimulation.set_charging` have no such window.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from pathlib import Path

from benchlab_standin.profile import CpuCluster, DeviceProfile

__all__ = ["PhoneSimulation"]

_log = logging.getLogger(__name__)

TICK_S = 0.1
HEAT_RATE_C_S = 2.0
COOL_TAU_S = 20.0
HYSTERESIS_C = 5.0
THROTTLE_FRACTION = 0.6
CHARGE_CURRENT_UA = 1_500_000
BUSY_CURRENT_UA = -400_000
IDLE_CURRENT_UA = -80_000
# Longest step the model takes at once (a stalled machine must not jump the state).
_MAX_DT_S = 1.0


class PhoneSimulation:
    """Evolves temperatures, frequencies and battery in the sandbox's ``sys``/``proc`` files."""

    def __init__(self, root: Path, profile: DeviceProfile) -> None:
        self.root = Path(root)
        self.profile = profile
        self.lock = threading.RLock()  # Held by a tick, by setters and during a reboot.
        self._jobs = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reset()

    # --- public controls ----------------------------------------------------------------

    def reset(self) -> None:
        """Take the state from the profile (after it was materialized) and write it out."""
        p = self.profile
        with self.lock:
            self._last: dict[Path, str] = {}
            self.temps = [p.ambient_c for _ in p.thermal_zones]
            self.charging = p.charging
            self.full_uah = p.battery_mah * 1000
            self.charge_uah = self.full_uah * p.battery_level / 100
            self.throttled = False
            self.user_max = {c.policy: c.max_khz for c in p.clusters}
            self.load = [0.0, 0.0, 0.0]
            self.booted_at = time.monotonic()  # a reboot resets it, as /proc/uptime does
            self._write_outputs()

    def busy(self, delta: int) -> None:
        """A shell command started (+1) or ended (-1)."""
        with self.lock:
            self._jobs = max(0, self._jobs + delta)

    @property
    def jobs(self) -> int:
        """Shell commands running now."""
        return self._jobs

    def set_temperature(self, celsius: float, zone: int | str | None = None) -> None:
        """Set one zone (index or type) or all zones; the model continues from there."""
        with self.lock:
            for index, spec in enumerate(self.profile.thermal_zones):
                if zone is None or zone == index or zone == spec.type:
                    self.temps[index] = float(celsius)
            self._update_throttle()
            self._write_outputs()

    def set_charging(self, charging: bool) -> None:
        """Plug (True) or unplug (False) the USB charger."""
        with self.lock:
            self.charging = bool(charging)
            self._write_outputs()

    def temperatures(self) -> dict[str, float]:
        """Current temperature of each zone by type, in degrees C."""
        with self.lock:
            return {z.type: t for z, t in zip(self.profile.thermal_zones, self.temps)}

    def start(self) -> None:
        """Start ticking every ``TICK_S`` in a daemon thread."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="standin-sim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking (the files keep their last values)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def tick(self, dt: float) -> None:
        """Advance the model by ``dt`` seconds."""
        with self.lock:
            self._adopt_external_writes()
            busy = self._jobs > 0
            self._step_temperatures(dt, busy)
            self._update_throttle()
            self._step_battery(dt, busy)
            for i, tau in enumerate((60.0, 300.0, 900.0)):
                self.load[i] += (self._jobs - self.load[i]) * (1 - math.exp(-dt / tau))
            self._write_outputs()

    # --- model --------------------------------------------------------------------------

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(TICK_S):
            now = time.monotonic()
            try:
                self.tick(min(now - last, _MAX_DT_S))
            except OSError as exc:  # e.g. the tree is being rewritten by a reboot
                _log.debug("simulation tick skipped: %s", exc)
            last = now

    def _step_temperatures(self, dt: float, busy: bool) -> None:
        p = self.profile
        for i, zone in enumerate(p.thermal_zones):
            t = self.temps[i]
            target = p.ambient_c + (p.hot_c - p.ambient_c) * zone.share if busy else p.ambient_c
            if busy and t < target:
                t = min(target, t + HEAT_RATE_C_S * zone.share * dt)
            else:
                t += (target - t) * (1 - math.exp(-dt / COOL_TAU_S))
            self.temps[i] = t

    def _update_throttle(self) -> None:
        zones = zip(self.profile.thermal_zones, self.temps)
        hottest = max((t for z, t in zones if z.type.startswith("cpu")),
                      default=self.profile.ambient_c)
        was = self.throttled
        if not was and hottest > self.profile.throttle_c:
            self.throttled = True
        elif was and hottest < self.profile.throttle_c - HYSTERESIS_C:
            self.throttled = False
        if self.throttled != was:
            state = "capping big clusters" if self.throttled else "lifting cap"
            self._logcat("thermal-engine", f"{state} at {hottest:.1f}C")

    def _step_battery(self, dt: float, busy: bool) -> None:
        current = self._current_ua(busy)
        self.charge_uah = min(self.full_uah, max(0.0, self.charge_uah + current * dt / 3600))

    def _current_ua(self, busy: bool) -> int:
        if self.charging:
            return CHARGE_CURRENT_UA if self.charge_uah < self.full_uah else 0
        return BUSY_CURRENT_UA if busy else IDLE_CURRENT_UA

    def _cap_khz(self, cluster: CpuCluster) -> int:
        big = cluster is not min(self.profile.clusters, key=lambda c: c.capacity)
        if not (self.throttled and big):
            return cluster.max_khz
        limit = cluster.max_khz * THROTTLE_FRACTION
        return max([f for f in cluster.frequencies_khz if f <= limit], default=cluster.min_khz)

    def _cur_khz(self, cluster: CpuCluster, policy: Path, eff_max: int) -> int:
        governor = self._read(policy / "scaling_governor") or "schedutil"
        low = _to_int(self._read(policy / "scaling_min_freq"), cluster.min_khz)
        low = min(max(low, cluster.min_khz), eff_max)
        if governor == "performance":
            want = eff_max
        elif governor == "powersave":
            want = low
        elif governor == "userspace":
            want = _to_int(self._read(policy / "scaling_setspeed"), low)
        else:
            want = eff_max if self._jobs else low
        want = min(max(want, low), eff_max)
        return max([f for f in cluster.frequencies_khz if f <= want], default=cluster.min_khz)

    # --- files --------------------------------------------------------------------------

    def _zone_dir(self, index: int) -> Path:
        return self.root / f"sys/class/thermal/thermal_zone{index}"

    def _adopt_external_writes(self) -> None:
        bat = self.root / "sys/class/power_supply/battery"
        for i in range(len(self.temps)):
            if (v := self._changed(self._zone_dir(i) / "temp")) is not None:
                self.temps[i] = v / 1000
        if (v := self._changed(bat / "temp")) is not None:
            for i, zone in enumerate(self.profile.thermal_zones):
                if zone.type == "battery":
                    self.temps[i] = v / 10
        if (v := self._changed(bat / "capacity")) is not None:
            self.charge_uah = self.full_uah * min(max(v, 0), 100) / 100
        if (v := self._changed(bat / "charge_counter")) is not None:
            self.charge_uah = min(max(float(v), 0.0), self.full_uah)
        status = self._changed(bat / "status", numeric=False)
        if status is not None:
            self.charging = status in ("Charging", "Full")
        if (v := self._changed(self.root / "sys/class/power_supply/usb/online")) is not None:
            self.charging = bool(v)
        for cluster in self.profile.clusters:
            path = self._policy_dir(cluster) / "scaling_max_freq"
            if (v := self._changed(path)) is not None:
                self.user_max[cluster.policy] = min(max(v, cluster.min_khz), cluster.max_khz)

    def _changed(self, path: Path, numeric: bool = True):  # -> int | str | None
        """The file's value if someone other than the model wrote it since the last tick."""
        text = self._read(path)
        if text is None or path not in self._last or text == self._last[path].strip():
            return None
        try:
            value = int(text) if numeric else (text or None)
        except ValueError:
            return None  # Half-written (truncated, not yet filled) or garbage: ignore.
        if value is not None:
            self._last[path] = text + "\n"  # Known now: the next write may replace it.
        return value

    def _policy_dir(self, cluster: CpuCluster) -> Path:
        return self.root / "sys/devices/system/cpu/cpufreq" / cluster.policy

    def _write_outputs(self) -> None:
        p = self.profile
        busy = self._jobs > 0
        for i in range(len(self.temps)):
            self._put(self._zone_dir(i) / "temp", round(self.temps[i] * 1000))
        bat = self.root / "sys/class/power_supply/battery"
        battery_c = next((t for z, t in zip(p.thermal_zones, self.temps) if z.type == "battery"),
                         p.ambient_c)
        capacity = min(100, max(0, round(self.charge_uah * 100 / self.full_uah)))
        full = self.charging and self.charge_uah >= self.full_uah
        self._put(bat / "temp", round(battery_c * 10))
        self._put(bat / "status", "Full" if full else
                  ("Charging" if self.charging else "Discharging"))
        self._put(bat / "capacity", capacity)
        self._put(bat / "charge_counter", round(self.charge_uah))
        self._put(bat / "current_now", self._current_ua(busy), adopt=False)
        self._put(bat / "voltage_now", 3_400_000 + 8_000 * capacity
                  + (100_000 if self.charging else 0), adopt=False)
        self._put(self.root / "sys/class/power_supply/usb/online", int(self.charging))
        for cluster in p.clusters:
            policy = self._policy_dir(cluster)
            eff_max = max(min(self.user_max[cluster.policy], self._cap_khz(cluster)),
                          cluster.min_khz)
            self._put(policy / "scaling_max_freq", eff_max)
            cur = self._cur_khz(cluster, policy, eff_max)
            self._put(policy / "scaling_cur_freq", cur, adopt=False)
            self._put(policy / "cpuinfo_cur_freq", cur, adopt=False)
        l1, l5, l15 = self.load
        up = time.monotonic() - self.booted_at
        self._put(self.root / "proc/uptime", f"{up:.2f} {up * 0.9:.2f}", adopt=False)
        self._put(self.root / "proc/loadavg",
                  f"{l1:.2f} {l5:.2f} {l15:.2f} {self._jobs + 1}/900 {os.getpid()}", adopt=False)

    def _put(self, path: Path, value: object, adopt: bool = True) -> None:
        """Write a simulated file. ``adopt``: an outside write wins (pure outputs: we win)."""
        text = f"{value}\n"
        if self._last.get(path) == text:
            return
        if adopt and path in self._last:
            current = self._read(path)
            if current is not None and current != self._last[path].strip():
                return  # Written from outside since our check: adopt it next tick instead.
        try:
            mode = path.stat().st_mode & 0o777
        except OSError:
            return  # Not in this tree (the profile has no such file, or a reboot is running).
        tmp = path.with_name(f".{path.name}.sim")
        tmp.write_text(text)
        os.chmod(tmp, mode)  # Keep 0444 on an unrooted phone's cpufreq files.
        os.replace(tmp, path)
        self._last[path] = text

    @staticmethod
    def _read(path: Path) -> str | None:
        try:
            return path.read_text().strip()
        except OSError:
            return None

    def _logcat(self, tag: str, message: str) -> None:
        now = time.time()
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
        pid = os.getpid()
        try:
            with open(self.root / "data/logcat.txt", "a") as buffer:
                buffer.write(f"{stamp} {pid:5d} {pid:5d} I {tag:<8s}: {message}\n")
        except OSError:
            pass


def _to_int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
