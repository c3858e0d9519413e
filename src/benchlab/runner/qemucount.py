"""Counted instructions on an emulated ARM core: QEMU's user-mode emulator with benchlab's
plugin (``benchlab/data/qemu_count.c``), for aarch64 programs run from an x86-64 host.

The plugin adds every translated block's instruction count as the block runs, and writes the
instructions executed between a program's begin and end marks (a system call no kernel has,
``BENCHLAB_COUNTED`` in ``benchlab_step.h``) to a file, one line per counted call. Built on
first use with the host's C compiler and kept under the user's cache; QEMU's plugin interface
needs a dynamically linked emulator (Debian's ``qemu-user``: ``qemu-aarch64-static`` is built
without plugins). Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib.resources import files
from pathlib import Path

from benchlab.runner.counting import CountingUnavailable

__all__ = ["QEMU", "plugin_library", "qemu_argv", "qemu_version"]

#: The emulator whose plugin interface counts: Debian's dynamically linked qemu-user build.
QEMU = "qemu-aarch64"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchlab" / "qemu-count"


def plugin_library(cache: Path | None = None) -> Path:
    """The built plugin, compiled on first use (one folder per source hash, swapped in
    whole, so a concurrent build never hands out half a library)."""
    source = files("benchlab").joinpath("data", "qemu_count.c").read_bytes()
    folder = (cache or _cache_root()) / hashlib.sha256(source).hexdigest()[:16]
    library = folder / "libqemu_count.so"
    if library.is_file():
        return library
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        raise CountingUnavailable("building benchlab's QEMU plugin needs a C compiler on this "
                              "host (Debian: apt-get install gcc)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=folder.parent))
    try:
        (scratch / "qemu_count.c").write_bytes(source)
        built = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "qemu_count.c", "-o",
                                "libqemu_count.so"], cwd=scratch, capture_output=True,
                               text=True, timeout=300)
        if built.returncode != 0:
            raise CountingUnavailable(f"building benchlab's QEMU plugin failed: "
                                  f"{built.stderr.strip()[-300:]}")
        try:
            os.rename(scratch, folder)
        except OSError:
            if not library.is_file():  # not another process's finished build: a real fault
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return library


def qemu_version() -> str:
    """The emulator's version line, after checking it can load plugins."""
    if shutil.which(QEMU) is None:
        raise CountingUnavailable(f"counting an aarch64 program here needs {QEMU} with plugin "
                              "support (Debian: apt-get install qemu-user; its "
                              "qemu-aarch64-static is built without plugins)")
    said = subprocess.run([QEMU, "-h"], capture_output=True, text=True, timeout=60)
    if "-plugin" not in said.stdout:
        raise CountingUnavailable(f"{shutil.which(QEMU)} was built without plugin support "
                              "(Debian's qemu-user has it)")
    version = subprocess.run([QEMU, "--version"], capture_output=True, text=True, timeout=60)
    return version.stdout.splitlines()[0].strip() if version.stdout else QEMU


def qemu_argv(cpu: str, library: Path, out_file: Path) -> list[str]:
    """The emulator's command line, the program's to follow: ``cpu`` as QEMU names it
    (``cortex-a53``, ``cortex-a76``, ``max``)."""
    return [QEMU, "-cpu", cpu, "-plugin", f"{library},out={out_file}"]
