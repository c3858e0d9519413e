"""An ARM kernel's view of its CPUs, as files, for the stand-ins' emulated cores.

Under QEMU's user mode (Debian 12: QEMU 7.2) an aarch64 program that opens ``/proc/cpuinfo``
or ``/sys/devices/system/cpu`` reads the *host's* files: an x86-64 CPU beside the ARM core it
runs on. pytorch's cpuinfo (inside ONNX Runtime and XNNPACK) crashes on that mix. Both
stand-ins therefore write what an arm64 kernel would show, here, from one description of the
core (:class:`EmulatedCpu`: MIDR_EL1 and the hwcap words):

* the ARM board (:mod:`benchlab_standin.armboard`) mounts them into its root for its sshd;
* the ARM phone (:mod:`benchlab_standin.adbd`) mounts its sandbox's copies over the host's
  paths in a private mount namespace per shell command (:func:`private_view_argv`), so every
  process of that command, whatever path text it opens, sees the phone's CPU, and the host's
  own files are never touched. That needs root; without it the phone says so once and its
  programs read the host's files, as before (:func:`cannot_mount_views`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlab.targets.armcpu import hwcap_features

__all__ = ["LITTLE_CORE_CACHES", "QEMU_CORES", "Cache", "EmulatedCpu", "cannot_mount_views",
           "cpuinfo_text", "hwcap_words", "private_view_argv", "write_cpu_tree",
           "write_cpuinfo", "write_sysfs"]


@dataclass(frozen=True, slots=True)
class EmulatedCpu:
    """The emulated core as a program on it reads it."""

    midr: int
    hwcap: int
    hwcap2: int = 0


@dataclass(frozen=True, slots=True)
class Cache:
    """One cache of every CPU, as ``cpuN/cache/indexK`` describes it (``shared``: one cache
    for every CPU of the package, else one per CPU)."""

    level: int
    kind: str
    size: str
    shared: bool


#: What Debian 12's QEMU answers for its models (``mrs x0, midr_el1`` and
#: ``getauxval(AT_HWCAP)`` in a static program, QEMU_CPU set): a phone has no Python to ask
#: the core as the board does, so its answer is kept here. A real kernel adds ``evtstrm``
#: (its timer event stream), which QEMU's user mode does not announce.
QEMU_CORES = {
    "cortex-a53": EmulatedCpu(0x410FD034, 0x8FB),     # r0p4; ARMv8.0, no dot product
    "cortex-a76": EmulatedCpu(0x414FD0B1, 0x119FFB),  # r4p1; ARMv8.2 with asimddp
}

#: A typical little core's caches (32K L1s and a 512K L2 for the cluster): the board's, and the
#: Cortex-A53 phone's. Not measured: QEMU models no cache; OpenVINO's hwloc crashes on a CPU
#: that has none.
LITTLE_CORE_CACHES = (Cache(1, "Data", "32K", False), Cache(1, "Instruction", "32K", False),
                      Cache(2, "Unified", "512K", True))


def hwcap_words(features: str) -> tuple[int, int]:
    """``AT_HWCAP`` and ``AT_HWCAP2`` for ``/proc/cpuinfo`` feature names (the inverse of
    :func:`benchlab.targets.armcpu.hwcap_features`)."""
    wanted = set(features.split())
    words = [0, 0]
    for word in (0, 1):
        for bit in range(64):
            named = hwcap_features(1 << bit if word == 0 else 0, 1 << bit if word else 0)
            if named and named[0] in wanted:
                words[word] |= 1 << bit
                wanted.discard(named[0])
    if wanted:
        raise ValueError(f"no hwcap bit for {' '.join(sorted(wanted))}")
    return words[0], words[1]


def cpuinfo_text(cores: Sequence[EmulatedCpu], *, bogomips: str = "50.00",
                 hardware: str | None = None) -> str:
    """``/proc/cpuinfo`` as an arm64 Linux kernel prints it, one block per CPU (``Features``
    from the hwcaps, the ID fields from MIDR_EL1), with Android's ``Hardware`` line if given."""
    blocks = []
    for index, core in enumerate(cores):
        features = " ".join(hwcap_features(core.hwcap, core.hwcap2))
        blocks.append(f"processor\t: {index}\nBogoMIPS\t: {bogomips}\nFeatures\t: {features}\n"
                      f"CPU implementer\t: 0x{core.midr >> 24 & 0xFF:02x}\n"
                      f"CPU architecture: 8\nCPU variant\t: 0x{core.midr >> 20 & 0xF:x}\n"
                      f"CPU part\t: 0x{core.midr >> 4 & 0xFFF:03x}\n"
                      f"CPU revision\t: {core.midr & 0xF}\n")
    tail = f"\nHardware\t: {hardware}\n" if hardware else "\n"
    return "\n".join(blocks) + tail


def write_cpuinfo(path: Path, core: EmulatedCpu, count: int) -> None:
    """The board's ``/proc/cpuinfo``: ``count`` CPUs of one core."""
    path.write_text(cpuinfo_text([core] * count))


