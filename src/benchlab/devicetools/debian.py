"""Files from Debian packages of another suite, fetched by apt under a private configuration.

ONNX Runtime's C header (``libonnxruntime-dev``, Debian 13 "trixie") and TensorFlow Lite's
C API headers (``libtensorflow-lite-dev``, Debian unstable "sid") are packaged by Debian but
not in Debian 12, the machines' suite, and in no wheel: :func:`debian_headers` takes a
package's headers. TensorFlow Lite's own library for an ARMv8.0 CPU comes from Debian too
(``libtensorflow-lite2.14.1``, sid): :func:`debian_root` unpacks a package with every package
it depends on, resolved by apt for a CPU (the machine's or another), glibc included, into one
folder a runner links against and its bundle takes its libraries from.

Either fetches with ``apt-get download`` under a private configuration (sources list, lists,
cache and status in the folder it fills; the machine's apt configuration is never read or
changed), signed by Debian's own archive key, unpacks with ``dpkg-deb -x``, and fetches once:
a second call finds the folder filled and asks no archive.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchlab.devicetools.toolchain import gnu_triplet
from benchlab.errors import InfrastructureError, UsageError

__all__ = ["DEBIAN_ARCHITECTURES", "DEBIAN_ARCHIVE", "DebianRoot", "debian_headers",
           "debian_root"]

#: The archive the packages come from (the host the machines' own apt sources name).
DEBIAN_ARCHIVE = "http://deb.debian.org/debian"
_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
#: benchlab's architecture names → Debian's (a package of one puts its libraries in
#: ``usr/lib/<its GNU triplet>``: :func:`~benchlab.devicetools.toolchain.gnu_triplet`).
DEBIAN_ARCHITECTURES = {"aarch64": "arm64", "x86_64": "amd64", "arm": "armhf"}
_SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")


def debian_headers(folder: Path, package: str, suite: str, *, subdir: str, into: str,
                   marker: str, what: str, archive: str = DEBIAN_ARCHIVE,
                   progress: Callable[[str], None] = lambda text: None) -> str:
    """``package``'s ``usr/include/<subdir>`` copied once to ``folder/include/<into>``, and
    the package's version (``"given"`` when the headers were put there by hand). ``marker``
    (a file under ``<subdir>``, and so under ``include/<into>``) tells that they are there; ``what`` names them in
    messages ("ONNX Runtime's C header").

    Raises :class:`InfrastructureError` naming the package, the suite and the archive when
    it cannot be fetched, and what to put where instead.
    """
    include = folder / "include"
    version_file = folder / "package.version"
    if (include / into / marker).is_file():
        return version_file.read_text().strip() if version_file.is_file() else "given"
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise InfrastructureError(f"fetching {what} needs apt-get and dpkg-deb (Debian's "
                                  f"{package} package); or put {marker} in {include / into}")
    progress(f"fetching {package} ({what}) from Debian {suite}")
    work = folder / "deb"
    why = _apt_update(folder, suite, archive)
    fetched = _apt(folder, "download", package)
    debs = sorted(work.glob(f"{package}_*.deb"))
    if not debs:
        why += [line.strip() for line in (fetched.stderr + fetched.stdout).splitlines()
                if line.startswith("E:")]
        raise InfrastructureError(
            f"could not fetch {package} from Debian {suite} ({archive}), where {what} "
            f"comes from: {why[0] if why else 'no package came'}")
    unpacked = work / "root"
    proc = subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(unpacked)],
                          capture_output=True, text=True, timeout=120, check=False)
    source = unpacked / "usr" / "include" / subdir
    if proc.returncode != 0 or not (source / marker).is_file():
        raise InfrastructureError(f"{debs[-1].name} holds no {subdir}/{marker}: "
                                  f"{proc.stderr.strip()}")
    target = (include / into).resolve()
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target)
    version_file.write_text(debs[-1].name.split("_")[1] + "\n")
    _clean(folder)
    return version_file.read_text().strip()


@dataclass(frozen=True, slots=True)
class DebianRoot:
    """Debian packages unpacked into one folder (:func:`debian_root`): ``package`` and every
    package it depends on, for ``architecture`` (benchlab's name), from ``suite``."""

    #: The unpacked root (its ``usr/lib/<triplet>`` holds the libraries).
    folder: Path
    package: str
    suite: str
    architecture: str
    #: Every package unpacked, name → version, as apt resolved them (``package`` first).
    packages: dict[str, str]
    #: The shared objects ``package`` itself installs, relative to :attr:`folder`.
    libraries: tuple[str, ...]

    @property
    def version(self) -> str:
        """``package``'s version."""
        return self.packages[self.package]

    def library_folders(self) -> tuple[Path, ...]:
        """Where the packages' libraries are, as the loader of that architecture looks."""
        triplet = gnu_triplet(self.architecture)
        return tuple(self.folder / sub / triplet for sub in ("usr/lib", "lib")
                     if (self.folder / sub / triplet).is_dir())


def debian_root(folder: Path, package: str, suite: str, architecture: str, *,
                archive: str = DEBIAN_ARCHIVE,
                progress: Callable[[str], None] = lambda text: None) -> DebianRoot:
    """``package`` of Debian ``suite`` for ``architecture`` with everything it depends on
    (``apt-cache depends --recurse``: Depends and Pre-Depends, no Recommends), unpacked once
    into ``folder/root``; the packages' names and versions are read from what apt fetched
    and recorded in ``folder/packages.json``, written last (its presence: fetched).

    Raises :class:`UsageError` for an architecture Debian has no name for here and
    :class:`InfrastructureError` naming the package, the suite and the archive when it
    cannot be fetched.
    """
    if architecture not in DEBIAN_ARCHITECTURES:
        raise UsageError(f"benchlab fetches Debian's {package} for "
                         f"{', '.join(DEBIAN_ARCHITECTURES)}, not {architecture}")
    record, root = folder / "packages.json", folder / "root"
    try:
        done = json.loads(record.read_text())
        return DebianRoot(root, package, suite, architecture, dict(done["packages"]),
                          tuple(done["libraries"]))
    except (OSError, ValueError, KeyError):
        pass
    tools = ("apt-get", "apt-cache", "dpkg-deb")
    if any(shutil.which(tool) is None for tool in tools):
        raise InfrastructureError(f"fetching Debian's {package} needs {', '.join(tools)}")
    debian = DEBIAN_ARCHITECTURES[architecture]
    progress(f"fetching {package} ({debian}) and the packages it depends on from Debian {suite}")
    why = _apt_update(folder, suite, archive, debian)
    depends = _apt(folder, "depends", "--recurse", "--no-recommends", "--no-suggests",
                   "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances", package,
                   tool="apt-cache", architecture=debian)
    # Each package apt resolved is a line of its own at the line's start; a virtual one is
    # <bracketed>, its dependencies indented below it.
    names = list(dict.fromkeys(line.strip() for line in depends.stdout.splitlines()
                               if line[:1] not in ("", " ", "<")))
    if package not in names:
        why += [line.strip() for line in depends.stderr.splitlines() if line.startswith("E:")]
        raise InfrastructureError(
            f"could not resolve Debian's {package} ({debian}) in {suite} ({archive}): "
            f"{why[0] if why else 'apt found no such package'}")
    fetched = _apt(folder, "download", *names, architecture=debian)
    debs = sorted((folder / "deb").glob("*.deb"))
    if len(debs) < len(names):
        why += [line.strip() for line in (fetched.stderr + fetched.stdout).splitlines()
                if line.startswith("E:")]
        raise InfrastructureError(
            f"could not fetch {package} and what it depends on from Debian {suite} "
            f"({archive}): {why[0] if why else f'{len(debs)} of {len(names)} packages came'}")
    shutil.rmtree(root, ignore_errors=True)
    packages: dict[str, str] = {}
    libraries: tuple[str, ...] = ()
    for deb in debs:
        name, version = _deb_field(deb, "Package"), _deb_field(deb, "Version")
        packages[name] = version
        _dpkg_deb(deb, "-x", str(root))
        if name == package:  # its own shared objects (files, not links): what is linked
            files = [line.split()[-1].lstrip("./") for line in
                     _dpkg_deb(deb, "-c").stdout.splitlines() if line.startswith("-")]
            libraries = tuple(path for path in files if _SHARED_OBJECT.search(path))
    packages = {package: packages[package], **dict(sorted(packages.items()))}
    record.write_text(json.dumps({"packages": packages, "libraries": libraries}, indent=1) + "\n")
    _clean(folder)
    return DebianRoot(root, package, suite, architecture, packages, libraries)


def _deb_field(deb: Path, name: str) -> str:
    return _dpkg_deb(deb, "-f", name).stdout.strip()


def _dpkg_deb(deb: Path, option: str, *more: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["dpkg-deb", option, str(deb), *more], capture_output=True,
                          text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise InfrastructureError(f"dpkg-deb {option} {deb.name} failed: {proc.stderr.strip()}")
    return proc


def _apt_update(folder: Path, suite: str, archive: str, architecture: str | None = None,
                ) -> list[str]:
    """A private apt configuration in ``folder`` for ``suite`` (only ``architecture``'s
    packages where given, Debian's name), its package lists fetched; the warnings that say
    why a later step finds no package."""
    shutil.rmtree(folder / "deb", ignore_errors=True)
    for sub in ("lists/partial", "cache/archives/partial", "deb"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "status").touch()
    arch = f"arch={architecture} " if architecture else ""
    (folder / "sources.list").write_text(
        f"deb [{arch}signed-by={_KEYRING}] {archive} {suite} main\n")
    update = _apt(folder, "update", architecture=architecture)
    # apt-get update exits 0 when the archive cannot be reached (it warns): its warnings
    # say why the download then finds no package, so they come first.
    return [line.strip() for line in (update.stderr + update.stdout).splitlines()
            if line.startswith(("E:", "W:")) and "Sandbox" not in line]


def _clean(folder: Path) -> None:
    """Tens of MB of package lists, apt's cache and the packages, used once."""
    for used in ("lists", "cache", "deb"):
        shutil.rmtree(folder / used, ignore_errors=True)


def _apt(folder: Path, *args: str, tool: str = "apt-get",
         architecture: str | None = None) -> subprocess.CompletedProcess[str]:
    """``tool`` (apt-get, apt-cache) under a configuration of its own in ``folder``
    (``download`` writes into ``folder/deb``), for ``architecture``'s packages (Debian's
    name) where given, else the machine's."""
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
    if architecture:  # another CPU's packages, as that CPU's own apt would resolve them
        config += ["-o", f"APT::Architecture={architecture}",
                   "-o", f"APT::Architectures={architecture}"]
    return subprocess.run([tool, "-q", *config, *args], capture_output=True, text=True,
                          timeout=600, check=False, cwd=folder / "deb")
