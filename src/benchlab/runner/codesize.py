"""How many bytes of runtime a framework added to the process: the code-size half of the edge
study's "model size and code size" (the model's files are the other half).

A runtime's code is counted as what the dynamic loader actually mapped, not what the wheel
ships: ``/proc/self/maps`` lists every file mapped into the runner after the model ran, and the
files that belong to the runtime's own distribution (its ``RECORD``, which also lists the
libraries auditwheel vendors beside the package, e.g. ``onnxruntime.libs/``) are summed by
their size on disk. A library of the wheel that the model never needed (a GPU provider, an
unused delegate) is not counted; a library from another distribution (the C++ runtime,
OpenMP, numpy) is not the runtime's and is not counted either. Linux only: elsewhere the
runner prints no code size rather than a guess.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RuntimeCode", "mapped_files", "runtime_code"]

_MAPS = Path("/proc/self/maps")


@dataclass(frozen=True, slots=True)
class RuntimeCode:
    """The runtime's files this process mapped: ``files`` maps a path relative to the
    distribution's install folder to its size in bytes."""

    distribution: str
    version: str
    files: dict[str, int]

    @property
    def bytes(self) -> int:
        return sum(self.files.values())

    def to_detail(self) -> dict[str, object]:
        return {"distribution": f"{self.distribution} {self.version}", "bytes": self.bytes,
                "files": dict(sorted(self.files.items()))}


def mapped_files(maps: Path = _MAPS) -> set[Path]:
    """The regular files mapped into the process ``maps`` describes (``/proc/PID/maps``)."""
    try:
        text = maps.read_text()
    except OSError:
        return set()
    found: set[Path] = set()
    for line in text.splitlines():
        # address perms offset dev inode path: the path is the sixth field and may hold spaces.
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[4] != "0" and fields[5].startswith("/"):
            path = fields[5]
            if not path.endswith(" (deleted)"):
                found.add(Path(path))
    return found


def runtime_code(distribution: str, mapped: Iterable[Path] | None = None) -> RuntimeCode | None:
    """The files of ``distribution`` (a pip name) among ``mapped`` (this process's mapped
    files by default); ``None`` when it is not installed, lists no files, or none is mapped."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    listed = dist.files
    if not listed:
        return None
    # RECORD paths are relative to the install folder: compare the few mapped files against
    # them, rather than resolving every listed file (torch lists some 15,000).
    root = os.path.realpath(dist.locate_file(""))
    own = {f.as_posix() for f in listed}
    files: dict[str, int] = {}
    for path in mapped_files() if mapped is None else mapped:
        real = os.path.realpath(path)
        relative = Path(os.path.relpath(real, root)).as_posix()
        if relative in own:
            try:
                files[relative] = os.path.getsize(real)
            except OSError:
                continue
    if not files:
        return None
    return RuntimeCode(dist.metadata["Name"], dist.version, files)
