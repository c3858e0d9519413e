"""A program over shared libraries, bundled to run where there is no glibc: an Android phone.

A phone's C library is Android's own (bionic); a program linked against glibc's shared
libraries, such as benchlab's ExecuTorch runner over the libraries of ExecuTorch's wheel, finds
neither glibc's loader (``/lib/ld-linux-aarch64.so.1``) nor its libraries there. The bundle is a
folder with the program, the libraries it loads, and glibc's own loader and libraries from
Debian's cross packages (``/usr/aarch64-linux-gnu/lib``: ``libc6-arm64-cross``,
``libstdc++6-arm64-cross``, ``libgcc-s1-arm64-cross``, installed with
``g++-aarch64-linux-gnu``). The device starts it as

    DIR/ld-linux-aarch64.so.1 --library-path DIR DIR/program ...

so nothing on the device is used but its kernel: glibc's dynamic loader, run as a program,
loads the program and every library from ``DIR``. Which glibc libraries go in is read from the
programs' ``NEEDED`` entries, transitively, and the loader's name from the program's
``PT_INTERP``: nothing more travels than the program asks for.

A build whose libraries come from Debian packages of another suite (the LiteRT runner over
Debian's TensorFlow Lite: :class:`~benchlab.devicetools.compile.DebianLibraries`) names its
own sysroot in its entry (:func:`sysroot_fact`): the libraries it loads and glibc are then all
taken from those packages' root, glibc of that suite, not the cross packages' (a library built
against sid's glibc 2.43 asks for symbols Debian 12's 2.36 lacks).

The bundle is an entry of the build cache (:mod:`~benchlab.devicetools.cache`), keyed by the
program's own entry and the contents of the glibc files it takes, and named by a digest of
every file's content (:attr:`GlibcBundle.digest`): a device keeps it in a folder of that name,
so a second job (or run) finds it there and pushes nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from benchlab.devicetools.cache import BuildCache, BuiltTools
from benchlab.devicetools.toolchain import host_architecture
from benchlab.spec.artifacts import sha256_of
from benchlab.errors import InfrastructureError

__all__ = ["SYSROOTS", "GlibcBundle", "elf_dependencies", "elf_soname", "glibc_bundle",
           "sysroot_fact"]

#: Architecture → (the folders glibc's libraries are taken from, the packages that put them
#: there). The host's own architecture takes the host's glibc: a bundle that runs here, where
#: its loader form is checked natively and fast.
SYSROOTS: dict[str, tuple[tuple[str, ...], str]] = {
    "aarch64": (("/usr/aarch64-linux-gnu/lib",),
                "libc6-arm64-cross, libstdc++6-arm64-cross and libgcc-s1-arm64-cross "
                "(apt-get install g++-aarch64-linux-gnu)"),
    "arm": (("/usr/arm-linux-gnueabihf/lib",),
            "libc6-armhf-cross, libstdc++6-armhf-cross and libgcc-s1-armhf-cross "
            "(apt-get install g++-arm-linux-gnueabihf)"),
}
_HOST_SYSROOT = (("/lib/x86_64-linux-gnu", "/lib64", "/usr/lib/x86_64-linux-gnu"),
                 "libc6 and libstdc++6")
#: Bump when the way a bundle is made changes, so old entries are not reused.
_BUNDLER = 1
_DT_NEEDED, _DT_STRTAB, _DT_SONAME, _PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 5, 14, 1, 2, 3
#: The fact of a build entry that names its own sysroot (:func:`sysroot_fact`).
_SYSROOT = "sysroot"


def sysroot_fact(cache_root: Path, folders: tuple[Path, ...], packages: str
                 ) -> dict[str, object]:
    """The fact a build entry in ``cache_root`` records when the libraries its programs load,
    glibc's included, are to be taken from ``folders`` (under ``cache_root``; kept relative
    to it, so a moved cache still finds them) instead of :data:`SYSROOTS`; ``packages`` says
    which packages put them there, for the error when one is missing."""
    return {_SYSROOT: {"folders": [str(Path(f).relative_to(cache_root)) for f in folders],
                       "packages": packages}}


def elf_dependencies(path: Path) -> tuple[tuple[str, ...], str | None]:
    """The ``NEEDED`` library names of ELF file ``path``, in order, and its program
    interpreter (``/lib/ld-linux-aarch64.so.1``; None for a library or a static program).

    Read from the program headers (``PT_DYNAMIC``, its string table found through the
    ``PT_LOAD`` that maps it), as the loader reads them: a stripped library has no section
    names to go by. Raises :class:`ValueError` for a file that is not ELF.
    """
    needed, _, interpreter = _dynamic(path)
    return needed, interpreter


def elf_soname(path: Path) -> str | None:
    """The ``SONAME`` of shared library ``path`` (the name a program's ``NEEDED`` entry asks
    for), or None; :class:`ValueError` for a file that is not ELF."""
    return _dynamic(path)[1]


def _dynamic(path: Path) -> tuple[tuple[str, ...], str | None, str | None]:
    """``path``'s NEEDED names, its SONAME and its program interpreter."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        phoff, = struct.unpack_from(order + "Q", data, 32)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 54)
        header, dyn = order + "IIQQQQQQ", order + "qQ"
    else:
        phoff, = struct.unpack_from(order + "I", data, 28)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 42)
        header, dyn = order + "IIIIIIII", order + "iI"
    loads, dynamic, interpreter = [], None, None
    for index in range(phnum):
        fields = struct.unpack_from(header, data, phoff + index * phentsize)
        # 64-bit: type, flags, offset, vaddr, paddr, filesz; 32-bit: type, offset, vaddr...
        kind, offset, vaddr, filesz = ((fields[0], fields[2], fields[3], fields[5]) if wide
                                       else (fields[0], fields[1], fields[2], fields[4]))
        if kind == _PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif kind == _PT_DYNAMIC:
            dynamic = (offset, filesz)
        elif kind == _PT_INTERP:
            interpreter = data[offset:offset + filesz].split(b"\0", 1)[0].decode()
    if dynamic is None:
        return (), None, interpreter
    entries, soname, strtab = [], None, None
    step = struct.calcsize(dyn)
    for at in range(dynamic[0], dynamic[0] + dynamic[1], step):
        tag, value = struct.unpack_from(dyn, data, at)
        if tag == 0:
            break
        if tag == _DT_NEEDED:
            entries.append(value)
        elif tag == _DT_SONAME:
            soname = value
        elif tag == _DT_STRTAB:
            strtab = value
    if strtab is None:
        return (), None, interpreter
    table = next((offset + strtab - vaddr for vaddr, offset, size in loads
                  if vaddr <= strtab < vaddr + size), strtab)

    def name(at: int) -> str:
        return data[table + at:data.index(b"\0", table + at)].decode()

    return (tuple(name(e) for e in entries), None if soname is None else name(soname),
            interpreter)


