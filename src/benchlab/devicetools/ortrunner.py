"""benchlab's ONNX Runtime runner for a CPU, built over the C library of ONNX Runtime's wheel.

The ``onnxruntime`` wheel carries, beside its Python extension, ONNX Runtime's C library
(``onnxruntime/capi/libonnxruntime.so.<version>``, exporting ``OrtGetApiBase``) for x86-64
and aarch64; it needs no Python. The C header is in no wheel: Debian packages it
(``libonnxruntime-dev``, 1.21 with C API 21, in Debian 13 "trixie"), not Debian 12. It is
fetched with apt under a private configuration of its own (sources list, lists, cache and
status under the artifact cache; the machine's apt configuration is never read or changed)
and unpacked with ``dpkg-deb -x``. The runner asks the library for the header's API version:
ONNX Runtime's C API is ABI-stable, and a newer library serves every older version.

The wheel of :data:`ORT_VERSION` (requirements/lock.txt's) for the architecture is fetched
with ``pip download`` (``--isolated``: the project's pip constraints are for the host's own
packages, not a device's), its library copied beside the runner under its soname
(``libonnxruntime.so.1``, what the runner's NEEDED entry names) and ``ort_runner.c`` (this
folder; benchlab's own program) compiled with the host's ``gcc`` or Debian's cross compiler.
The entry's ``bin/`` holds the runner and the library it loads, found beside it (``rpath
$ORIGIN``): what a device gets pushed.

The key of a build: the library's version and wheel hash, the header's package version and
API, the architecture, the flags, the compiler's version and the runner's source.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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

__all__ = ["HEADER_PACKAGE", "ORT_LIBRARY", "ORT_RUNNER", "ORT_VERSION", "build_ort_runner",
           "ort_header", "ort_runner_tool"]

#: The runner's program name on a device.
ORT_RUNNER = "benchlab-ort-runner"
#: The onnxruntime release whose C library the runner loads (requirements/lock.txt's).
ORT_VERSION = "1.32.0"
#: The library under its soname: the name the runner's NEEDED entry asks the loader for.
ORT_LIBRARY = "libonnxruntime.so.1"
#: The Debian package with the C header, and the suite that has it.
HEADER_PACKAGE, HEADER_SUITE = "libonnxruntime-dev", "trixie"
_ARCHIVE = "http://deb.debian.org/debian"
_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
FLAGS = ("-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L")
#: benchlab's own runner, shipped in this package.
_SOURCE = "ort_runner.c"
#: Bump when the way benchlab builds changes, so old entries are not reused.
_BUILDER = 1


def ort_runner_tool(version: str, api: int | str) -> str:
    """What a result records as its tool: benchlab's runner, never onnxruntime_perf_test."""
    return f"{ORT_RUNNER} (ONNX Runtime {version} C library, API {api} header)"


