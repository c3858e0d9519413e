"""Built tools, kept once per key: what was built from which sources, for which CPU, how.

An entry is a folder named by its key (a hash of sources, architecture, flags and compiler);
``entry.json`` says what it holds, written last, so a build that failed or was cut leaves no
entry that looks finished. A lock file per key makes concurrent builders (pytest workers, two
``benchlab run``) wait for the first instead of building twice. An entry whose programs are
not for the architecture its key names is never used: it is removed and built again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchlab.devicetools.elf import elf_architecture

__all__ = ["BuildCache", "BuiltTools", "entry_key"]


def entry_key(kind: str, architecture: str, identity: dict[str, object]) -> str:
    """The key of the entry built from ``identity`` (everything the build depends on)."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return f"{kind}-{architecture}-{digest}"


@dataclass(frozen=True, slots=True)
class BuiltTools:
    """One finished entry: its programs by name, and how they were made."""

    key: str
    folder: Path
    architecture: str
    programs: dict[str, str]
    facts: dict[str, object]
    #: Whether this call built it (False: found in the cache).
    built_now: bool = False

    def program(self, name: str) -> Path:
        """The path of program ``name`` (``KeyError`` when the entry lacks it)."""
        return self.folder / self.programs[name]


class BuildCache:
    """Entries under ``root`` (``<artifact cache>/devicetools``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def folder(self, key: str) -> Path:
        """Where the entry of ``key`` lives (built or not)."""
        return self.root / key

    @contextmanager
    def locked(self, key: str) -> Iterator[None]:
        """Hold the lock of ``key`` (waits while another process builds it)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f".{key}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def find_or_build(self, key: str, architecture: str, wanted: tuple[str, ...],
                      build: Callable[[], BuiltTools],
                      progress: Callable[[str], None]) -> BuiltTools:
        """The finished entry of ``key`` holding ``wanted``, or ``build()``'s, under the key's
        lock: a second builder waits and finds the first one's entry."""
        with self.locked(key):
            found = self.find(key, architecture, wanted, on_discard=progress)
            return found if found is not None else build()

    def find(self, key: str, architecture: str, wanted: tuple[str, ...],
             on_discard: Callable[[str], None] | None = None) -> BuiltTools | None:
        """The finished entry of ``key`` holding every program in ``wanted``, or None.

        An entry with a program for another architecture (a copied cache, a changed
        toolchain that lied) is removed, and ``on_discard`` says why.
        """
        folder = self.folder(key)
        try:
            facts = json.loads((folder / "entry.json").read_text())
        except (OSError, ValueError):
            return None
        programs = dict(facts.get("programs", {}))
        if any(name not in programs for name in wanted):
            return None
        for name, relative in programs.items():
            found = elf_architecture(folder / relative)
            if found != architecture:
                if on_discard is not None:
                    on_discard(f"the cached {name} is built for {found or 'no known CPU'}, "
                               f"not {architecture}: built again")
                shutil.rmtree(folder, ignore_errors=True)
                return None
        return BuiltTools(key, folder, architecture, programs, facts)

    def finish(self, key: str, architecture: str, programs: dict[str, str],
               facts: dict[str, object]) -> BuiltTools:
        """Record a finished build of ``key`` (its programs relative to its folder)."""
        folder = self.folder(key)
        record = {**facts, "programs": programs, "architecture": architecture,
                  "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = folder / "entry.json.tmp"
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        tmp.replace(folder / "entry.json")
        return BuiltTools(key, folder, architecture, programs, record, built_now=True)
