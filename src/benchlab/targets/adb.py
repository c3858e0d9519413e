"""The ``adb`` target: an Android phone driven through the real ``adb`` client.

Everything goes through the ``adb`` program (Debian package ``adb``), so a phone on USB, one
over Wi-Fi (``adb connect``) and the test stand-in (:mod:`benchlab_standin`) are reached the
same way. Several phones may be attached: pick one by ``serial=`` or by what it is
(``model=``, ``product=``, ``device=`` from ``adb devices -l``; ``soc=`` from ``getprop``).

Each command runs in the phone's ``sh`` through :class:`~benchlab.targets.remote.ShellTarget`,
which adds the exit status (old ``shell:`` has none), pinning with ``taskset`` and a kill of
the on-device process group on timeout. The logcat written while a command ran is attached to
its result (``logcat=false`` turns that off). On a rooted phone ``set_freq=min|mid|max`` pins
every cluster's frequency before each job, as FAI-PEP's ``--set_freq`` did.

Usage: ``--target adb`` (every attached phone, one target each: :meth:`AdbTarget.fan_out`),
``--target adb:serial=R58M123``,
``--target adb:model=Pixel_7,set_freq=max``, ``server_port=`` for a non-default adb server.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.errors import InfrastructureError, UsageError
from benchlab.schema.result import EnvKey
from benchlab.schema.availability import Availability
from benchlab.targets.armcpu import ARM_FEATURES_COMMAND, parse_arm_features
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.remote import ShellTarget

__all__ = ["AdbDevice", "AdbTarget", "list_devices", "parse_devices", "parse_getprop"]

#: ``getprop`` keys recorded as the phone's identity.
IDENTITY_PROPS = {
    EnvKey.MODEL: "ro.product.model",
    EnvKey.MANUFACTURER: "ro.product.manufacturer",
    "device": "ro.product.device",
    EnvKey.SOC_MANUFACTURER: "ro.soc.manufacturer",
    EnvKey.SOC_MODEL: "ro.soc.model",
    EnvKey.BOARD: "ro.board.platform",
    EnvKey.HARDWARE: "ro.hardware",
    EnvKey.ABI: "ro.product.cpu.abi",
    EnvKey.ANDROID: "ro.build.version.release",
    EnvKey.SDK: "ro.build.version.sdk",
    "fingerprint": "ro.build.fingerprint",
    "debuggable": "ro.debuggable",
}
_SET_FREQ = ("min", "mid", "max")


@dataclass(frozen=True, slots=True)
class AdbDevice:
    """One line of ``adb devices -l``: serial, state and the properties listed with it."""

    serial: str
    state: str
    properties: dict[str, str] = field(default_factory=dict)


def parse_devices(text: str) -> list[AdbDevice]:
    """Read ``adb devices -l`` output (``SERIAL  device product:x model:y device:z ...``)."""
    devices: list[AdbDevice] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("List of devices", "*")):
            continue
        parts = line.split()
        if len(parts) < 2:
            continue
        props = dict(p.split(":", 1) for p in parts[2:] if ":" in p)
        devices.append(AdbDevice(parts[0], parts[1], props))
    return devices


def parse_getprop(text: str) -> dict[str, str]:
    """Read ``getprop`` output (``[key]: [value]`` per line) into a dictionary."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and "]: [" in line and line.endswith("]"):
            key, _, value = line[1:-1].partition("]: [")
            props[key] = value
    return props


def _adb_base(adb: str, server_port: int | None) -> list[str]:
    return [adb, *(["-P", str(server_port)] if server_port else [])]