@dataclass(frozen=True, slots=True)
class GlibcBundle:
    """A finished bundle: its files by name (the program, its libraries, glibc's), which of
    them is the loader and which the program, and the digest of their content."""

    folder: Path
    files: dict[str, Path]
    loader: str
    program: str
    #: sha256 of every file's name and content: the device folder's name carries it.
    digest: str
    #: Whether this call built it (False: found in the cache).
    built_now: bool = False

    @property
    def size(self) -> int:
        """The bytes the bundle brings onto a device."""
        return sum(path.stat().st_size for path in self.files.values())

    def device_folder(self, prefix: str) -> str:
        """The folder name a device keeps the bundle under: ``prefix`` and the digest."""
        return f"{prefix}-{self.digest[:16]}"

    def argv(self, folder: str, *args: str) -> list[str]:
        """The command that starts the program from the bundle in ``folder`` on a device."""
        return [f"{folder}/{self.loader}", "--library-path", folder,
                f"{folder}/{self.program}", *args]


def _sysroot(tools: BuiltTools) -> tuple[tuple[str, ...], str]:
    """Where ``tools``' libraries and glibc come from: the entry's own sysroot where it names
    one (:func:`sysroot_fact`), else the cross packages' of its architecture."""
    own = tools.facts.get(_SYSROOT)
    if isinstance(own, dict):
        # The entry's folder is <cache root>/<key>: its sysroot is relative to that root.
        return (tuple(str(tools.folder.parent / f) for f in own["folders"]),
                str(own["packages"]))
    architecture = tools.architecture
    if architecture in SYSROOTS:
        return SYSROOTS[architecture]
    if architecture == host_architecture() == "x86_64":
        return _HOST_SYSROOT
    raise InfrastructureError(f"benchlab bundles glibc for {', '.join(SYSROOTS)} devices, "
                              f"not {architecture}")


