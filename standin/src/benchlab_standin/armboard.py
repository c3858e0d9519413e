"""An ARM Linux board with Python: an arm64 Debian root, served by a real sshd on loopback.

The root is built from Debian's own arm64 packages (``mmdebstrap``) with Python 3.11, then the
runtimes' aarch64 wheels from the package index are unpacked into it by this host's ``pip``
(``--platform``: a wheel is a zip, so no emulation is needed to install one). Every program in
it is aarch64 code. The kernel runs them through Debian's ``qemu-aarch64-static``, registered
with ``binfmt_misc`` and its ``F`` flag (the interpreter is opened once at registration, so it
still runs inside a chroot that has no copy of it).

:class:`ArmBoard` serves it: an OpenSSH server on 127.0.0.1 whose sessions run inside the root
(``ChrootDirectory``), each on the emulated core of the board's ``QEMU_CPU``. The board's host
name is its own; ``/proc``, ``/sys`` and ``/dev`` are the host kernel's, as they would be on any
board running that kernel. What this proves and what it cannot: docs/targets.md.

The root is cached under ``/var/cache/benchlab/boards/<key>`` (the key hashes the Debian suite,
its package list and the wheels' pinned versions), built once under a lock, so concurrent test
workers wait for the first. benchlab itself is copied in when a board starts, as a user would
install it on a new board. Root is needed three times: ``mmdebstrap`` into a directory,
registering ``binfmt_misc``, and sshd's ``ChrootDirectory``.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchlab_standin.board import LoopbackBoard
from benchlab_standin.cpuview import EmulatedCpu, write_cpuinfo, write_sysfs
from benchlab_standin.emulation import BINFMT, enable_aarch64

__all__ = ["BOARD_CORES", "BOARD_RUNTIMES", "LEFT_OFF", "ArmBoard", "BoardRoot",
           "board_cache_dir", "board_requirements", "build_root", "cannot_build_root"]

#: QEMU CPU model → what it is: the three int8 paths an ARM kernel library chooses between.
BOARD_CORES = {
    "cortex-a53": "Cortex-A53: ARMv8.0, NEON without the dot-product instructions",
    "cortex-a76": "Cortex-A76: ARMv8.2 with the dot-product instructions (SDOT)",
    "max,sme=off": "QEMU's max without SME: ARMv8.6 and later, with i8mm (SMMLA), bf16, SVE2",
    "max": "QEMU's max: as above, with SME (docs/performance.md: ONNX Runtime's int8 answer "
           "there is wrong under Debian 12's QEMU 7.2)",
}
#: The short name of each core, for the board's host name.
_SHORT = {"cortex-a53": "a53", "cortex-a76": "a76", "max,sme=off": "i8mm", "max": "sme"}
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
#: Debian's packages beside the essential set: Python 3.11 (the wheels' cp311), OpenMP (ONNX
#: Runtime and OpenVINO link it), procps (ps, kill by group: how a job's processes are ended).
DEBIAN_PACKAGES = ("python3", "libgomp1", "procps")
#: The runtimes whose aarch64 wheels go on the board, at this host's versions.
BOARD_RUNTIMES = ("onnxruntime", "ai-edge-litert", "openvino")
#: benchlab's own dependencies (pyproject's ``dependencies``), for the runner on the board.
_BENCHLAB_DEPENDENCIES = ("numpy", "pydantic", "pyyaml", "sqlalchemy", "typer", "rich")
#: Runtimes left off the board, and why: what a job for one of them says.
LEFT_OFF = {
    "executorch": "ExecuTorch's Python runtime loads libtorch, and torch 2.13.0's aarch64 wheel "
                  "on PyPI is a CUDA 13 build (libtorch_cpu.so needs libcudart.so.13 and "
                  "libcupti.so.13; libtorch.so needs libtorch_cuda.so, cuBLAS, cuDNN, NCCL: "
                  "gigabytes); its CPU-only aarch64 build is on download.pytorch.org only",
    "torch": "the same CUDA 13 aarch64 wheel",
}
_PLATFORMS = ("manylinux2014_aarch64", *(f"manylinux_2_{v}_aarch64"
                                         for v in (17, 24, 26, 27, 28, 31, 34, 35, 36)))
_SITE = "usr/local/lib/python3.11/dist-packages"


def board_cache_dir() -> Path:
    """Where the machine keeps board roots: ``/var/cache/benchlab/boards``. sshd's
    ``ChrootDirectory`` wants every folder above a root owned and writable by root alone,
    which a home's or ``/tmp``'s cache is not always."""
    return Path("/var/cache/benchlab/boards")


def board_requirements() -> list[str]:
    """The wheels the board gets: the runtimes and benchlab's dependencies, each pinned to the
    version this host runs (unpinned where the host has none), so that a comparison across
    instruction sets compares one runtime version, not two."""
    pinned = []
    for name in (*BOARD_RUNTIMES, *_BENCHLAB_DEPENDENCIES):
        try:
            pinned.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(name)
    return pinned


@dataclass(frozen=True, slots=True)
class BoardRoot:
    """A finished root: where it is, and how it was made (``entry.json``)."""

    folder: Path
    facts: dict[str, object]
    built_now: bool = False

    @property
    def system(self) -> Path:
        """The root file system sessions run inside."""
        return self.folder / "root"


def _key(requirements: list[str]) -> str:
    text = json.dumps({"suite": SUITE, "packages": DEBIAN_PACKAGES, "wheels": requirements,
                       "platforms": _PLATFORMS}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: list[str], what: str, log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out,
                              stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-15:]
        raise RuntimeError(f"{what} failed (exit {done.returncode}); the end of {log}:\n"
                           + "\n".join(tail))


def _unsafe_for_chroot(path: Path) -> Path | None:
    """The first folder above ``path`` that is not root's alone (sshd refuses to chroot)."""
    for folder in [path, *path.parents]:
        try:
            info = folder.stat()
        except FileNotFoundError:
            continue
        if info.st_uid != 0 or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return folder
    return None


