"""The static facts of the machine a result was measured on.

Everything is read from ``/proc`` and package metadata; nothing here imports a runtime
(versions come from ``importlib.metadata``), so capturing is cheap and safe. Fields that
cannot be read on this machine are ``None`` rather than guessed. Device state (frequencies,
temperatures, load) has one reader for every target, host included: ``targets/probe.py``.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
from pathlib import Path
from typing import Any

from benchlab.schema.result import EnvKey

__all__ = [
    "INFERENCE_CPU_FEATURES",
    "RUNTIME_PACKAGES",
    "capture_host_environment",
    "cpu_features",
    "device_summary",
    "int8_instructions",
    "memory_layout",
    "package_versions",
    "parse_cpu_list",
]

# Distributions whose versions are worth recording beside every result.
RUNTIME_PACKAGES = (
    "benchlab", "numpy", "torch", "onnxruntime", "onnx", "ai-edge-litert", "executorch",
    "openvino",
)

#: CPU flags (as /proc/cpuinfo spells them) that change which kernels a runtime picks, and so
#: its speed and sometimes its numbers: int8 dot products (VNNI, ARM dot product and i8mm),
#: native bf16/fp16 arithmetic, and the vector widths.
INFERENCE_CPU_FEATURES = frozenset({
    # x86-64
    "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16", "amx_fp16",
    # aarch64
    "asimd", "asimddp", "asimdhp", "i8mm", "bf16", "sve", "sve2", "sme",
})

#: The int8 instructions a kernel library can choose between, strongest first. Which one a
#: runtime's int8 kernels use decides how they accumulate and round, and so whether two
#: devices' int8 answers to the same model can differ.
_INT8_LEVELS = (
    ("amx_int8", "AMX (x86 tile int8)"), ("avx512_vnni", "AVX-512 VNNI (VPDPBUSD)"),
    ("avx_vnni", "AVX-VNNI (VPDPBUSD)"), ("avx2", "AVX2 without VNNI"),
    ("i8mm", "i8mm (SMMLA)"), ("asimddp", "dot product (SDOT)"),
    ("asimd", "NEON without dot product"),
)



def parse_cpu_list(text: str) -> set[int]:
    """Parse a Linux CPU list such as ``"0-2,5"`` into ``{0, 1, 2, 5}``.

    Raises ``ValueError`` with the offending text when it is malformed.
    """
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = part.split("-", 1)
                first, last = int(lo), int(hi)
                if last < first:
                    raise ValueError
                cpus.update(range(first, last + 1))
            else:
                cpus.add(int(part))
        except ValueError:
            raise ValueError(f"bad CPU list {text!r}: expected e.g. '0-1,3'") from None
    if not cpus or min(cpus) < 0:
        raise ValueError(f"bad CPU list {text!r}: expected e.g. '0-1,3'")
    return cpus


def package_versions(names: tuple[str, ...] = RUNTIME_PACKAGES) -> dict[str, str | None]:
    """Installed versions of the given distributions, ``None`` for missing ones."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cpu_features(cpuinfo: str | None = None) -> list[str]:
    """The :data:`INFERENCE_CPU_FEATURES` this CPU has, sorted (``cpuinfo``: the text to read).

    Reads the first ``flags`` (x86) or ``Features`` (ARM) line of ``/proc/cpuinfo``; an empty
    list when there is none to read.
    """
    text = cpuinfo if cpuinfo is not None else (_read(Path("/proc/cpuinfo")) or "")
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() in ("flags", "features"):
            return sorted(set(value.split()) & INFERENCE_CPU_FEATURES)
    return []


def int8_instructions(features: list[str] | set[str]) -> str | None:
    """The strongest int8 instructions among a CPU's ``features`` (``/proc/cpuinfo``'s names),
    ``None`` when the features were not read."""
    if not features:
        return None
    return next((label for feature, label in _INT8_LEVELS if feature in features), "none")


