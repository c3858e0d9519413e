"""llama.cpp's programs for a device, built by benchlab from public sources, once per key.

The sources are those ``llama-cpp-python``'s sdist carries (``vendor/llama.cpp``), fetched
from PyPI with ``pip download`` (the version installed here, or :data:`DEFAULT_VERSION`), or a
llama.cpp folder the user gives (``sources=``). benchlab's own runner
(``llama_runner.cpp``, this folder) is built beside llama.cpp's libraries, and ``llama-bench``
when asked, as static programs: a phone's ``/data/local/tmp`` runs them without Android's
libc or any library pushed beside them.

The key of a build: the sources' hash, the architecture, the CPU flags (for aarch64,
``GGML_CPU_ARM_ARCH``: ``armv8-a``, every arm64-v8a phone, by default), the programs, the
compiler's version and the runner's own source. Change any and a new entry is built.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata, resources
from pathlib import Path

from benchlab.devicetools.cache import BuildCache, BuiltTools, entry_key
from benchlab.devicetools.compile import build_facts
from benchlab.devicetools.toolchain import Toolchain, find_toolchain
from benchlab.spec.artifacts import sha256_of
from benchlab.errors import InfrastructureError, UsageError

__all__ = ["DEFAULT_ARCH_FLAGS", "DEFAULT_VERSION", "RUNNER", "build_llama_tools",
           "llama_cpp_sources"]

#: The runner's program name on the device.
RUNNER = "benchlab-llama-runner"
BENCH = "llama-bench"
#: The llama-cpp-python release whose sources are built when none is installed here.
DEFAULT_VERSION = "0.3.36"
#: The CPU level built for by default: what every device of the architecture runs.
DEFAULT_ARCH_FLAGS = {"aarch64": "armv8-a"}
#: Bump when the way benchlab builds changes, so old entries are not reused.
_BUILDER = 1
_STEP = re.compile(r"^\[(\d+)/(\d+)\]")


def _installed_version() -> str:
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return DEFAULT_VERSION


def llama_cpp_sources(root: Path, *, given: Path | None = None, version: str | None = None,
                      progress: Callable[[str], None] = lambda text: None) -> tuple[Path, str]:
    """The llama.cpp source folder and its identity (for the build key).

    ``given``: a llama.cpp checkout of the user's (identified by its files' names, sizes and
    times). Otherwise ``llama-cpp-python``'s sdist from PyPI, downloaded once into ``root``.
    """
    if given is not None:
        folder = Path(given).expanduser()
        if not (folder / "include" / "llama.h").is_file():
            raise UsageError(f"sources={given}: not a llama.cpp folder (no include/llama.h)")
        listing = hashlib.sha256()
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".c", ".cpp", ".h", ".hpp", ".txt", ".cmake") and path.is_file():
                st = path.stat()
                listing.update(f"{path.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        return folder, "folder:" + listing.hexdigest()
    version = version or _installed_version()
    downloads = root / "sources"
    downloads.mkdir(parents=True, exist_ok=True)
    name = f"llama_cpp_python-{version}"
    sdist = downloads / f"{name}.tar.gz"
    if not sdist.is_file():
        progress(f"downloading llama-cpp-python {version}'s sources from PyPI")
        (downloads / f"{name}.tar.gz.sha256").unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
             ":all:", "--dest", str(downloads), f"llama-cpp-python=={version}"],
            capture_output=True, text=True, timeout=1800, check=False)
        if proc.returncode != 0 or not sdist.is_file():
            why = (proc.stderr or proc.stdout).strip().splitlines()
            raise InfrastructureError(f"could not download llama-cpp-python {version}'s sources "
                                      f"from PyPI: {why[-1] if why else proc.returncode}")
    folder = downloads / name
    source = folder / "vendor" / "llama.cpp"
    if not (source / "include" / "llama.h").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        with tarfile.open(sdist) as archive:
            archive.extractall(downloads, filter="data")
    # The sdist's hash, taken once: hashing 77 MB again on every job would be repeated I/O.
    digest_file = downloads / f"{name}.tar.gz.sha256"
    if not digest_file.is_file():
        digest_file.write_text(sha256_of(sdist) + "\n")
    return source, "sdist:" + digest_file.read_text().strip()


def _runner_source() -> Path:
    return Path(str(resources.files("benchlab.devicetools") / "llama_runner.cpp"))


def _project(folder: Path, source: Path) -> None:
    """The CMake project that builds the runner beside llama.cpp's libraries."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_runner_source(), folder / "llama_runner.cpp")
    (folder / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.14)\n"
        "project(benchlab_device_tools C CXX)\n"
        f'add_subdirectory("{source}" llama.cpp)\n'
        f"add_executable({RUNNER} llama_runner.cpp)\n"
        f"target_link_libraries({RUNNER} PRIVATE llama)\n"
        f"target_compile_features({RUNNER} PRIVATE cxx_std_17)\n")


