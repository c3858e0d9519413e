"""A runtime's wheel from PyPI, for a CPU, as the source of the libraries a native runner links.

ExecuTorch's and ONNX Runtime's wheels carry their runtime's shared libraries for x86-64 and
aarch64 (docs/runtimes.md); benchlab's runners are built against them. A wheel is downloaded
once into the device tools' ``sources`` folder and hashed once (its digest is part of each
build's cache key).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from benchlab.errors import InfrastructureError, UsageError
from benchlab.spec.artifacts import sha256_of

__all__ = ["PLATFORMS", "runtime_wheel"]

#: The wheel platform tag of each CPU benchlab builds runners for.
PLATFORMS = {"x86_64": "manylinux_2_28_x86_64", "aarch64": "manylinux_2_28_aarch64"}


def runtime_wheel(root: Path, package: str, version: str, architecture: str, *,
                  unsupported: str, platforms: Mapping[str, str] = PLATFORMS,
                  progress: Callable[[str], None] = lambda text: None) -> tuple[Path, str]:
    """``package``'s wheel of ``version`` for ``architecture`` (downloaded once into
    ``root/sources``) and its sha256; ``unsupported`` begins the error for a CPU with no
    wheel ("ExecuTorch ships its runtime libraries"); ``platforms``: the wheel's platform
    tag by CPU, where a package's differ from :data:`PLATFORMS`."""
    platform = platforms.get(architecture)
    if platform is None:
        raise UsageError(f"{unsupported} for {' and '.join(platforms)}, not {architecture}")
    downloads = root / "sources" / f"{package}-{version}-{architecture}"
    # A wheel's file name spells the package with underscores (litert_lm_api-0.18.1-...).
    pattern = f"{package.replace('-', '_')}-{version}-*.whl"
    wheel = next(downloads.glob(pattern), None)
    if wheel is None:
        progress(f"downloading {package} {version}'s wheel for {architecture} from PyPI")
        downloads.mkdir(parents=True, exist_ok=True)
        # --python-version: the runtime libraries are the same in every Python's wheel; 3.11
        # names one that exists. --isolated: not the project's pip constraints.
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--isolated", "--quiet", "--no-deps",
             "--only-binary=:all:", "--platform", platform, "--python-version", "3.11",
             "--dest", str(downloads), f"{package}=={version}"],
            capture_output=True, text=True, timeout=1800, check=False)
        wheel = next(downloads.glob(pattern), None)
        if proc.returncode != 0 or wheel is None:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            raise InfrastructureError(
                f"could not download {package} {version}'s wheel for {architecture} from "
                f"PyPI: {why[-1] if why else proc.returncode}")
    digest_file = wheel.with_name(wheel.name + ".sha256")
    if not digest_file.is_file():  # hashed once: tens of MB again per job would be repeated I/O
        digest_file.write_text(sha256_of(wheel) + "\n")
    return wheel, digest_file.read_text().strip()