def _cpu_model() -> str | None:
    text = _read(Path("/proc/cpuinfo")) or ""
    for line in text.splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def capture_host_environment() -> dict[str, Any]:
    """The static facts of this machine: identity, CPU, its ISA flags, package versions.

    What changes while benchmarks run (frequencies, governors, temperatures, load, battery)
    is device state, read on every target alike by :mod:`benchlab.targets.probe`.
    """
    features = cpu_features()
    return {
        EnvKey.HOSTNAME: socket.gethostname(),
        EnvKey.OS: platform.platform(),
        EnvKey.KERNEL: platform.release(),
        EnvKey.MACHINE: platform.machine(),
        "python": platform.python_version(),
        EnvKey.CPU_MODEL: _cpu_model(),
        EnvKey.CPU_COUNT: os.cpu_count(),
        EnvKey.CPU_FEATURES: features,
        EnvKey.INT8_INSTRUCTIONS: int8_instructions(features),
        EnvKey.CPUS_ALLOWED: sorted(os.sched_getaffinity(0)),
        EnvKey.PACKAGES: package_versions(),
        EnvKey.MEMORY_LAYOUT: memory_layout(),
    }


def memory_layout() -> dict[str, str | None]:
    """What decides where a process's memory lands, which moves timings between identical
    processes (docs/statistics.md, "Where the spread comes from"): address-space
    randomisation (``/proc/sys/kernel/randomize_va_space``: 2 on, 0 off) and transparent huge
    pages (the bracketed mode of ``/sys/kernel/mm/transparent_hugepage/enabled``). ``None``
    where the file does not exist."""
    aslr = _read(Path("/proc/sys/kernel/randomize_va_space"))
    thp = _read(Path("/sys/kernel/mm/transparent_hugepage/enabled"))
    mode = None
    if thp and "[" in thp:
        mode = thp.split("[", 1)[1].split("]", 1)[0]
    return {"aslr": aslr.strip() if aslr else None, "transparent_hugepages": mode}


def device_summary(device: dict[str, Any]) -> str:
    """One line saying what a target's device is: CPU/SoC, cores, clusters, OS, heat, battery."""
    parts: list[str] = []
    if device.get(EnvKey.TARGET) == "adb":
        parts.append(f"{device.get(EnvKey.MANUFACTURER) or ''} "
                     f"{device.get(EnvKey.MODEL) or '?'}".strip())
        soc_names = (device.get(EnvKey.SOC_MANUFACTURER), device.get(EnvKey.SOC_MODEL))
        soc = (" ".join(str(x) for x in soc_names if x) or device.get(EnvKey.BOARD)
               or device.get(EnvKey.HARDWARE))
        parts += [f"SoC {soc}" if soc else "", device.get(EnvKey.ABI) or "",
                  f"Android {device.get(EnvKey.ANDROID)} (SDK {device.get(EnvKey.SDK)})"]
    else:
        parts += [device.get(EnvKey.HOSTNAME) or "", device.get(EnvKey.CPU_MODEL) or "",
                  device.get(EnvKey.OS) or ""]
    clusters = device.get(EnvKey.CLUSTERS) or []
    if clusters:
        parts.append(" + ".join(
            f"{_count(c['cpus'])}×{c['hw_max_khz'] / 1e6:.2f} GHz" for c in clusters
        ))
    elif device.get(EnvKey.CPU_COUNT):
        parts.append(f"{device[EnvKey.CPU_COUNT]} cores")
    temps = device.get(EnvKey.TEMPERATURES_C) or {}
    parts.append(f"max {max(temps.values()):.1f} °C" if temps else "temperatures unreadable")
    battery = device.get(EnvKey.BATTERY)
    if battery:
        parts.append(f"battery {battery.get('level_percent')}% {battery.get('status') or ''}"
                     .strip())
    return " · ".join(p for p in parts if p)


def _count(cpu_list: str) -> int:
    return len(parse_cpu_list(cpu_list))
