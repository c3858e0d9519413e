"""Compiling one of benchlab's runners against a runtime's shipped libraries, as the
ExecuTorch, ONNX Runtime and LiteRT runners are built: one compiler call, its log kept in the
entry, and the facts a finished entry records about how it was made.
:func:`find_or_build_c_runner` is the whole build of a C runner over one library from a wheel
(ONNX Runtime's, LiteRT's): each of those two modules is its recipe and its headers."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from benchlab.devicetools.cache import BuildCache, BuiltTools, entry_key
from benchlab.devicetools.toolchain import Toolchain, find_toolchain
from benchlab.devicetools.wheels import PLATFORMS, runtime_wheel
from benchlab.errors import InfrastructureError

__all__ = ["LOG", "CRunnerRecipe", "HeaderSource", "build_facts", "compile_program",
           "find_or_build_c_runner", "runner_source", "sources_digest"]

#: The build's log in its entry's folder.
LOG = "build.log"


def runner_source(name: str) -> Path:
    """The source of one of benchlab's runners, shipped in this package (``et_runner.cpp``)."""
    return Path(str(resources.files("benchlab.devicetools") / name))


def sources_digest(names: tuple[str, ...]) -> str:
    """One sha256 over the runner sources ``names`` (a source and the headers it includes):
    a build's key changes with any of them."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + runner_source(name).read_bytes() + b"\0")
    return digest.hexdigest()


def compile_program(argv: list[str], folder: Path, label: str) -> None:
    """Run the compiler ``argv``, its command and output into ``folder/build.log``; a
    failure is an :class:`InfrastructureError` with the compiler's last lines."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    (folder / LOG).write_text(" ".join(argv) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise InfrastructureError(f"compiling {label} failed (log: {folder / LOG}):\n{tail}")


def build_facts(identity: dict[str, object], toolchain: Toolchain, seconds: float,
                **more: object) -> dict[str, object]:
    """What an entry records of its build: its identity, how long it took, with what."""
    return {**identity, "build_seconds": round(seconds, 1), **more,
            "toolchain": toolchain.source, "log": LOG}


@dataclass(frozen=True)
class CRunnerRecipe:
    """How one C runner over one wheel library is built: ``source`` (in this package)
    compiled with ``flags`` into ``program``, linked against the ``member`` of ``package``
    ``version``'s wheel, copied beside it as ``library`` (the name its NEEDED entry asks for),
    plus ``libs``. ``name`` begins its cache entries' names; ``unsupported`` begins the error
    for a CPU the wheel has no library for; ``platforms``: the wheel's platform tag by CPU."""

    label: str
    name: str
    source: str
    program: str
    package: str
    version: str
    member: str
    library: str
    flags: tuple[str, ...]
    unsupported: str
    libs: tuple[str, ...] = ()
    platforms: Mapping[str, str] = field(default_factory=lambda: dict(PLATFORMS))
    #: The headers of this package the source includes: the runners' shared part.
    headers: tuple[str, ...] = ("runner_common.h",)


#: Where a runner's headers come from: the include folder, fetched once under the cache's
#: root, and the facts about them its builds are keyed by (the Debian package's version...).
HeaderSource = Callable[[Path, Callable[[str], None]], tuple[Path, dict[str, object]]]


def find_or_build_c_runner(recipe: CRunnerRecipe, architecture: str, cache_root: Path,
                           headers: HeaderSource, *, builder: int,
                           progress: Callable[[str], None]) -> BuiltTools:
    """``recipe``'s runner for ``architecture`` with the library it loads, from the cache or
    built now. The key of a build: ``builder`` (bumped when the way benchlab builds
    changes), the wheel's version and hash, the headers' facts, the architecture, the flags,
    the compiler's version and the runner's source.

    Raises :class:`InfrastructureError` when no compiler for it is installed (naming the
    package), the wheel or the headers cannot be fetched (naming the archive) or the build
    fails (with the compiler's last lines); :class:`UsageError` for an architecture the
    wheel has no library for.
    """
    toolchain = find_toolchain(architecture)  # before anything is downloaded
    cache = BuildCache(Path(cache_root))
    wheel, wheel_sha = runtime_wheel(
        cache.root, recipe.package, recipe.version, architecture, platforms=recipe.platforms,
        unsupported=recipe.unsupported, progress=progress)
    include, header_facts = headers(cache.root, progress)
    identity = {"builder": builder, recipe.package: recipe.version, "wheel": wheel_sha,
                **header_facts, "architecture": architecture, "flags": list(recipe.flags),
                "compiler": toolchain.version,
                "runner": sources_digest((recipe.source, *recipe.headers))}
    key = entry_key(recipe.name, architecture, identity)
    return cache.find_or_build(
        key, architecture, (recipe.program, recipe.library),
        lambda: _build_c_runner(cache, key, identity, toolchain, wheel, include, recipe,
                                f"{recipe.label} for {architecture}", progress), progress)


def _build_c_runner(cache: BuildCache, key: str, identity: dict[str, object],
                    toolchain: Toolchain, wheel: Path, include: Path, recipe: CRunnerRecipe,
                    label: str, progress: Callable[[str], None]) -> BuiltTools:
    """Build ``recipe`` into the cache entry ``key``: its ``bin/`` holds the runner and the
    library, which it finds beside it (``rpath $ORIGIN``): what a device gets pushed."""
    folder = cache.folder(key)
    shutil.rmtree(folder, ignore_errors=True)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    started = time.monotonic()
    progress(f"building {label}: unpacking {recipe.member} from {wheel.name}")
    with zipfile.ZipFile(wheel) as archive:
        if recipe.member not in archive.namelist():
            raise InfrastructureError(f"{wheel.name} has no {recipe.member}")
        with archive.open(recipe.member) as source, \
                open(bin_dir / recipe.library, "wb") as target:
            shutil.copyfileobj(source, target)
    progress(f"building {label} with {toolchain.source}: compiling")
    argv = [toolchain.cc, *recipe.flags, f"-I{include}", str(runner_source(recipe.source)),
            "-o", str(bin_dir / recipe.program), f"-L{bin_dir}", f"-l:{recipe.library}",
            *recipe.libs, "-Wl,-rpath,$ORIGIN"]
    compile_program(argv, folder, label)
    seconds = time.monotonic() - started
    progress(f"built {label} in {seconds:.1f} s")
    return cache.finish(key, toolchain.architecture,
                        {recipe.program: f"bin/{recipe.program}",
                         recipe.library: f"bin/{recipe.library}"},
                        build_facts(identity, toolchain, seconds))
