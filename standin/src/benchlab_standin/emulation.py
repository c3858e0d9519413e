"""An emulated ARM CPU for the stand-in phone: QEMU's user-mode emulator through binfmt_misc.

A program pushed to an ARM stand-in is a real aarch64 program. The kernel runs it through
Debian's ``qemu-aarch64-static`` once that interpreter is registered with ``binfmt_misc``
(Debian's ``/usr/lib/binfmt.d/qemu-aarch64.conf``, flags ``OPF``: the interpreter is opened
once, so it works in any mount namespace). The CPU model comes from ``QEMU_CPU`` in the phone's
environment: ``cortex-a53`` (ARMv8.0, no dot product) or ``cortex-a76`` (ARMv8.2 with it).

Registering is a change to the machine, not to a process: only root may do it, and it stays
until the next boot. :func:`enable_aarch64` does it where it may and says why not otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["BINFMT", "aarch64_ready", "enable_aarch64"]

BINFMT = Path("/proc/sys/fs/binfmt_misc")
_ENTRY = BINFMT / "qemu-aarch64"
_CONF = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")
_EMULATOR = "qemu-aarch64-static"


def aarch64_ready() -> str | None:
    """None when aarch64 programs run here, else why not."""
    if shutil.which(_EMULATOR) is None:
        return f"{_EMULATOR} is not installed (apt-get install qemu-user-static)"
    try:
        state = _ENTRY.read_text()
    except OSError:
        return ("aarch64 programs are not registered with binfmt_misc "
                f"({_ENTRY} is missing)")
    if not state.startswith("enabled"):
        return f"the aarch64 binfmt_misc entry is disabled ({_ENTRY})"
    return None


def enable_aarch64() -> str | None:
    """Register Debian's aarch64 emulator with binfmt_misc where root may; None when aarch64
    programs run here afterwards, else why not."""
    why = aarch64_ready()
    if why is None or shutil.which(_EMULATOR) is None:
        return why
    if os.geteuid() != 0:
        return why + "; registering it needs root"
    if not (BINFMT / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)],
                       capture_output=True, check=False)
    if not (BINFMT / "register").exists():
        return why + f"; binfmt_misc cannot be mounted at {BINFMT}"
    try:
        line = next(raw for raw in _CONF.read_text().splitlines()
                    if raw.strip() and not raw.startswith("#"))
    except (OSError, StopIteration):
        return why + f"; {_CONF} (from qemu-user-static) is missing"
    try:
        (BINFMT / "register").write_text(line)
    except OSError as exc:
        if aarch64_ready() is None:
            return None  # another process registered it meanwhile
        return why + f"; registering failed: {exc.strerror}"
    return aarch64_ready()
