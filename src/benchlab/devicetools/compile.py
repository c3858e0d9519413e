"""Compiling one of benchlab's runners against a runtime's shipped libraries, as the
ExecuTorch, ONNX Runtime and LiteRT runners are built: one compiler call, its log kept in the
entry, and the facts a finished entry records about how it was made. :func:`build_c_runner`
is the whole build of a C runner over one library from a wheel (ONNX Runtime's, LiteRT's)."""

from __future__ import annotations

import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from benchlab.devicetools.cache import BuildCache, BuiltTools
from benchlab.devicetools.toolchain import Toolchain
from benchlab.errors import InfrastructureError

__all__ = ["LOG", "CRunnerRecipe", "build_c_runner", "build_facts", "compile_program",
           "runner_source"]

#: The build's log in its entry's folder.
LOG = "build.log"


def runner_source(name: str) -> Path:
    """The source of one of benchlab's runners, shipped in this package (``et_runner.cpp``)."""
    return Path(str(resources.files("benchlab.devicetools") / name))


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
    compiled with ``flags`` into ``program``, linked against the wheel's ``member`` copied
    beside it as ``library`` (the name its NEEDED entry asks for), plus ``libs``."""

    label: str
    source: str
    program: str
    member: str
    library: str
    flags: tuple[str, ...]
    libs: tuple[str, ...] = ()


def build_c_runner(cache: BuildCache, key: str, identity: dict[str, object],
                   toolchain: Toolchain, wheel: Path, include: Path, recipe: CRunnerRecipe,
                   progress: Callable[[str], None]) -> BuiltTools:
    """Build ``recipe`` into the cache entry ``key``: its ``bin/`` holds the runner and the
    library, which it finds beside it (``rpath $ORIGIN``): what a device gets pushed."""
    folder = cache.folder(key)
    shutil.rmtree(folder, ignore_errors=True)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    started = time.monotonic()
    progress(f"building {recipe.label}: unpacking {recipe.member} from {wheel.name}")
    with zipfile.ZipFile(wheel) as archive:
        if recipe.member not in archive.namelist():
            raise InfrastructureError(f"{wheel.name} has no {recipe.member}")
        with archive.open(recipe.member) as source, \
                open(bin_dir / recipe.library, "wb") as target:
            shutil.copyfileobj(source, target)
    progress(f"building {recipe.label} with {toolchain.source}: compiling")
    argv = [toolchain.cc, *recipe.flags, f"-I{include}", str(runner_source(recipe.source)),
            "-o", str(bin_dir / recipe.program), f"-L{bin_dir}", f"-l:{recipe.library}",
            *recipe.libs, "-Wl,-rpath,$ORIGIN"]
    compile_program(argv, folder, recipe.label)
    seconds = time.monotonic() - started
    progress(f"built {recipe.label} in {seconds:.1f} s")
    return cache.finish(key, toolchain.architecture,
                        {recipe.program: f"bin/{recipe.program}",
                         recipe.library: f"bin/{recipe.library}"},
                        build_facts(identity, toolchain, seconds))