def _apt(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """apt-get under a configuration of its own in ``folder`` (``download`` writes into
    ``folder/deb``): Debian's own archive key, and no file of the machine's apt setup read
    or written."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise InfrastructureError(f"fetching ONNX Runtime's C header needs apt-get and "
                                  f"dpkg-deb (Debian's {HEADER_PACKAGE} package); or put "
                                  f"onnxruntime_c_api.h in {folder / 'include'}")
    config = ["-o", f"Dir::Etc::SourceList={folder / 'sources.list'}",
              "-o", "Dir::Etc::SourceParts=/dev/null",
              "-o", "Dir::Etc::PreferencesParts=/dev/null",
              "-o", f"Dir::State::Lists={folder / 'lists'}",
              "-o", f"Dir::Cache={folder / 'cache'}",
              "-o", f"Dir::State::status={folder / 'status'}",
              # The files land in a folder apt's unprivileged user may not write.
              "-o", "APT::Sandbox::User=root", "-o", "Acquire::Languages=none",
              # One try: an unreachable archive fails in a moment, not after retries.
              "-o", "Acquire::Retries=0"]
    return subprocess.run(["apt-get", "-q", *config, *args], capture_output=True, text=True,
                          timeout=600, check=False, cwd=folder / "deb")


def ort_header(root: Path, *, progress: Callable[[str], None] = lambda text: None,
               ) -> tuple[Path, str, int]:
    """ONNX Runtime's C header folder (fetched once into ``root/sources``), the Debian
    package version it came from and its ``ORT_API_VERSION``."""
    folder = root / "sources" / f"onnxruntime-header-{HEADER_SUITE}"
    include, done = folder / "include", folder / "header.json"
    if not done.is_file():
        if not (include / "onnxruntime_c_api.h").is_file():
            _fetch_header(folder, progress)
        text = (include / "onnxruntime_c_api.h").read_text(errors="replace")
        api = re.search(r"^#define ORT_API_VERSION (\d+)", text, re.M)
        if api is None:
            raise InfrastructureError(f"{include / 'onnxruntime_c_api.h'} defines no "
                                      "ORT_API_VERSION: not ONNX Runtime's C header")
        package = (folder / "package.version").read_text().strip() if (
            folder / "package.version").is_file() else "given"
        done.write_text(json.dumps({"package": package, "api": int(api.group(1))}) + "\n")
    facts = json.loads(done.read_text())
    return include, str(facts["package"]), int(facts["api"])


def _fetch_header(folder: Path, progress: Callable[[str], None]) -> None:
    progress(f"fetching {HEADER_PACKAGE} (ONNX Runtime's C header) from Debian {HEADER_SUITE}")
    shutil.rmtree(folder / "deb", ignore_errors=True)
    for sub in ("lists/partial", "cache/archives/partial", "deb"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "status").touch()
    (folder / "sources.list").write_text(
        f"deb [signed-by={_KEYRING}] {_ARCHIVE} {HEADER_SUITE} main\n")
    update = _apt(folder, "update")
    # apt-get update exits 0 when the archive cannot be reached (it warns): its warnings
    # say why the download then finds no package, so they come first.
    why = [line.strip() for line in (update.stderr + update.stdout).splitlines()
           if line.startswith(("E:", "W:")) and "Sandbox" not in line]
    fetched = _apt(folder, "download", HEADER_PACKAGE)
    debs = sorted((folder / "deb").glob(f"{HEADER_PACKAGE}_*.deb"))
    if not debs:
        why += [line.strip() for line in (fetched.stderr + fetched.stdout).splitlines()
                if line.startswith("E:")]
        raise InfrastructureError(
            f"could not fetch {HEADER_PACKAGE} from Debian {HEADER_SUITE} ({_ARCHIVE}), where "
            f"ONNX Runtime's C header comes from: {why[0] if why else 'no package came'}")
    unpacked = folder / "deb" / "root"
    proc = subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(unpacked)],
                          capture_output=True, text=True, timeout=120, check=False)
    header = unpacked / "usr" / "include" / "onnxruntime"
    if proc.returncode != 0 or not (header / "onnxruntime_c_api.h").is_file():
        raise InfrastructureError(f"{debs[-1].name} holds no onnxruntime_c_api.h: "
                                  f"{proc.stderr.strip()}")
    shutil.rmtree(folder / "include", ignore_errors=True)
    shutil.copytree(header, folder / "include")
    (folder / "package.version").write_text(debs[-1].name.split("_")[1] + "\n")
    shutil.rmtree(folder / "deb", ignore_errors=True)
    for used in ("lists", "cache"):  # 20 MB of package lists and apt's cache, used once
        shutil.rmtree(folder / used, ignore_errors=True)


def build_ort_runner(architecture: str, cache_root: Path, *, version: str = ORT_VERSION,
                     progress: Callable[[str], None] = lambda text: None) -> BuiltTools:
    """benchlab's ONNX Runtime runner for ``architecture`` with the library it loads, from
    the cache or built now. Its programs: :data:`ORT_RUNNER` and :data:`ORT_LIBRARY`.

    Raises :class:`InfrastructureError` when no compiler for it is installed (naming the
    package), the wheel or the header cannot be fetched (naming the archive) or the build
    fails (with the compiler's last lines); :class:`UsageError` for an architecture the
    wheel has no library for.
    """
    toolchain = find_toolchain(architecture)  # before anything is downloaded
    cache = BuildCache(Path(cache_root))
    wheel, wheel_sha = runtime_wheel(
        cache.root, "onnxruntime", version, architecture,
        unsupported="ONNX Runtime's wheel carries its C library", progress=progress)
    include, header_package, api = ort_header(cache.root, progress=progress)
    identity = {"builder": _BUILDER, "onnxruntime": version, "wheel": wheel_sha,
                "header_package": header_package, "api": api, "architecture": architecture,
                "flags": list(FLAGS), "compiler": toolchain.version,
                "runner": sha256_of(runner_source(_SOURCE))}
    key = entry_key("ortrunner", architecture, identity)
    return cache.find_or_build(
        key, architecture, (ORT_RUNNER, ORT_LIBRARY),
        lambda: _build(cache, key, identity, toolchain, wheel, include, progress), progress)


def _build(cache: BuildCache, key: str, identity: dict[str, object], toolchain: Toolchain,
           wheel: Path, include: Path, progress: Callable[[str], None]) -> BuiltTools:
    folder = cache.folder(key)
    shutil.rmtree(folder, ignore_errors=True)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    label = f"benchlab's ONNX Runtime runner for {toolchain.architecture}"
    started = time.monotonic()
    progress(f"building {label}: unpacking the C library from {wheel.name}")
    member = f"onnxruntime/capi/libonnxruntime.so.{identity['onnxruntime']}"
    with zipfile.ZipFile(wheel) as archive:
        if member not in archive.namelist():
            raise InfrastructureError(f"{wheel.name} has no {member}")
        with archive.open(member) as source, open(bin_dir / ORT_LIBRARY, "wb") as target:
            shutil.copyfileobj(source, target)
    progress(f"building {label} with {toolchain.source}: compiling")
    argv = [toolchain.cc, *FLAGS, f"-I{include}", str(runner_source(_SOURCE)),
            "-o", str(bin_dir / ORT_RUNNER), f"-L{bin_dir}", f"-l:{ORT_LIBRARY}",
            "-Wl,-rpath,$ORIGIN"]
    compile_program(argv, folder, label)
    seconds = time.monotonic() - started
    progress(f"built {label} in {seconds:.1f} s")
    return cache.finish(key, toolchain.architecture,
                        {ORT_RUNNER: f"bin/{ORT_RUNNER}", ORT_LIBRARY: f"bin/{ORT_LIBRARY}"},
                        build_facts(identity, toolchain, seconds))
