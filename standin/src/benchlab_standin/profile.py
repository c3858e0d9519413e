"""What the stand-in phone claims to be: properties, CPU clusters, sensors, battery.

A :class:`DeviceProfile` is frozen; derive variants with :func:`dataclasses.replace`, e.g.
``replace(default_profile(), rooted=False, charging=False)``. :meth:`DeviceProfile.materialize`
"boots" the profile into a sandbox directory: it (re)writes the volatile parts of the device
filesystem (``sys/``, ``proc/``, the property store, the log buffer, the shims in
``system/bin``) and leaves ``data/`` and ``sdcard/`` content alone, as a reboot would.

The default is a Snapdragon-888-like big.LITTLE layout: four Cortex-A55 (1.8 GHz), three
Cortex-A78 (2.4 GHz), one Cortex-X1 (2.85 GHz); each cluster is one cpufreq policy, and
``cpuN/cpufreq`` is a symlink to ``cpufreq/policyM`` as on Linux, so writing cpu5's governor
changes cpu4 and cpu6 too.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from benchlab_standin.cpuview import (
    LITTLE_CORE_CACHES, QEMU_CORES, Cache, EmulatedCpu, cpuinfo_text, hwcap_words, write_cpu_tree,
)
from benchlab_standin.toolbox import install as install_shims

__all__ = ["ARM_CORES", "CpuCluster", "DeviceProfile", "ThermalZone", "arm_profile",
           "default_profile"]

#: Each CPU's caches as sysfs lists them (cpuN/cache/indexK): L1 data, L1 instruction, a
#: private L2, and the L3 every CPU shares, the last level (a Snapdragon 888's sizes).
PHONE_CACHES = (Cache(1, "Data", "64K", False), Cache(1, "Instruction", "64K", False),
                Cache(2, "Unified", "512K", False), Cache(3, "Unified", "4096K", True))
#: The features a phone's kernel shows where no core is emulated (an ARMv8.2 phone's).
_PHONE_FEATURES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid "
                   "asimdrdm lrcpc dcpop asimddp")

# Files an unrooted phone's shell user cannot write (mode 0444 when ``rooted`` is False).
WRITABLE_CPUFREQ = ("scaling_governor", "scaling_min_freq", "scaling_max_freq",
                    "scaling_setspeed")


@dataclass(frozen=True, slots=True)
class CpuCluster:
    """CPUs sharing one cpufreq policy (``cpus[0]`` names it: ``policy4`` for 4-6)."""

    name: str
    cpus: tuple[int, ...]
    frequencies_khz: tuple[int, ...]
    part: int
    capacity: int
    governor: str = "schedutil"

    @property
    def min_khz(self) -> int:
        """Lowest operating point."""
        return min(self.frequencies_khz)

    @property
    def max_khz(self) -> int:
        """Highest operating point."""
        return max(self.frequencies_khz)

    @property
    def policy(self) -> str:
        """The policy directory name, ``policyN`` with N the first CPU."""
        return f"policy{self.cpus[0]}"


@dataclass(frozen=True, slots=True)
class ThermalZone:
    """One thermal sensor. ``share`` scales how fast and how far it heats under load (1 = the
    hottest spot); ``cpu`` zones drive thermal capping of the big clusters."""

    type: str
    share: float


def _default_clusters() -> tuple[CpuCluster, ...]:
    little = CpuCluster("little", (0, 1, 2, 3), (300_000, 576_000, 825_600, 1_094_400,
                                                 1_324_800, 1_555_200, 1_708_800, 1_800_000),
                        part=0xD05, capacity=325)
    big = CpuCluster("big", (4, 5, 6), (710_400, 960_000, 1_209_600, 1_440_000, 1_670_400,
                                        1_900_800, 2_131_200, 2_400_000),
                     part=0xD41, capacity=828)
    prime = CpuCluster("prime", (7,), (844_800, 1_171_200, 1_497_600, 1_785_600, 2_035_200,
                                       2_323_200, 2_592_000, 2_850_000),
                       part=0xD44, capacity=1024)
    return (little, big, prime)


def _default_zones() -> tuple[ThermalZone, ...]:
    return (ThermalZone("cpu-0-0-usr", 0.8), ThermalZone("cpu-1-0-usr", 1.0),
            ThermalZone("cpu-1-1-usr", 1.0), ThermalZone("gpu", 0.5),
            ThermalZone("battery", 0.25), ThermalZone("skin", 0.35))


@dataclass(frozen=True)
class DeviceProfile:
    """Identity, hardware layout and initial physical state of the stand-in phone."""

    product_name: str = "standin"
    model: str = "Standin Phone"
    manufacturer: str = "Benchlab"
    device: str = "standin"
    soc_manufacturer: str = "QTI"
    soc_model: str = "SM8350"
    board_platform: str = "lahaina"
    android_release: str = "13"
    sdk: int = 33
    serialno: str = "STANDIN0001"
    build_id: str = "TQ3A.230901.001"
    clusters: tuple[CpuCluster, ...] = field(default_factory=_default_clusters)
    thermal_zones: tuple[ThermalZone, ...] = field(default_factory=_default_zones)
    #: Features announced in the CNXN banner. shell_v2, stat_v2, ls_v2, sendrecv_v2,
    #: delayed_ack and abb are absent by default: the stand-in speaks the legacy protocols.
    #: Adding ``shell_v2`` makes it serve the shell protocol too (``shell,v2``); the others
    #: it never serves.
    features: tuple[str, ...] = ("fixed_push_mkdir", "fixed_push_symlink_timestamp")
    #: A userdebug build with ``su``; False makes cpufreq tunables mode 0444 (which root
    #: ignores: run as root, only the missing ``su`` and the properties tell them apart).
    rooted: bool = True
    charging: bool = True
    ambient_c: float = 28.0
    hot_c: float = 85.0
    throttle_c: float = 65.0
    battery_mah: int = 4500
    battery_level: int = 80
    mem_total_kb: int = 7_812_500
    reboot_seconds: float = 1.5
    extra_props: tuple[tuple[str, str], ...] = field(default=())
    #: The QEMU CPU model its programs run on (``cortex-a53``...), for an ARM phone whose
    #: pushed programs are real aarch64 code (:func:`arm_profile`); None: the host's own CPU
    #: and tools, as the stand-in always was.
    emulated_cpu: str | None = None
    #: Each CPU's caches, as its sysfs describes them.
    caches: tuple[Cache, ...] = PHONE_CACHES

    @property
    def cpu_count(self) -> int:
        """Number of CPUs over all clusters."""
        return sum(len(c.cpus) for c in self.clusters)

    def cluster_of(self, cpu: int) -> CpuCluster:
        """The cluster that holds ``cpu``."""
        for cluster in self.clusters:
            if cpu in cluster.cpus:
                return cluster
        raise KeyError(cpu)

    def core_of(self, cpu: int) -> EmulatedCpu:
        """What ``cpu`` is, as its kernel shows it: the emulated core QEMU answers for, or
        its cluster's part (variant 1, revision 0) with an ARMv8.2 phone's features."""
        if self.emulated_cpu:
            return QEMU_CORES[self.emulated_cpu]
        midr = 0x41 << 24 | 0x1 << 20 | 0xF << 16 | self.cluster_of(cpu).part << 4
        return EmulatedCpu(midr, *hwcap_words(_PHONE_FEATURES))

    def props(self) -> dict[str, str]:
        """System properties as ``getprop`` shows them at boot."""
        build_type = "userdebug" if self.rooted else "user"
        keys = "dev-keys" if self.rooted else "release-keys"
        fingerprint = (f"{self.manufacturer}/{self.product_name}/{self.device}:"
                       f"{self.android_release}/{self.build_id}/1:{build_type}/{keys}")
        props = {
            "ro.product.name": self.product_name,
            "ro.product.model": self.model,
            "ro.product.manufacturer": self.manufacturer,
            "ro.product.brand": self.manufacturer,
            "ro.product.device": self.device,
            "ro.product.board": self.board_platform,
            "ro.soc.manufacturer": self.soc_manufacturer,
            "ro.soc.model": self.soc_model,
            "ro.board.platform": self.board_platform,
            "ro.hardware": self.board_platform,
            "ro.product.cpu.abi": "arm64-v8a",
            "ro.product.cpu.abilist": "arm64-v8a,armeabi-v7a,armeabi",
            "ro.product.cpu.abilist64": "arm64-v8a",
            "ro.product.cpu.abilist32": "armeabi-v7a,armeabi",
            "ro.build.version.release": self.android_release,
            "ro.build.version.sdk": str(self.sdk),
            "ro.build.id": self.build_id,
            "ro.build.type": build_type,
            "ro.build.tags": keys,
            "ro.build.fingerprint": fingerprint,
            "ro.serialno": self.serialno,
            "ro.boot.serialno": self.serialno,
            "ro.debuggable": "1" if self.rooted else "0",
            "ro.secure": "0" if self.rooted else "1",
            "ro.kernel.version": "5.4",
            "sys.boot_completed": "1",
            "dev.bootcomplete": "1",
            "init.svc.adbd": "running",
            "persist.sys.timezone": "UTC",
        }
        if self.emulated_cpu:
            # How Android's own emulator says what it is.
            props["ro.boot.qemu"] = "1"
            props["ro.kernel.qemu"] = "1"
        props.update(dict(self.extra_props))
        return props

    def banner(self) -> bytes:
        """The CNXN identity string: ``device::`` + selected properties + features."""
        props = self.props()
        parts = [f"{key}={props[key]}" for key in
                 ("ro.product.name", "ro.product.model", "ro.product.device")]
        parts.append("features=" + ",".join(self.features))
        return ("device::" + ";".join(parts)).encode("utf-8")

    # --- the device tree ------------------------------------------------------------------

    def materialize(self, root: Path) -> None:
        """Write the booted state of this profile under ``root`` (see the module docstring)."""
        root = Path(root)
        for volatile in ("sys", "proc"):
            shutil.rmtree(root / volatile, ignore_errors=True)
        for folder in ("data/local/tmp", "data/property", "sdcard", "system/bin"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        _write(root / "data/property/props.json", json.dumps(self.props(), indent=1) + "\n")
        _write(root / "data/logcat.txt", "")
        self._write_cpus(root / "sys/devices/system/cpu")
        self._write_thermal(root / "sys/class/thermal")
        self._write_power(root / "sys/class/power_supply")
        self._write_proc(root / "proc")
        install_shims(root / "system/bin", rooted=self.rooted)
        if self.emulated_cpu:
            _link_host_tools(root / "system/xbin")

    def _write_cpus(self, base: Path) -> None:
        # What every ARM kernel writes (MIDR, topology, caches): shared with the ARM board, and
        # what an aarch64 program on an ARM phone reads in place of the host's (cpuview).
        write_cpu_tree(base, [self.core_of(cpu) for cpu in range(self.cpu_count)],
                       self.caches, [cluster.cpus for cluster in self.clusters])
        _write(base / "offline", "\n")
        for cluster in self.clusters:
            policy = base / "cpufreq" / cluster.policy
            freqs = " ".join(str(f) for f in sorted(cluster.frequencies_khz)) + " \n"
            files = {
                "scaling_governor": cluster.governor,
                "scaling_cur_freq": cluster.min_khz,
                "scaling_min_freq": cluster.min_khz,
                "scaling_max_freq": cluster.max_khz,
                "scaling_setspeed": "<unsupported>",
                "cpuinfo_min_freq": cluster.min_khz,
                "cpuinfo_max_freq": cluster.max_khz,
                "cpuinfo_cur_freq": cluster.min_khz,
                "scaling_driver": "qcom-cpufreq-hw",
                "scaling_available_governors":
                    "conservative powersave performance userspace schedutil",
                "related_cpus": " ".join(str(c) for c in cluster.cpus),
                "affected_cpus": " ".join(str(c) for c in cluster.cpus),
            }
            for name, value in files.items():
                # Read-only on an unrooted phone: the shell user cannot tune cpufreq.
                ro = not self.rooted and name in WRITABLE_CPUFREQ
                _write(policy / name, f"{value}\n", mode=0o444 if ro else 0o644)
            _write(policy / "scaling_available_frequencies", freqs)
            for cpu in cluster.cpus:
                cpu_dir = base / f"cpu{cpu}"
                cpu_dir.mkdir(parents=True, exist_ok=True)
                (cpu_dir / "cpufreq").symlink_to(f"../cpufreq/{cluster.policy}")
                _write(cpu_dir / "cpu_capacity", f"{cluster.capacity}\n")

    def _write_thermal(self, base: Path) -> None:
        for index, zone in enumerate(self.thermal_zones):
            folder = base / f"thermal_zone{index}"
            _write(folder / "type", zone.type + "\n")
            _write(folder / "temp", f"{round(self.ambient_c * 1000)}\n")
            _write(folder / "mode", "enabled\n")

    def _write_power(self, base: Path) -> None:
        battery = base / "battery"
        full_uah = self.battery_mah * 1000
        files = {
            "type": "Battery", "present": 1, "health": "Good", "technology": "Li-ion",
            "status": "Charging" if self.charging else "Discharging",
            "capacity": self.battery_level,
            "temp": round(self.ambient_c * 10),
            "voltage_now": 3_400_000 + 8_000 * self.battery_level,
            "current_now": 1_500_000 if self.charging else -80_000,
            "charge_counter": full_uah * self.battery_level // 100,
            "charge_full": full_uah,
            "charge_full_design": full_uah,
        }
        for name, value in files.items():
            _write(battery / name, f"{value}\n")
        _write(base / "usb/type", "USB\n")
        _write(base / "usb/online", f"{int(self.charging)}\n")
        _write(base / "ac/type", "Mains\n")
        _write(base / "ac/online", "0\n")

    def _write_proc(self, base: Path) -> None:
        _write(base / "cpuinfo", cpuinfo_text(
            [self.core_of(cpu) for cpu in range(self.cpu_count)], bogomips="38.40",
            hardware=f"Qualcomm Technologies, Inc {self.soc_model}"))
        _write(base / "loadavg", "0.00 0.00 0.00 1/900 1000\n")
        _write(base / "uptime", "0.00 0.00\n")
        # The page cache's switch, in the sandbox: what root writes there stays readable for
        # the tests (a real one reads back nothing), and the host's own cache is left alone.
        _write(base / "sys/vm/drop_caches", "", mode=0o600 if self.rooted else 0o400)
        total = self.mem_total_kb
        _write(base / "meminfo", (
            f"MemTotal:       {total:8d} kB\nMemFree:        {total // 4:8d} kB\n"
            f"MemAvailable:   {total // 2:8d} kB\nBuffers:        {total // 400:8d} kB\n"
            f"Cached:         {total // 5:8d} kB\nSwapTotal:      {total // 2:8d} kB\n"
            f"SwapFree:       {total // 2:8d} kB\n"))


#: The QEMU CPU models an ARM phone can emulate (:data:`benchlab_standin.cpuview.QEMU_CORES`:
#: MIDR_EL1 and hwcaps as the emulated core answers).
ARM_CORES = QEMU_CORES
#: Each model's caches: an A53's cluster L2; an A76's private L2 and a shared L3.
_ARM_CACHES = {"cortex-a53": LITTLE_CORE_CACHES, "cortex-a76": PHONE_CACHES}
# Host programs a phone's shell has no counterpart of, and must not find: no Python on a phone.
_NOT_ON_A_PHONE = ("python", "pip", "pydoc", "idle", "2to3")


def _link_host_tools(folder: Path) -> None:
    """The shell tools of an ARM stand-in: the host's (its shell is the host's), without
    Python, so that nothing benchlab starts there can fall back on it."""
    folder.mkdir(parents=True, exist_ok=True)
    for source in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        try:
            names = os.listdir(source)
        except OSError:
            continue
        for name in names:
            link = folder / name
            if name.startswith(_NOT_ON_A_PHONE) or link.is_symlink() or link.exists():
                continue
            link.symlink_to(os.path.join(source, name))


def arm_profile(cpu: str = "cortex-a53", *, cores: int = 4) -> DeviceProfile:
    """An ARM phone whose programs run on an emulated ``cpu`` (QEMU's model name): ``cores``
    cores in one cluster, Cortex-A53 at 1.4 GHz (the edge study's most common phone core) or
    Cortex-A76 at 2.4 GHz (ARMv8.2, with the dot-product instructions)."""
    if cpu not in ARM_CORES:
        raise ValueError(f"no ARM stand-in for {cpu!r}; there are {', '.join(ARM_CORES)}")
    part = ARM_CORES[cpu].midr >> 4 & 0xFFF
    top = 1_401_600 if cpu == "cortex-a53" else 2_400_000
    cluster = CpuCluster("cpu", tuple(range(cores)),
                         tuple(top * k // 8 for k in range(2, 9)), part=part, capacity=1024)
    name = cpu.replace("cortex-", "")
    return DeviceProfile(product_name=f"standin_{name}", model=f"Standin {name.upper()}",
                         device=f"standin_{name}", soc_model=f"EMU-{name.upper()}",
                         board_platform="qemu", serialno=f"STANDIN{name.upper()}",
                         clusters=(cluster,), emulated_cpu=cpu, caches=_ARM_CACHES[cpu],
                         mem_total_kb=3_906_250)


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        # A previous boot may have left it read-only; root could write anyway, others not.
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    path.write_text(text)
    os.chmod(path, mode)


def default_profile() -> DeviceProfile:
    """A big.LITTLE phone: cpu0-3 little (1.8 GHz), cpu4-6 big (2.4 GHz), cpu7 prime (2.85)."""
    return DeviceProfile()
