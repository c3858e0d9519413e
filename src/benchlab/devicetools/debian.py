"""C headers a runtime's wheel lacks, from a Debian package of another suite, fetched once.

ONNX Runtime's C header (``libonnxruntime-dev``, Debian 13 "trixie") and TensorFlow Lite's
C API headers (``libtensorflow-lite-dev``, Debian unstable "sid") are packaged by Debian but
not in Debian 12, the machines' suite, and in no wheel. :func:`debian_headers` fetches the
package with ``apt-get download`` under a private configuration (sources list, lists, cache
and status in the folder it fills; the machine's apt configuration is never read or
changed), signed by Debian's own archive key, and unpacks it with ``dpkg-deb -x``. Only the
headers are kept; the package's libraries are not used (the wheel's library is the one a
runner loads).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from benchlab.errors import InfrastructureError

__all__ = ["DEBIAN_ARCHIVE", "debian_headers"]

#: The archive the packages come from (the host the machines' own apt sources name).
DEBIAN_ARCHIVE = "http://deb.debian.org/debian"
_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


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
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("lists/partial", "cache/archives/partial", "deb"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "status").touch()
    (folder / "sources.list").write_text(f"deb [signed-by={_KEYRING}] {archive} {suite} main\n")
    update = _apt(folder, "update")
    # apt-get update exits 0 when the archive cannot be reached (it warns): its warnings
    # say why the download then finds no package, so they come first.
    why = [line.strip() for line in (update.stderr + update.stdout).splitlines()
           if line.startswith(("E:", "W:")) and "Sandbox" not in line]
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
    shutil.rmtree(work, ignore_errors=True)
    for used in ("lists", "cache"):  # tens of MB of package lists and apt's cache, used once
        shutil.rmtree(folder / used, ignore_errors=True)
    return version_file.read_text().strip()


def _apt(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """apt-get under a configuration of its own in ``folder`` (``download`` writes into
    ``folder/deb``)."""
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
