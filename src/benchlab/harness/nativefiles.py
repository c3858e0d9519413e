"""A native program's own files on the target: the shared libraries it loads, pushed into the
job's folder beside it, the loader's search path that finds them there, and the bytes of the
binary and each library (``details.native_files``).

Libraries come from three places, all pushed under their own file name (the name the dynamic
loader looks for): the framework option ``libs=a.so:b.so``, the test setting ``shared_libs``
(``run --shared-libs a.so,b.so``, FAI-PEP's ``--shared_libs``) and a spec model's
``libraries`` (FAI-PEP's key: files with a location and a hash, fetched through the artifact
cache like model files). Each process then runs with ``LD_LIBRARY_PATH`` naming the job's
folder, as FAI-PEP runs its Android tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlab.errors import UsageError
from benchlab.frameworks.base import NATIVE_LIBS, Invocation
from benchlab.schema.result import Metric, Sample
from benchlab.spec.artifacts import ArtifactCache
from benchlab.spec.types import ModelDef, TestCase

__all__ = ["LIBRARY_PATH_VARIABLE", "NativeFiles", "code_size_samples", "job_libraries",
           "with_library_path"]

#: The variable the dynamic loader (glibc's ld.so, Android's linker) reads first.
LIBRARY_PATH_VARIABLE = "LD_LIBRARY_PATH"


@dataclass(frozen=True, slots=True)
class NativeFiles:
    """The host copies of what a job pushed for its native program: the ``binary=`` tool
    (``None``: the runner, or a path already on the target) and the libraries by name."""

    binary: Path | None = None
    libraries: Mapping[str, Path] = field(default_factory=dict)
    #: programs benchlab built for the device itself (the llama.cpp runner), by name
    built: Mapping[str, Path] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.binary is not None or bool(self.libraries) or bool(self.built)

    def detail(self) -> dict[str, Any]:
        """``details.native_files``: the bytes of the binary, of each library and of each
        program benchlab built for the device, what a native tool brought onto the device
        besides the model, and their sum (the job's code size)."""
        binary = self.binary.stat().st_size if self.binary is not None else None
        libs = {name: path.stat().st_size for name, path in self.libraries.items()}
        built = {name: path.stat().st_size for name, path in self.built.items()}
        found = {"binary": binary, "libs": libs, "bytes": (binary or 0) + sum(libs.values())
                 + sum(built.values())}
        return {**found, "built": built} if built else found


def code_size_samples(detail: Mapping[str, Any] | None, samples: Sequence[Sample],
                      repetition: int) -> list[Sample]:
    """The code-size sample of one native process, from ``details.native_files``: none when
    the process printed its own (benchlab's runner measures the runtime it loaded) or when
    the tool was already on the target (its size is unknown here)."""
    if not detail or not detail.get("bytes") or detail.get("binary") is None and \
            not detail.get("built"):
        return []
    if any(s.metric == Metric.CODE_SIZE for s in samples):
        return []
    return [Sample(Metric.CODE_SIZE, detail["bytes"] / 2**20, "MiB", "NET", repetition, 0)]


def _host_paths(given: Any, separator: str, where: str) -> list[Path]:
    """The host files ``given`` names (a string split on ``separator``, or a list); a
    :class:`UsageError` naming ``where`` it was given for one that is not a file."""
    items = given.split(separator) if isinstance(given, str) else list(given or ())
    paths = [Path(str(item).strip()).expanduser() for item in items if str(item).strip()]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise UsageError(f"{where} names shared libraries that are not files here: "
                         f"{', '.join(missing)}")
    return paths


def job_libraries(options: Mapping[str, Any], test: TestCase, model: ModelDef,
                  cache: ArtifactCache) -> dict[str, Path]:
    """Every shared library a job pushes, by its name on the target: the framework option's,
    the test's ``shared_libs``, then the model's ``libraries`` (fetched and verified).

    Two different files under one name would overwrite each other in the job's folder: a
    :class:`UsageError` names them.
    """
    found: dict[str, Path] = {}
    sources: Sequence[tuple[str, list[Path]]] = (
        (f"the framework option {NATIVE_LIBS}=",
         _host_paths(options.get(NATIVE_LIBS), ":", f"{NATIVE_LIBS}=")),
        ("shared_libs", _host_paths(test.shared_libs, ",", "shared_libs")),
        ("model.libraries", [cache.fetch(ref) for ref in model.libraries.values()]),
    )
    names = list(model.libraries)
    for where, paths in sources:
        for index, path in enumerate(paths):
            name = names[index] if where == "model.libraries" else path.name
            before = found.get(name)
            if before is not None and before.resolve() != path.resolve():
                raise UsageError(f"two shared libraries are both named {name!r} ({before} "
                                 f"and {path}, from {where}): one would replace the other")
            found[name] = path
    return found


def with_library_path(invocation: Invocation, folder: str) -> Invocation:
    """``invocation`` with ``folder`` first on the loader's search path (before any path the
    test's own environment gives)."""
    own = invocation.env.get(LIBRARY_PATH_VARIABLE)
    value = f"{folder}:{own}" if own else folder
    return replace(invocation, env={**invocation.env, LIBRARY_PATH_VARIABLE: value})