def _cpu_list(cpus: Sequence[int]) -> str:
    """A kernel CPU list: ``0-3``, ``7``, ``0-1,4``."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


def _cpu_mask(cpus: Sequence[int]) -> str:
    return f"{sum(1 << cpu for cpu in cpus):x}"


def write_cpu_tree(cpus: Path, cores: Sequence[EmulatedCpu], caches: Sequence[Cache],
                   clusters: Sequence[Sequence[int]] | None = None) -> None:
    """``/sys/devices/system/cpu`` as an ARM kernel writes it, into ``cpus`` (created, not
    emptied): which CPUs exist, each one's ``MIDR_EL1``, topology (one package, ``clusters``
    of CPUs, default one) and caches. No frequency files: a caller with a clock adds them.

    With none of this, pytorch's cpuinfo gives up (XNNPACK with it) and OpenVINO's hwloc
    crashes; ExecuTorch's cpuinfo_utils reads the MIDR files to tell cores apart.
    """
    every = list(range(len(cores)))
    groups = [list(group) for group in clusters] if clusters else [every]
    cpus.mkdir(parents=True, exist_ok=True)
    for name in ("possible", "present", "online"):
        (cpus / name).write_text(_cpu_list(every) + "\n")
    for cluster_id, group in enumerate(groups):
        for index in group:
            cpu = cpus / f"cpu{index}"
            regs = cpu / "regs" / "identification"
            regs.mkdir(parents=True, exist_ok=True)
            (regs / "midr_el1").write_text(f"0x{cores[index].midr:016x}\n")
            (cpu / "online").write_text("1\n")
            # One package, one core per CPU: hwloc (in OpenVINO's TBB) reads this or gives up.
            topology = cpu / "topology"
            topology.mkdir(exist_ok=True)
            for name, value in (("core_id", index), ("physical_package_id", 0),
                                ("cluster_id", cluster_id), ("die_id", 0),
                                ("core_siblings_list", _cpu_list(every)),
                                ("package_cpus_list", _cpu_list(every)),
                                ("cluster_cpus_list", _cpu_list(group)),
                                ("thread_siblings_list", index), ("core_cpus_list", index),
                                ("package_cpus", _cpu_mask(every)),
                                ("core_cpus", _cpu_mask([index]))):
                (topology / name).write_text(f"{value}\n")
            for number, cache in enumerate(caches):
                folder = cpu / "cache" / f"index{number}"
                folder.mkdir(parents=True, exist_ok=True)
                sharing = every if cache.shared else [index]
                for name, value in (("level", cache.level), ("type", cache.kind),
                                    ("size", cache.size), ("coherency_line_size", 64),
                                    ("id", 0 if cache.shared else index),
                                    ("shared_cpu_list", _cpu_list(sharing)),
                                    ("shared_cpu_map", _cpu_mask(sharing))):
                    (folder / name).write_text(f"{value}\n")


def write_sysfs(folder: Path, core: EmulatedCpu, count: int) -> None:
    """The board's ``/sys``: ``devices/system/cpu`` (:func:`write_cpu_tree`, ``count`` CPUs of
    one core with :data:`LITTLE_CORE_CACHES`) and one memory node. The folder is emptied."""
    shutil.rmtree(folder, ignore_errors=True)
    write_cpu_tree(folder / "devices" / "system" / "cpu", [core] * count, LITTLE_CORE_CACHES)
    span = _cpu_list(range(count))
    node = folder / "devices" / "system" / "node"
    (node / "node0").mkdir(parents=True)
    (node / "node0" / "cpulist").write_text(span + "\n")
    (node / "node0" / "cpumap").write_text(_cpu_mask(range(count)) + "\n")
    for name in ("possible", "online", "has_cpu", "has_memory", "has_normal_memory"):
        (node / name).write_text("0\n")


# --- a private view per process --------------------------------------------------------------

# Mounts the view, then becomes the command: ``exec`` keeps one process (the group leader the
# stand-in kills) from unshare to the command; its exit status is the command's.
_PRELUDE = ('mount --bind "$1" /proc/cpuinfo && mount --bind "$2" /sys/devices/system/cpu '
            '&& shift 2 && exec "$@"')


def private_view_argv(cpuinfo: Path, cpus: Path, argv: Sequence[str]) -> list[str]:
    """``argv`` run in a mount namespace of its own where ``cpuinfo`` is ``/proc/cpuinfo`` and
    ``cpus`` is ``/sys/devices/system/cpu``: binds, not copies, so what the phone's simulation
    writes there later (frequencies) is what its programs read. The mounts leave with the
    namespace, when its last process ends; the host's namespace never has them."""
    # Absolute paths: the phone's PATH points into its sandbox, not at the host's tools.
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    mount = shutil.which("mount") or "/usr/bin/mount"
    prelude = _PRELUDE.replace("mount --bind", f"{mount} --bind")
    return [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", prelude,
            "cpu-view", str(cpuinfo), str(cpus), *argv]


def cannot_mount_views(cpuinfo: Path, cpus: Path) -> str | None:
    """None when :func:`private_view_argv` works here (tried once: ``cat /proc/cpuinfo`` must
    print ``cpuinfo``); else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed (util-linux)"
    if os.geteuid() != 0:
        return "a private mount namespace with bind mounts (unshare -m) needs root"
    try:
        done = subprocess.run(private_view_argv(cpuinfo, cpus, ["cat", "/proc/cpuinfo"]),
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare -m did not run: {exc}"
    if done.returncode != 0 or done.stdout != cpuinfo.read_bytes():
        said = done.stderr.decode(errors="replace").strip()[-300:]
        return f"unshare -m with bind mounts failed (exit {done.returncode}): {said}"
    return None
