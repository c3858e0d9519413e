"""benchlab's ExecuTorch runner for a CPU, built over the libraries ExecuTorch's wheel ships.

From 1.5.0 on, the ``executorch`` wheel carries the runtime as shared libraries
(``executorch/lib/libexecutorch*.so``: the runtime with its Module and tensor extensions,
optimized and quantized kernels, the XNNPACK backend, the threadpool, ETDump) and their
headers (``executorch/include``), for x86-64 and aarch64; they need no libtorch and no
Python. Up to 1.4.1, the version benchlab exports with, the wheels hold no libraries, so the
runner is built against :data:`ET_VERSION` whatever the host's ExecuTorch is: ExecuTorch
promises that a program runs on at least the next minor release of the runtime.

The wheel for the architecture is fetched with ``pip download`` (``--isolated``: the
project's pip constraints are for the host's own packages, not a device's), its libraries
and headers unpacked, and ``et_runner.cpp`` (this folder; benchlab's own program, which
speaks ``executor_runner``'s flags and lines) compiled with the host's ``g++`` or Debian's
cross compiler. The entry's ``bin/`` holds the runner and the libraries it loads, found
beside it (``rpath $ORIGIN``): what a device gets pushed.

The key of a build: the wheel's version and hash, the architecture, the flags, the
compiler's version and the runner's source. Change any and a new entry is built.
"""

from __future__ import annotations

import shutil
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from benchlab.devicetools.cache import BuildCache, BuiltTools, entry_key
from benchlab.devicetools.compile import build_facts, compile_program, runner_source
from benchlab.devicetools.toolchain import Toolchain, find_toolchain
from benchlab.devicetools.wheels import runtime_wheel
from benchlab.spec.artifacts import sha256_of
from benchlab.errors import InfrastructureError

__all__ = ["ET_LIBRARIES", "ET_RUNNER", "ET_VERSION", "build_et_runner"]

#: The runner's program name on a device.
ET_RUNNER = "benchlab-et-runner"
#: The ExecuTorch release whose libraries the runner is built against (the first with
#: shared libraries in its wheel was 1.5.0).
ET_VERSION = "1.5.1"
#: The wheel's libraries the runner loads; the others (OpenVINO, QNN) need SDKs a device lacks.
ET_LIBRARIES = ("libexecutorch.so", "libexecutorch_kernels_optimized.so",
                "libexecutorch_kernels_quantized.so", "libexecutorch_backend_xnnpack.so",
                "libexecutorch_threadpool.so", "libexecutorch_etdump.so")
#: The wheel's platform tag per architecture.
#: The compiler flags; the defines are those of the wheel's CMake package
#: (``executorch-config.cmake``), without which the headers and libraries disagree.
FLAGS = ("-O2", "-std=c++17", "-Wno-deprecated-declarations",
         "-DC10_USING_CUSTOM_GENERATED_MACROS", "-DET_EVENT_TRACER_ENABLED")
#: benchlab's own runner, shipped in this package.
_SOURCE = "et_runner.cpp"
#: Bump when the way benchlab builds changes, so old entries are not reused.
_BUILDER = 1


def _unpack(wheel: Path, into: Path) -> tuple[Path, Path]:
    """The wheel's ``include`` and ``lib`` folders, unpacked into ``into``."""
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist()
                   if name.startswith("executorch/include/")
                   or name in {f"executorch/lib/{lib}" for lib in ET_LIBRARIES}]
        missing = [lib for lib in ET_LIBRARIES if f"executorch/lib/{lib}" not in members]
        if missing:
            raise InfrastructureError(f"{wheel.name} has no {', '.join(missing)}: ExecuTorch "
                                      "ships its runtime libraries from 1.5.0 on")
        archive.extractall(into, members)
    return into / "executorch" / "include", into / "executorch" / "lib"


def build_et_runner(architecture: str, cache_root: Path, *, version: str = ET_VERSION,
                    progress: Callable[[str], None] = lambda text: None) -> BuiltTools:
    """benchlab's ExecuTorch runner for ``architecture`` with the libraries it loads, from
    the cache or built now. Its programs: :data:`ET_RUNNER` and each of :data:`ET_LIBRARIES`.

    Raises :class:`InfrastructureError` when no compiler for it is installed (naming the
    package), the wheel cannot be fetched or the build fails (with the compiler's last
    lines); :class:`UsageError` for an architecture ExecuTorch ships no libraries for.
    """
    toolchain = find_toolchain(architecture)  # before anything is downloaded
    cache = BuildCache(Path(cache_root))
    wheel, wheel_sha = runtime_wheel(
        cache.root, "executorch", version, architecture,
        unsupported="ExecuTorch ships its runtime libraries", progress=progress)
    identity = {"builder": _BUILDER, "executorch": version, "wheel": wheel_sha,
                "architecture": architecture, "flags": list(FLAGS),
                "compiler": toolchain.version, "runner": sha256_of(runner_source(_SOURCE))}
    key = entry_key("etrunner", architecture, identity)
    return cache.find_or_build(key, architecture, (ET_RUNNER, *ET_LIBRARIES),
                               lambda: _build(cache, key, identity, toolchain, wheel, progress),
                               progress)


def _build(cache: BuildCache, key: str, identity: dict[str, object], toolchain: Toolchain,
           wheel: Path, progress: Callable[[str], None]) -> BuiltTools:
    folder = cache.folder(key)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    label = f"benchlab's ExecuTorch runner for {toolchain.architecture}"
    started = time.monotonic()
    progress(f"building {label}: unpacking {wheel.name}")
    include, lib = _unpack(wheel, folder / "wheel")
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name in ET_LIBRARIES:
        shutil.copy2(lib / name, bin_dir / name)
    progress(f"building {label} with {toolchain.source}: compiling")
    argv = [toolchain.cxx, *FLAGS, f'-DBENCHLAB_ET_VERSION="{identity["executorch"]}"',
            f"-I{include}",
            f"-I{include}/executorch/runtime/core/portable_type/c10",
            str(runner_source(_SOURCE)), "-o", str(bin_dir / ET_RUNNER), f"-L{bin_dir}",
            # Every library NEEDED, used or not: the kernels and the XNNPACK backend register
            # themselves when loaded, and the runner names none of their symbols.
            "-Wl,--no-as-needed", *(f"-l{name[3:-3]}" for name in ET_LIBRARIES),
            "-Wl,--as-needed", "-Wl,-rpath,$ORIGIN"]
    compile_program(argv, folder, label)
    shutil.rmtree(folder / "wheel", ignore_errors=True)  # the headers were only for compiling
    seconds = time.monotonic() - started
    progress(f"built {label} in {seconds:.0f} s")
    programs = {name: f"bin/{name}" for name in (ET_RUNNER, *ET_LIBRARIES)}
    return cache.finish(key, toolchain.architecture, programs,
                        build_facts(identity, toolchain, seconds))
