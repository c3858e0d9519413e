"""The zoo's export cache: which exported files belong to which model definition.

Exported files live content-addressed in the artifact cache; this index maps
``(model fingerprint, format)`` to them. The fingerprint hashes what defines a model — its
source modules, input shapes, the weights package's version — and each format's key adds the
versions of the packages that export it, so a changed model definition or a new exporter is a
miss and everything else is a hit. Failed exports are remembered too (with their reason), so
a model a converter rejects is not retried on every run; ``force`` retries.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.spec.artifacts import ArtifactCache, sha256_of
from benchlab.exporting.definition import ModelDefinition
from benchlab.exporting.formats import REFERENCE, format_of

__all__ = ["ExportIndex", "FormatEntry", "file_record", "format_key", "model_fingerprint"]

# Bump when the export pipeline changes in a way the package versions do not capture.
ZOO_VERSION = "3"


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _module_source(module: str) -> bytes:
    """The bytes of a module's source file (a module name or a ``.py`` path), found without
    importing it."""
    if module.endswith(".py"):
        return Path(module).read_bytes() if os.path.isfile(module) else f"missing:{module}".encode()
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return f"missing:{module}".encode()
    return Path(spec.origin).read_bytes()


def _distributions_of(module: str) -> list[str]:
    """The distributions that install a top-level module. The distribution of the module's own
    name answers at once; ``packages_distributions`` reads every installed package's file list
    (0.4 s here, and every fingerprint asked it), so it is only asked for the other modules."""
    try:
        return [importlib.metadata.distribution(module).metadata["Name"]]
    except importlib.metadata.PackageNotFoundError:
        return importlib.metadata.packages_distributions().get(module, [module])


def _requires_versions(model: ModelDefinition) -> list[str]:
    versions = []
    for module in model.requires:
        dists = _distributions_of(module.split(".")[0])
        versions += [f"{d}=={_version(d)}" for d in dists]
    return versions


def model_fingerprint(model: ModelDefinition, onnx_bytes: bytes | None = None) -> str:
    """A digest of everything that defines ``model`` (sources, shapes, weights package)."""
    digest = hashlib.sha256()
    parts = [ZOO_VERSION, model.name, model.entry or "", repr(model.input_shapes),
             repr(model.dtypes), model.task, *_requires_versions(model)]
    for part in parts:
        digest.update(part.encode() + b"\0")
    for module in model.sources or ((model.entry or "").partition(":")[0],):
        if module:
            digest.update(_module_source(module) + b"\0")
    if onnx_bytes is not None:
        digest.update(hashlib.sha256(onnx_bytes).digest())
    if model.data is not None:  # the user's input sets: the reference and calibration
        digest.update(Path(model.data).read_bytes())
    return digest.hexdigest()[:20]


def format_key(fingerprint: str, fmt: str) -> str:
    """The index key of one format of one model definition, exporter versions included.

    A format that writes simulated outputs holds the reference's input sets in them, so the
    reference's revision is part of its key: a new reference layout exports it again too.
    """
    spec = format_of(fmt)
    versions = ",".join(f"{d}=={_version(d)}" for d in spec.packages)
    return (f"{fingerprint}|{fmt}|{versions}" + (f"|rev{spec.revision}" if spec.revision else "")
            + (f"|ref{REFERENCE.revision}" if spec.simulated else ""))


@dataclass(frozen=True, slots=True)
class FormatEntry:
    """One format's export: its files (key → cached path and sha256) or why it failed."""

    files: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    error: str | None = None
    seconds: float | None = None

    def usable(self) -> bool:
        """A remembered failure, or every file still in the cache with the bytes it was
        exported with (a pruned or damaged cache means export again)."""
        if self.error is not None:
            return True
        return bool(self.files) and all(_intact(f) for f in self.files.values())


def file_record(path: Path, sha256: str) -> dict[str, Any]:
    """How the index remembers one exported file: where, its hash, and its size and mtime at
    export, so that checking it later costs a ``stat``, not a read (fetching it hashes it
    again anyway)."""
    stat = path.stat()
    return {"path": str(path), "sha256": sha256, "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns}


def _intact(entry: Mapping[str, Any]) -> bool:
    path = Path(entry["path"])
    try:
        if "size" in entry and "mtime_ns" in entry:  # recorded since the index kept them
            stat = path.stat()
            return (stat.st_size, stat.st_mtime_ns) == (entry["size"], entry["mtime_ns"])
        return path.is_file() and sha256_of(path) == entry["sha256"]
    except OSError:
        return False


class ExportIndex:
    """The JSON index beside the artifact cache, rewritten atomically.

    Several processes may share one cache (two runs, a run beside ``zoo export``, parallel test
    workers): :meth:`save` writes under the cache's ``zoo-index`` lock and keeps what others
    saved since this index was read, adding only what this one :meth:`put`; :meth:`reload`
    takes in what others saved.
    """

    def __init__(self, cache: ArtifactCache) -> None:
        self._cache = cache
        self._path = cache.root / "zoo-index.json"
        self._formats, self._metadata = self._read()
        # What this index recorded itself, laid over the file's newer content on save.
        self._put_formats: dict[str, Any] = {}
        self._put_metadata: dict[str, Any] = {}

    def _read(self) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            data = json.loads(self._path.read_text())
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        formats, metadata = data.get("formats"), data.get("metadata")
        return (formats if isinstance(formats, dict) else {},
                metadata if isinstance(metadata, dict) else {})

    def reload(self) -> None:
        """Read what other processes saved since, keeping this index's own unsaved entries."""
        formats, metadata = self._read()
        self._formats = {**formats, **self._put_formats}
        self._metadata = {**metadata, **self._put_metadata}

    def get(self, key: str) -> FormatEntry | None:
        """The entry stored under a :func:`format_key`, if any."""
        raw = self._formats.get(key)
        if not isinstance(raw, dict):
            return None
        files, error, seconds = raw.get("files", {}), raw.get("error"), raw.get("seconds")
        # An entry of the wrong shape (a damaged or hand-edited index) counts as absent.
        if not isinstance(files, dict) or not all(
                isinstance(f, dict) and isinstance(f.get("path"), str)
                and isinstance(f.get("sha256"), str) for f in files.values()):
            return None
        if error is not None and not isinstance(error, str):
            return None
        return FormatEntry(files=files, error=error,
                           seconds=seconds if isinstance(seconds, (int, float)) else None)

    def put(self, key: str, entry: FormatEntry) -> None:
        """Record one format's export (in memory until :meth:`save`)."""
        self._formats[key] = self._put_formats[key] = {
            "files": {k: dict(v) for k, v in entry.files.items()}, "error": entry.error,
            "seconds": entry.seconds}

    def metadata(self, fingerprint: str) -> dict[str, Any]:
        """Facts about a model definition recorded at export (params, FLOPs, task)."""
        found = self._metadata.get(fingerprint)
        return dict(found) if isinstance(found, dict) else {}

    def put_metadata(self, fingerprint: str, metadata: Mapping[str, Any]) -> None:
        """Record a model definition's metadata."""
        self._metadata[fingerprint] = self._put_metadata[fingerprint] = dict(metadata)

    def save(self) -> None:
        """Write the index atomically (readers never see half a file), merged with what other
        processes saved since it was read."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._cache.exclusive("zoo-index"):
            self.reload()
            fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=".zoo-index-")
            with os.fdopen(fd, "w") as handle:
                json.dump({"formats": self._formats, "metadata": self._metadata}, handle,
                          indent=1, sort_keys=True)
            os.replace(tmp, self._path)
