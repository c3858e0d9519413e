"""The C and C++ compilers that build a device's tools, found on this machine.

benchlab uses Debian's GNU cross compilers (``g++-aarch64-linux-gnu``...): tried beside Zig's
``zig c++`` (``ziglang`` on PyPI), they build llama.cpp as a static aarch64 program with the
distribution's CMake and no wrapper scripts, and the binary runs from ``/data/local/tmp``
without Android's libc (docs/targets.md says what was compared). For the host's own
architecture the host's ``gcc``/``g++`` serve.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from dataclasses import dataclass

from benchlab.devicetools.elf import ABI_ARCHITECTURES
from benchlab.errors import InfrastructureError

__all__ = ["Toolchain", "find_toolchain", "gnu_triplet", "host_architecture"]

#: Architecture → (its GNU triplet: the cross compilers' prefix and Debian's multiarch
#: folder, the Debian package that installs its cross compiler).
_CROSS = {
    "aarch64": ("aarch64-linux-gnu", "g++-aarch64-linux-gnu"),
    "arm": ("arm-linux-gnueabihf", "g++-arm-linux-gnueabihf"),
    "x86_64": ("x86_64-linux-gnu", "g++-x86-64-linux-gnu"),
    "riscv64": ("riscv64-linux-gnu", "g++-riscv64-linux-gnu"),
}


@dataclass(frozen=True, slots=True)
class Toolchain:
    """A C and a C++ compiler that build programs for ``architecture``."""

    architecture: str
    cc: str
    cxx: str
    #: The C++ compiler's first ``--version`` line: part of a build's cache key.
    version: str
    #: Where it comes from (a Debian package, or the host's compiler).
    source: str

    def cmake_args(self) -> list[str]:
        """CMake settings that point a build at these compilers (cross compiling when the
        architecture is not the host's)."""
        args = [f"-DCMAKE_C_COMPILER={self.cc}", f"-DCMAKE_CXX_COMPILER={self.cxx}"]
        if self.architecture != host_architecture():
            args += ["-DCMAKE_SYSTEM_NAME=Linux",
                     f"-DCMAKE_SYSTEM_PROCESSOR={self.architecture}"]
        return args


def gnu_triplet(architecture: str) -> str:
    """``architecture``'s GNU triplet (``aarch64-linux-gnu``): what its cross compilers are
    prefixed with, and the folder under ``usr/lib`` Debian's packages of it install into."""
    return _CROSS.get(architecture, (f"{architecture}-linux-gnu", None))[0]


def host_architecture() -> str:
    """This machine's architecture in benchlab's names (``x86_64``, ``aarch64``...)."""
    machine = platform.machine().lower()
    return ABI_ARCHITECTURES.get(machine, machine)


def _version(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                             timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0].strip() if out.strip() else "unknown"


def find_toolchain(architecture: str) -> Toolchain:
    """The compilers for ``architecture``; :class:`InfrastructureError` naming the package to
    install when there are none."""
    prefix, package = f"{gnu_triplet(architecture)}-", _CROSS.get(architecture, ("", None))[1]
    cc, cxx = shutil.which(f"{prefix}gcc"), shutil.which(f"{prefix}g++")
    source = package or f"{prefix}g++"
    if (cc is None or cxx is None) and architecture == host_architecture():
        cc, cxx, source = shutil.which("gcc"), shutil.which("g++"), "the host's g++"
    if cc is None or cxx is None:
        install = (f"install Debian's {package} (apt-get install {package})" if package
                   else "install a GNU cross compiler for it")
        raise InfrastructureError(f"no C++ compiler builds for {architecture} here: {install}")
    return Toolchain(architecture, cc, cxx, _version(cxx), source)