def list_devices(adb: str = "adb", server_port: int | None = None) -> list[AdbDevice]:
    """Every device the adb server knows, in any state (``device``, ``offline``...)."""
    try:
        proc = subprocess.run([*_adb_base(adb, server_port), "devices", "-l"],
                              capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise InfrastructureError(f"{adb!r} not found: install adb (apt-get install adb)") from None
    except subprocess.TimeoutExpired:
        raise InfrastructureError("adb devices -l did not answer in 60 s") from None
    if proc.returncode != 0:
        raise InfrastructureError(f"adb devices -l failed: {proc.stderr.strip()[:300]}")
    return parse_devices(proc.stdout)


class AdbTarget(ShellTarget):
    """Run benchmarks on an Android phone through ``adb``."""

    name = "adb"
    max_command_chars = 3500  # old adbd limits a shell: service line to about 4 KiB

    def __init__(
        self,
        serial: str | None = None,
        *,
        model: str | None = None,
        product: str | None = None,
        device: str | None = None,
        soc: str | None = None,
        adb: str = "adb",
        server_port: int | None = None,
        workroot: str = "/data/local/tmp/benchlab",
        python: str | None = None,
        set_freq: str | None = None,
        logcat: bool = True,
    ) -> None:
        if set_freq is not None and set_freq not in _SET_FREQ:
            raise UsageError(f"set_freq must be one of {', '.join(_SET_FREQ)}, not {set_freq!r}")
        # Option parsing may have turned an all-digit serial or model into a number.
        self.serial = str(serial) if serial is not None else None
        self.selectors = {k: str(v) for k, v in
                          (("model", model), ("product", product), ("device", device)) if v}
        self.soc = str(soc) if soc is not None else None
        self.adb = adb
        self.server_port = int(server_port) if server_port else None
        self.workroot = workroot.rstrip("/")
        self.python = python
        self.set_freq = set_freq
        self.logcat = logcat
        self._chosen: str | None = self.serial

    # -- choosing the phone -----------------------------------------------------------------
    def devices(self) -> list[AdbDevice]:
        """The attached phones (state ``device``) that match this target's selectors."""
        found = [d for d in list_devices(self.adb, self.server_port) if d.state == "device"]
        if self.serial:
            found = [d for d in found if d.serial == self.serial]
        for key, wanted in self.selectors.items():
            found = [d for d in found if d.properties.get(key) == wanted]
        if self.soc:
            found = [d for d in found if self._getprop_of(d.serial, "ro.soc.model") == self.soc]
        return found

    def _getprop_of(self, serial: str, key: str) -> str:
        proc = subprocess.run(
            [*_adb_base(self.adb, self.server_port), "-s", serial, "shell", "getprop", key],
            capture_output=True, text=True, timeout=30, check=False,
        )
        return proc.stdout.strip()

    def chosen_serial(self) -> str:
        """The serial of the phone this target drives; raises when none or several match."""
        if self._chosen:
            return self._chosen
        found = self.devices()
        if not found:
            wanted = ", ".join(f"{k}={v}" for k, v in {**self.selectors, "soc": self.soc}.items()
                               if v) or "any"
            raise InfrastructureError(f"no Android device attached matches ({wanted}); "
                                      "see `adb devices -l`")
        if len(found) > 1:
            names = ", ".join(f"{d.serial} ({d.properties.get('model', '?')})" for d in found)
            raise UsageError(f"{len(found)} Android devices match: {names}; choose one with "
                             "--target adb:serial=SERIAL (or model=, soc=)")
        self._chosen = found[0].serial
        return self._chosen

    def fan_out(self) -> list[AdbTarget]:
        """One target per attached phone this target's selectors match, for a sweep over
        several devices (``--target adb`` runs on every phone; ``adb:model=X`` on each
        phone of that model). A target given a serial stands for that phone alone."""
        if self.serial:
            return [self]
        return [self.for_device(found.serial) for found in self.devices()]

    def for_device(self, serial: str) -> AdbTarget:
        """The same settings, aimed at one phone (for listing every attached phone)."""
        return AdbTarget(serial, adb=self.adb, server_port=self.server_port,
                         workroot=self.workroot, python=self.python, set_freq=self.set_freq,
                         logcat=self.logcat)

    # -- the client -------------------------------------------------------------------------
    def _adb(self, *args: str) -> list[str]:
        return [*_adb_base(self.adb, self.server_port), "-s", self.chosen_serial(), *args]

    def _client_argv(self, command: str) -> list[str]:
        return self._adb("shell", command)

    def _normalize(self, text: str) -> str:
        # Old adbd ran commands under a pty, which turns every \n into \r\n.
        return text.replace("\r\n", "\n")

    # -- protocol -----------------------------------------------------------------------------
    def availability(self) -> Availability:
        """One phone matches and answers; ``version`` is its Android release."""
        try:
            serial = self.chosen_serial()
            answer = self.shell("getprop", timeout=60.0)
        except (InfrastructureError, UsageError) as exc:
            return Availability(ok=False, reason=str(exc))
        props = parse_getprop(answer.stdout)
        if answer.returncode != 0 or answer.timed_out or not props:
            # A phone named by serial that has gone away (unplugged, adb disconnect) still
            # "resolves"; only its silence tells.
            said = (answer.stderr or answer.stdout).strip()[-300:]
            return Availability(ok=False, reason=f"adb: {serial} does not answer: {said}")
        return Availability(ok=True, version=props.get("ro.build.version.release"),
                            details={"serial": serial, "model": props.get("ro.product.model")})

    def properties(self) -> dict[str, str]:
        """Every system property (``getprop``)."""
        return parse_getprop(self.shell("getprop", timeout=60.0).stdout)

    def arm_features(self) -> frozenset[str] | None:
        """The phone's ARM CPU features as its kernel lists them (``lrcpc``, ``i8mm``...), or
        None where its ``/proc/cpuinfo`` has no ``Features`` line: what a native runner's
        library needs is checked against them before anything is pushed."""
        return parse_arm_features(self.shell(ARM_FEATURES_COMMAND, timeout=60.0).stdout)

    def python_executable(self) -> str:
        """The phone's Python (``python=``), or ``""`` when it has none: native runners only."""
        return self.python or ""

    def describe(self) -> dict[str, Any]:
        """Identity from ``getprop`` (model, SoC, ABI, Android), clusters and device state."""
        props = self.properties()
        info: dict[str, Any] = {EnvKey.TARGET: "adb", "serial": self.chosen_serial()}
        info.update({name: props.get(key) for name, key in IDENTITY_PROPS.items()})
        info[EnvKey.HOSTNAME] = f"{info.get(EnvKey.MODEL) or 'android'}-{info['serial']}"
        emulated = emulation_of(props)
        if emulated:
            # In the device's name, so that every table, page and trend keeps it apart.
            info[EnvKey.EMULATED] = emulated
            info[EnvKey.HOSTNAME] += " (emulated)"
        state = self.device_state()
        info[EnvKey.CPU_COUNT] = len(state.get("cpus") or {}) or None
        info[EnvKey.CLUSTERS] = state.get("clusters")
        info[EnvKey.TEMPERATURES_C] = state.get("temperatures_c")
        info[EnvKey.BATTERY] = state.get("battery")
        info[EnvKey.STATE] = state
        info["frequency_setting"] = self.set_freq
        return info

    def device_state(self) -> dict[str, Any]:
        """The shared probe; the battery from ``dumpsys battery`` where sysfs hides it."""
        state = super().device_state()
        if state.get("battery") is None:
            state["battery"] = parse_dumpsys_battery(self.shell("dumpsys battery").stdout)
        return state

    def power_meters(self) -> list[Any]:
        """The phone's battery fuel gauge (only meaningful while not charging)."""
        from benchlab.energy.battery import BatteryMeter

        def read_text(path: str) -> str | None:
            result = self.shell(f"cat {shlex.quote(path)} 2>/dev/null", timeout=30.0)
            return result.stdout.strip() or None if result.returncode == 0 else None

        return [BatteryMeter(read_text)]

    def push(self, local: Path, workdir: str, name: str | None = None) -> str:
        """``adb push`` a file into ``workdir`` on the phone."""
        dest = f"{workdir.rstrip('/')}/{name or Path(local).name}"
        self._file_transfer("push", str(local), dest)
        return dest

    def pull(self, remote: str, local: Path) -> Path:
        """``adb pull`` a file from the phone to ``local``."""
        local.parent.mkdir(parents=True, exist_ok=True)
        self._file_transfer("pull", remote, str(local))
        return local

    def _file_transfer(self, verb: str, source: str, dest: str) -> None:
        proc = subprocess.run(self._adb(verb, source, dest), capture_output=True, text=True,
                              timeout=3600, check=False)
        if proc.returncode != 0:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            raise InfrastructureError(f"adb {verb} {source} {dest} failed: "
                                      f"{why[-1] if why else proc.returncode}")

    def make_workdir(self, name: str) -> str:
        """A fresh directory under the workroot; pins frequencies first when asked to."""
        if self.set_freq:
            self.apply_frequency(self.set_freq)
        return super().make_workdir(name)

    def run(self, request: RunRequest) -> CommandResult:
        """Run one command; its logcat lines are attached as ``log``."""
        if not self.logcat:
            return super().run(request)
        self.shell("logcat -c", timeout=30.0)
        result = super().run(request)
        log = self.shell("logcat -d -v threadtime", timeout=60.0).stdout
        return CommandResult(result.returncode, result.stdout, result.stderr, result.duration,
                             result.timed_out, log)

    # -- phone management -----------------------------------------------------------------------
    def _as_root(self, command: str) -> str:
        """``command`` wrapped so it runs as root, or an error on an unrooted phone."""
        if self.shell("id -u").stdout.strip() == "0":
            return command
        if self.shell("su 0 id -u 2>/dev/null").stdout.strip() == "0":
            return f"su 0 sh -c {shlex.quote(command)}"
        raise UsageError("set_freq needs a rooted phone (adb root, or su): this one is not")

    def apply_frequency(self, which: str) -> dict[str, int]:
        """Pin each cluster to its min, middle or max available frequency (rooted phones).

        Returns CPU → frequency set (kHz). The governor becomes ``performance`` with
        ``scaling_min_freq = scaling_max_freq`` at the chosen step.
        """
        state = super().device_state()
        chosen: dict[str, int] = {}
        lines: list[str] = []
        for name, cpu in (state.get("cpus") or {}).items():
            low, high = cpu.get("hw_min_khz"), cpu.get("hw_max_khz")
            if not low or not high:
                continue
            steps = self._available_steps(name) or [low, high]
            target = {"min": steps[0], "max": steps[-1]}.get(which, steps[len(steps) // 2])
            base = f"/sys/devices/system/cpu/{name}/cpufreq"
            lines += [
                f"echo performance > {base}/scaling_governor",
                f"echo {low} > {base}/scaling_min_freq",
                f"echo {target} > {base}/scaling_max_freq",
                f"echo {target} > {base}/scaling_min_freq",
            ]
            chosen[name] = target
        if not lines:
            raise UsageError("set_freq: the phone exposes no cpufreq controls")
        result = self.shell(self._as_root(" && ".join(lines)))
        if result.returncode != 0:
            raise InfrastructureError(f"set_freq={which} failed: "
                                      f"{(result.stderr or result.stdout).strip()[:300]}")
        return chosen

    def _available_steps(self, cpu: str) -> list[int]:
        path = f"/sys/devices/system/cpu/{cpu}/cpufreq/scaling_available_frequencies"
        text = self.shell(f"cat {path} 2>/dev/null").stdout
        return sorted(int(x) for x in text.split() if x.isdigit())

    def reboot(self, timeout: float = 300.0) -> None:
        """Reboot the phone and wait until it has booted again."""
        subprocess.run(self._adb("reboot"), capture_output=True, timeout=60, check=False)
        self.wait_for_device(timeout)

    def wait_for_device(self, timeout: float = 300.0) -> None:
        """Wait until the phone is back on the bus and ``sys.boot_completed`` is 1."""
        deadline = time.monotonic() + timeout
        try:
            subprocess.run(self._adb("wait-for-device"), capture_output=True,
                           timeout=timeout, check=True)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
            raise InfrastructureError(f"{self._chosen} did not come back within {timeout:g} s"
                                      ) from None
        while time.monotonic() < deadline:
            if self.shell("getprop sys.boot_completed", timeout=30).stdout.strip() == "1":
                return
            time.sleep(1.0)
        raise InfrastructureError(f"{self._chosen} did not finish booting within {timeout:g} s")


def emulation_of(props: dict[str, str]) -> str | None:
    """How the phone says it is emulated (Android's emulator sets ``ro.boot.qemu``, older
    releases ``ro.kernel.qemu``), or None for a real phone."""
    for key in ("ro.boot.qemu", "ro.kernel.qemu"):
        if props.get(key) == "1":
            return (f"QEMU ({key}=1): latency under emulation says nothing about the "
                    "hardware; /proc/cpuinfo may show the emulator's host, the runner's own "
                    "reading (hwcaps, MIDR) shows the emulated core")
    return None


def parse_dumpsys_battery(text: str) -> dict[str, Any] | None:
    """The battery from ``dumpsys battery`` (level, temperature, voltage, charging)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()
    if "level" not in fields:
        return None
    powered = [k.split()[0].lower() for k, v in fields.items()
               if k.endswith(" powered") and v == "true"]

    def number(key: str) -> float | None:
        try:
            return float(fields[key])
        except (KeyError, ValueError):
            return None

    temp, volt, counter = number("temperature"), number("voltage"), number("charge counter")
    return {
        "status": {"2": "Charging", "3": "Discharging", "4": "Not charging", "5": "Full"}.get(
            fields.get("status", ""), fields.get("status")),
        "charging": bool(powered) or fields.get("status") in ("2", "5"),
        "level_percent": int(number("level") or 0),
        "temperature_c": temp / 10.0 if temp is not None else None,
        "voltage_v": volt / 1000.0 if volt is not None else None,
        "current_ma": None,
        "charge_counter_uah": int(counter) if counter is not None else None,
        "powered_by": powered,
    }