def _resolve(tools: BuiltTools, program: str) -> tuple[dict[str, Path], str]:
    """Every file the bundle of ``program`` needs, by the name the loader looks for (glibc's
    taken from the sysroot, links followed), and the loader's name."""
    folders, packages = _sysroot(tools)
    own = {name: tools.program(name) for name in tools.programs}
    needed, interpreter = elf_dependencies(own[program])
    if interpreter is None:
        raise InfrastructureError(f"{program} has no program interpreter: a static program "
                                  "needs no bundle")
    loader = interpreter.rsplit("/", 1)[-1]
    found: dict[str, Path] = {program: own[program]}
    todo = [loader, *needed]
    while todo:
        name = todo.pop(0)
        if name in found:
            continue
        path = own.get(name) or next(
            (Path(folder, name) for folder in folders if Path(folder, name).exists()), None)
        if path is None:
            raise InfrastructureError(
                f"{name}, which {program} loads, is in none of {', '.join(folders)}: install "
                f"{packages}")
        found[name] = path.resolve()
        todo += elf_dependencies(found[name])[0]
    return found, loader


def glibc_bundle(tools: BuiltTools, program: str, cache_root: Path) -> GlibcBundle:
    """The bundle of ``program`` (one of ``tools``' programs) with everything it loads, from
    the cache or made now beside ``tools``' entry in ``cache_root``.

    Raises :class:`InfrastructureError` when a library it loads is in neither ``tools`` nor
    the sysroot (naming the packages that install it).
    """
    files, loader = _resolve(tools, program)
    from_sysroot = {name: sha256_of(path) for name, path in files.items()
                    if name not in tools.programs}
    identity = {"bundler": _BUNDLER, "tools": tools.key, "program": program, "loader": loader,
                "glibc": from_sysroot}
    key = "glibcbundle-" + hashlib.sha256(
        json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    cache = BuildCache(Path(cache_root))
    with cache.locked(key):
        entry = cache.find(key, tools.architecture, tuple(files))
        if entry is None:
            folder = cache.folder(key)
            shutil.rmtree(folder, ignore_errors=True)
            (folder / "bundle").mkdir(parents=True)
            for name, path in files.items():
                shutil.copyfile(path, folder / "bundle" / name)
                # The loader and the program are started; the libraries only mapped.
                (folder / "bundle" / name).chmod(0o755 if name in (loader, program) else 0o644)
            content = hashlib.sha256("".join(
                f"{name} {sha256_of(folder / 'bundle' / name)}\n" for name in sorted(files)
            ).encode()).hexdigest()
            entry = cache.finish(key, tools.architecture,
                                 {name: f"bundle/{name}" for name in files},
                                 {**identity, "content": content, "loader_name": loader})
    return GlibcBundle(folder=entry.folder / "bundle",
                       files={name: entry.program(name) for name in entry.programs},
                       loader=loader, program=program, digest=str(entry.facts["content"]),
                       built_now=entry.built_now)