def build_root(cache: Path | None = None, *, progress: Callable[[str], None] | None = None,
               ) -> BoardRoot:
    """The board's root for this host's pinned wheels: found in ``cache``, or built there
    (about two and a half minutes on 2 cores, most of it Debian's package scripts running
    under emulation). Raises ``RuntimeError`` saying why it cannot be built here."""
    say = progress or (lambda _text: None)
    cache = cache or board_cache_dir()
    requirements = board_requirements()
    key = _key(requirements)
    folder = cache / key
    with _locked(cache / f".{key}.lock"):
        try:
            facts = json.loads((folder / "entry.json").read_text())
            return BoardRoot(folder, facts)
        except (OSError, ValueError):
            pass
        why = cannot_build_root()
        if why:
            raise RuntimeError(f"cannot build an ARM board root here: {why}")
        _refuse_mounted(folder)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        log = folder / "build.log"
        began = time.monotonic()
        say(f"building an arm64 Debian {SUITE} root in {folder} (mmdebstrap)")
        _run(["mmdebstrap", "--variant=minbase", "--architectures=arm64",
              f"--include={','.join(DEBIAN_PACKAGES)}", SUITE, str(folder / "root"), MIRROR],
             "mmdebstrap", log)
        debian_s = time.monotonic() - began
        say(f"installing the aarch64 wheels: {' '.join(requirements)}")
        platforms = [arg for tag in _PLATFORMS for arg in ("--platform", tag)]
        _run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
              "--no-warn-conflicts", "--target", str(folder / "root" / _SITE),
              "--only-binary=:all:", *platforms, "--python-version", "3.11",
              "--implementation", "cp", "--abi", "cp311", *requirements],
             "pip install (aarch64 wheels)", log)
        facts = {"suite": SUITE, "packages": list(DEBIAN_PACKAGES), "wheels": requirements,
                 "left_off": LEFT_OFF, "debian_seconds": round(debian_s, 1),
                 "build_seconds": round(time.monotonic() - began, 1),
                 "bytes": _size(folder / "root"),
                 "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = folder / "entry.json.tmp"
        tmp.write_text(json.dumps(facts, indent=1) + "\n")
        tmp.replace(folder / "entry.json")  # last: a cut build leaves no entry
        say(f"built in {facts['build_seconds']} s ({int(facts['bytes']) / 2**20:.0f} MiB)")
        return BoardRoot(folder, facts, built_now=True)


def _refuse_mounted(folder: Path) -> None:
    """A cut build may leave the host's /dev or /proc mounted in it: removing the folder then
    would remove through them. Refuse, naming the mount."""
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return
    inside = [line.split()[1] for line in lines
              if len(line.split()) > 1 and line.split()[1].startswith(f"{folder}/")]
    if inside:
        raise RuntimeError(f"{inside[0]} is still mounted (a cut build?): unmount it "
                           f"(umount -R {inside[0]}) before the root is built again")


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def cannot_build_root() -> str | None:
    """None when a board root can be built on this machine; else why not."""
    if os.geteuid() != 0:
        return "mmdebstrap into a directory, binfmt_misc and sshd's ChrootDirectory need root"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed (apt-get install mmdebstrap)"
    return aarch64_with_f_flag()


def aarch64_with_f_flag() -> str | None:
    """None when aarch64 programs run here, also inside a chroot; else why not."""
    why = enable_aarch64()
    if why:
        return why
    flags = next((line.split(":", 1)[1].strip() for line in
                  (BINFMT / "qemu-aarch64").read_text().splitlines()
                  if line.startswith("flags:")), "")
    if "F" not in flags:
        return (f"the aarch64 binfmt_misc entry lacks the F flag (flags: {flags or 'none'}): "
                "its interpreter would be looked for inside the chroot")
    return None


def install_benchlab(system: Path) -> None:
    """Copy the benchlab package this process runs into the root (as ``pip install`` would on
    a new board), when the copy there differs; concurrent boards wait for one copy."""
    import benchlab

    source = Path(benchlab.__file__).parent
    files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(source)).encode())
        digest.update(path.read_bytes())
    stamp = digest.hexdigest()
    target = system / _SITE / "benchlab"
    with _locked(system.parent / ".benchlab.lock"):
        if (target / ".source-hash").exists() and (
                target / ".source-hash").read_text() == stamp:
            return
        fresh = target.with_name(".benchlab.new")
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(source, fresh, ignore=shutil.ignore_patterns("__pycache__"))
        (fresh / ".source-hash").write_text(stamp)
        old = target.with_name(".benchlab.old")
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        fresh.rename(target)
        shutil.rmtree(old, ignore_errors=True)


