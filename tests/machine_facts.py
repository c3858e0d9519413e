"""What this machine is and can do, asked of the machine itself, for the tests whose right
answer depends on it (CPU instructions, what a runtime runs natively, installed versions).

Such a test asks here, checks what is right for the machine it runs on and names the case it
took with the ``machine_case`` fixture (tests/conftest.py): the session's header prints the facts
below and its summary lists every case taken, so a run on another CPU says what it checked.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
from pathlib import Path

from benchlab.environment import cpu_features

__all__ = [
    "cpu_flags",
    "has_int8_dot_product",
    "header_lines",
    "openvino_capabilities",
    "openvino_runs_bf16",
    "version",
]


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The inference-relevant CPU flags of this machine (benchlab's own reader)."""
    return frozenset(cpu_features())


def has_int8_dot_product() -> bool:
    """Whether int8 dot products run without saturating int16 pairs (x86 VNNI, ARM dot product)."""
    return bool(cpu_flags() & {"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"})


@functools.cache
def openvino_capabilities() -> frozenset[str]:
    """What OpenVINO's CPU plugin says it runs natively here (``OPTIMIZATION_CAPABILITIES``).

    Empty when OpenVINO is not installed. ``BF16`` is listed only where the CPU has bf16
    arithmetic (AVX512_BF16 or AMX); elsewhere a bf16 request is compiled as f32.
    """
    try:
        import openvino as ov
    except ImportError:
        return frozenset()
    return frozenset(ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))


def openvino_runs_bf16() -> bool:
    """Whether OpenVINO honours a bf16 precision request on this CPU."""
    return "BF16" in openvino_capabilities()


def version(distribution: str) -> str | None:
    """The installed version of a distribution, None when it is absent."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def header_lines() -> list[str]:
    """The facts the machine-dependent tests decide on, for the session header."""
    runtimes = ", ".join(
        f"{name} {version(name) or 'absent'}"
        for name in ("torch", "onnxruntime", "openvino", "executorch", "ai-edge-litert")
    )
    return [
        f"machine: {_cpu_model()}, {len(os.sched_getaffinity(0))} CPUs usable; "
        f"flags: {' '.join(sorted(cpu_flags())) or 'none read'}",
        f"machine: int8 dot product {'yes' if has_int8_dot_product() else 'no'}; OpenVINO "
        f"CPU capabilities: {' '.join(sorted(openvino_capabilities())) or 'none'}",
        f"machine: {runtimes}",
    ]