def build_llama_tools(
    architecture: str,
    cache_root: Path,
    *,
    arch_flags: str | None = None,
    programs: Sequence[str] = (RUNNER,),
    sources: Path | None = None,
    version: str | None = None,
    jobs: int | None = None,
    progress: Callable[[str], None] = lambda text: None,
) -> BuiltTools:
    """llama.cpp's ``programs`` for ``architecture``, from the cache or built now.

    Raises :class:`InfrastructureError` when no compiler for it is installed (naming the
    package) or the build fails (with the end of its log), :class:`UsageError` for a program
    benchlab does not build.
    """
    unknown = sorted(set(programs) - {RUNNER, BENCH})
    if unknown:
        raise UsageError(f"benchlab builds {RUNNER} and {BENCH} from llama.cpp, not "
                         f"{', '.join(unknown)}")
    toolchain = find_toolchain(architecture)
    cache = BuildCache(Path(cache_root))
    source, source_id = llama_cpp_sources(cache.root, given=sources, version=version,
                                          progress=progress)
    flags = arch_flags or DEFAULT_ARCH_FLAGS.get(architecture, "")
    wanted = tuple(sorted(set(programs) | {RUNNER}))
    identity = {"builder": _BUILDER, "sources": source_id, "architecture": architecture,
                "arch_flags": flags, "programs": wanted, "compiler": toolchain.version,
                "runner": sha256_of(_runner_source())}
    key = entry_key("llamacpp", architecture, identity)
    return cache.find_or_build(
        key, architecture, wanted,
        lambda: _build(cache, key, identity, toolchain, source, flags, wanted,
                       jobs or os.cpu_count() or 1, progress), progress)


def _build(cache: BuildCache, key: str, identity: dict[str, object], toolchain: Toolchain,
           source: Path, flags: str, wanted: tuple[str, ...], jobs: int,
           progress: Callable[[str], None]) -> BuiltTools:
    folder = cache.folder(key)
    shutil.rmtree(folder, ignore_errors=True)
    project, tree, log_path = folder / "project", folder / "tree", folder / "build.log"
    _project(project, source)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = [
        "cmake", "-S", str(project), "-B", str(tree), *generator, *toolchain.cmake_args(),
        "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DGGML_NATIVE=OFF",
        "-DGGML_OPENMP=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF",
        # llama-bench needs llama.cpp's common library, which a subproject leaves out.
        f"-DLLAMA_BUILD_TOOLS={'ON' if BENCH in wanted else 'OFF'}",
        f"-DLLAMA_BUILD_COMMON={'ON' if BENCH in wanted else 'OFF'}",
        "-DCMAKE_EXE_LINKER_FLAGS=-static",
        *([f"-DGGML_CPU_ARM_ARCH={flags}"] if flags and toolchain.architecture == "aarch64"
          else []),
    ]
    if shutil.which("cmake") is None:
        raise InfrastructureError("building llama.cpp needs CMake: apt-get install cmake")
    label = f"llama.cpp for {toolchain.architecture}" + (f" ({flags})" if flags else "")
    progress(f"building {label} with {toolchain.source}: configuring")
    started = time.monotonic()
    with open(log_path, "w") as log:
        _run(configure, log, log_path, "configuring " + label)
        build = ["cmake", "--build", str(tree), "--parallel", str(jobs), "--target", *wanted]
        _run(build, log, log_path, "building " + label, progress=progress, label=label)
    seconds = time.monotonic() - started
    (folder / "bin").mkdir()
    programs = {}
    for name in wanted:
        built = tree / "bin" / name
        if not built.is_file():
            built = next(tree.rglob(name), built)
        shutil.copy2(built, folder / "bin" / name)
        programs[name] = f"bin/{name}"
    # The object files are some hundred MB; the programs and the log are what is kept.
    shutil.rmtree(tree, ignore_errors=True)
    progress(f"built {label} in {seconds:.0f} s")
    return cache.finish(key, toolchain.architecture, programs,
                        build_facts(identity, toolchain, seconds, jobs=jobs))


def _run(argv: list[str], log: object, log_path: Path, what: str, *,
         progress: Callable[[str], None] | None = None, label: str = "") -> None:
    """Run one build step, its output into the log; progress from ninja's ``[n/N]``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    shown = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)  # type: ignore[attr-defined]
        step = _STEP.match(line)
        if step and progress is not None:
            done, total = int(step.group(1)), int(step.group(2))
            tenth = done * 10 // max(total, 1)
            if tenth > shown:
                shown = tenth
                progress(f"building {label}: {done}/{total}")
    if proc.wait() != 0:
        log.flush()  # type: ignore[attr-defined]
        tail = log_path.read_text(errors="replace").strip().splitlines()[-15:]
        raise InfrastructureError(f"{what} failed (log: {log_path}):\n" + "\n".join(tail))