# What the emulated core answers: ``mrs x0, midr_el1; ret`` (a kernel with HWCAP_CPUID traps
# and answers the same on a real board), and the hwcaps its kernel gives every program.
_CPU_PROGRAM = """
import ctypes, mmap
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(bytes.fromhex("000038d5c0035fd6"))
read = ctypes.CFUNCTYPE(ctypes.c_uint64)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
libc = ctypes.CDLL(None)
libc.getauxval.restype = ctypes.c_ulong
print(read(), libc.getauxval(16), libc.getauxval(26))
"""


def read_cpu(system: Path, cpu: str) -> EmulatedCpu:
    """Ask the emulated ``cpu`` itself, with the root's Python."""
    done = subprocess.run([shutil.which("chroot") or "/usr/sbin/chroot", str(system),
                           "/usr/bin/python3", "-c", _CPU_PROGRAM],
                          env={"QEMU_CPU": cpu, "PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the emulated {cpu} did not run Python: {done.stderr.strip()[-300:]}")
    midr, hwcap, hwcap2 = (int(word) for word in done.stdout.split()[-3:])
    return EmulatedCpu(midr, hwcap, hwcap2)


@dataclass
class ArmBoard:
    """A board on an emulated ``cpu`` (a :data:`BOARD_CORES` name): ``start()`` builds or finds
    the root, puts benchlab in it and starts the sshd; ``target_text`` reaches it."""

    state: Path
    cpu: str = "cortex-a53"
    cache: Path | None = None
    progress: Callable[[str], None] | None = None
    root: BoardRoot | None = None
    #: The emulated core as read when the board starts.
    core: EmulatedCpu | None = None
    _server: LoopbackBoard | None = field(default=None, repr=False)

    @property
    def alias(self) -> str:
        """The ssh alias (and host name) of this board."""
        return f"arm-{_SHORT.get(self.cpu, self.cpu)}-board"

    @property
    def target_text(self) -> str:
        """The ``--target`` value that reaches this board."""
        if self._server is None:
            raise RuntimeError("the board is not started")
        return f"{self._server.target_text},python=python3"

    @property
    def server(self) -> LoopbackBoard:
        """The running sshd and its client config."""
        if self._server is None:
            raise RuntimeError("the board is not started")
        return self._server

    def start(self) -> ArmBoard:
        """Build or find the root, then serve it; raises ``RuntimeError`` with the reason
        when this machine cannot (not root, no emulator, a cache path sshd refuses)."""
        if self.cpu not in BOARD_CORES:
            raise ValueError(f"no ARM board for {self.cpu!r}; there are {', '.join(BOARD_CORES)}")
        why = cannot_build_root()
        if why:
            raise RuntimeError(f"the ARM board cannot start: {why}")
        self.root = self.root or build_root(self.cache, progress=self.progress)
        unsafe = _unsafe_for_chroot(self.root.system)
        if unsafe is not None:
            raise RuntimeError(
                f"sshd will not chroot into {self.root.system}: {unsafe} is not owned and "
                "writable by root alone; keep board roots under /var/cache/benchlab/boards")
        install_benchlab(self.root.system)
        self.state.mkdir(parents=True, exist_ok=True)
        self.core = read_cpu(self.root.system, self.cpu)
        # As many CPUs as the host has: the emulated threads run on them.
        count = len(os.sched_getaffinity(0))
        write_sysfs(self.state / "sys", self.core, count)
        write_cpuinfo(self.state / "cpuinfo", self.core, count)
        self._server = LoopbackBoard(
            self.state, alias=self.alias, system=self.root.system,
            session_env={"QEMU_CPU": self.cpu}, hostname=self.alias,
            binds={"/sys": self.state / "sys", "/proc/cpuinfo": self.state / "cpuinfo"},
        ).start()
        return self

    def stop(self) -> None:
        """Stop the sshd (the board's mounts leave with its namespace)."""
        if self._server is not None:
            self._server.stop()
        self._server = None

    def __enter__(self) -> ArmBoard:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
