"""What this machine is and can do, asked of the machine itself, for the tests whose right
answer depends on it (CPU instructions, what a runtime runs natively, installed versions).

Such a test asks here, checks what is right for the machine it runs on and names the case it
took with the ``machine_case`` fixture (tests/conftest.py): the session's header prints the facts
below and its summary lists every case taken, so a run on another CPU says what it checked.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.utils import canonicalize_name

from benchlab.targets.environment import (
    capture_host_environment,
    cpu_features,
    package_versions,
)

LOCK = Path(__file__).parent.parent / "requirements" / "lock.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")

__all__ = [
    "LOCK",
    "cpu_flags",
    "has_int8_dot_product",
    "header_lines",
    "lock_differences",
    "locked_versions",
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
    if importlib.util.find_spec("openvino") is None:
        return frozenset()
    # Asked in a child process, so the session header does not load OpenVINO (and its
    # threading runtime) into every test's process ahead of the others.
    probe = ("import json, openvino as ov; print(json.dumps(ov.Core().get_property("
             "'CPU', 'OPTIMIZATION_CAPABILITIES')))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    return frozenset(json.loads(proc.stdout.strip().splitlines()[-1]))


def openvino_runs_bf16() -> bool:
    """Whether OpenVINO honours a bf16 precision request on this CPU."""
    return "BF16" in openvino_capabilities()


def version(distribution: str) -> str | None:
    """The installed version of a distribution, None when it is absent."""
    return package_versions((distribution,))[distribution]


def locked_versions() -> dict[str, str]:
    """``requirements/lock.txt`` as {canonical name: version}; a line that is not an exact pin
    raises ``ValueError``."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _PIN.match(line.strip())
        if match is None:
            raise ValueError(f"{LOCK}: not an exact pin: {line!r}")
        pins[canonicalize_name(match[1])] = match[2]
    return pins


def lock_differences() -> dict[str, tuple[str, str | None]]:
    """Locked packages installed at another version, or absent: {name: (locked, installed)}."""
    return {name: (pinned, installed) for name, pinned in locked_versions().items()
            if (installed := version(name)) != pinned}


def header_lines() -> list[str]:
    """The facts the machine-dependent tests decide on, for the session header."""
    runtimes = ", ".join(
        f"{name} {version(name) or 'absent'}"
        for name in ("torch", "onnxruntime", "openvino", "executorch", "ai-edge-litert")
    )
    return [
        f"machine: {capture_host_environment()['cpu_model'] or 'unknown CPU'}, {len(os.sched_getaffinity(0))} CPUs usable; "
        f"flags: {' '.join(sorted(cpu_flags())) or 'none read'}",
        f"machine: int8 dot product {'yes' if has_int8_dot_product() else 'no'}; OpenVINO "
        f"CPU capabilities: {' '.join(sorted(openvino_capabilities())) or 'none'}",
        f"machine: {runtimes}",
        f"machine: {_lock_line()}",
    ]


def _lock_line() -> str:
    differ = lock_differences()
    if not differ:
        return f"installed exactly as requirements/lock.txt pins ({len(locked_versions())})"
    shown = ", ".join(f"{n} {i or 'absent'} (lock {p})" for n, (p, i) in sorted(differ.items()))
    return f"{len(differ)} packages differ from requirements/lock.txt: {shown}"
