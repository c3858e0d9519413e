"""Which CPU a program is built for, read from its ELF header, and which a device runs.

A phone names its instruction set by Android ABI (``getprop ro.product.cpu.abi``: ``arm64-v8a``),
a Linux board by machine (``uname -m``: ``aarch64``); an ELF file by ``e_machine``. benchlab
checks a native tool against the device before pushing it: a phone would only say "not
executable" (or, under some shells, nothing useful) after the push.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchlab.errors import UsageError
from benchlab.schema.result import EnvKey

__all__ = ["ABI_ARCHITECTURES", "ANDROID_ABIS", "abi_of", "architecture_of_abi", "elf_architecture",
           "is_android_abi", "refuse_wrong_architecture"]

#: ELF ``e_machine`` → benchlab's architecture name.
_MACHINES = {3: "x86", 40: "arm", 62: "x86_64", 183: "aarch64", 243: "riscv64"}

#: Android ABIs and Linux machine names → the architecture an ELF file must have.
ABI_ARCHITECTURES = {
    "arm64-v8a": "aarch64", "aarch64": "aarch64", "arm64": "aarch64",
    "armeabi-v7a": "arm", "armeabi": "arm", "armv7l": "arm", "armv8l": "arm",
    "x86_64": "x86_64", "amd64": "x86_64", "x86": "x86", "i686": "x86", "i386": "x86",
    "riscv64": "riscv64",
}


#: The ABIs only Android names so (a Linux machine says aarch64, armv7l): a device whose C
#: library is bionic, not glibc.
ANDROID_ABIS = frozenset({"arm64-v8a", "armeabi-v7a", "armeabi"})


def is_android_abi(abi: str | None) -> bool:
    """Whether ``abi`` is one only Android names so."""
    return str(abi).lower() in ANDROID_ABIS


def abi_of(description: Mapping[str, Any]) -> str | None:
    """A described device's instruction set as it names it: a phone's ABI, else a machine's
    ``uname -m`` (a target's :meth:`describe` or a result's environment)."""
    return description.get(EnvKey.ABI) or description.get(EnvKey.MACHINE)


def architecture_of_abi(abi: str | None) -> str | None:
    """``arm64-v8a`` or ``aarch64`` → ``aarch64``; None for an unknown or missing ABI."""
    return ABI_ARCHITECTURES.get((abi or "").strip().lower())


def elf_architecture(path: Path) -> str | None:
    """The architecture ``path`` is built for, or None when it is not an ELF file (a script).

    An ELF file of a machine benchlab has no name for reads as ``machine <number>``.
    """
    try:
        with open(path, "rb") as handle:
            header = handle.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    order = "<" if header[5] == 1 else ">"
    (machine,) = struct.unpack_from(order + "H", header, 18)
    return _MACHINES.get(machine, f"machine {machine}")


def refuse_wrong_architecture(path: Path, abi: str | None, *, device: str = "the device") -> None:
    """Raise :class:`UsageError` when ``path`` is a program for another CPU than ``abi``'s,
    naming both; a script, or a device whose ABI is unknown, passes."""
    wanted = architecture_of_abi(abi)
    built = elf_architecture(path)
    if wanted is None or built is None or built == wanted:
        return
    raise UsageError(f"{path} is built for {built}, and {device} runs {abi} ({wanted}): "
                     f"it would not start there; build it for {wanted} (nothing was pushed)")
