"""benchlab's ONNX Runtime runner for a CPU, built over the C library of ONNX Runtime's wheel.

The ``onnxruntime`` wheel carries, beside its Python extension, ONNX Runtime's C library
(``onnxruntime/capi/libonnxruntime.so.<version>``, exporting ``OrtGetApiBase``) for x86-64
and aarch64; it needs no Python. The C header is in no wheel: Debian packages it
(``libonnxruntime-dev``, 1.21 with C API 21, in Debian 13 "trixie"), not Debian 12: it is
fetched once (:func:`~benchlab.devicetools.debian.debian_headers`). The runner asks the
library for the header's API version: ONNX Runtime's C API is ABI-stable, and a newer
library serves every older version.

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
from collections.abc import Callable
from pathlib import Path

from benchlab.devicetools.cache import BuiltTools
from benchlab.devicetools.compile import CRunnerRecipe, WheelLibrary, find_or_build_c_runner
from benchlab.devicetools.debian import DEBIAN_ARCHIVE, debian_headers
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
FLAGS = ("-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L")
#: benchlab's own runner, shipped in this package.
_SOURCE = "ort_runner.c"
#: Bump when the way benchlab builds changes, so old entries are not reused.
_BUILDER = 1


def ort_runner_tool(version: str, api: int | str) -> str:
    """What a result records as its tool: benchlab's runner, never onnxruntime_perf_test."""
    return f"{ORT_RUNNER} (ONNX Runtime {version} C library, API {api} header)"


def ort_header(root: Path, *, archive: str = DEBIAN_ARCHIVE,
               progress: Callable[[str], None] = lambda text: None) -> tuple[Path, str, int]:
    """ONNX Runtime's C header folder (fetched once into ``root/sources`` from ``archive``),
    the Debian package version it came from and its ``ORT_API_VERSION``."""
    folder = root / "sources" / f"onnxruntime-header-{HEADER_SUITE}"
    include, done = folder / "include", folder / "header.json"
    if not done.is_file():
        package = debian_headers(folder, HEADER_PACKAGE, HEADER_SUITE, subdir="onnxruntime",
                                 into=".", marker="onnxruntime_c_api.h",
                                 what="ONNX Runtime's C header", archive=archive,
                                 progress=progress)
        text = (include / "onnxruntime_c_api.h").read_text(errors="replace")
        api = re.search(r"^#define ORT_API_VERSION (\d+)", text, re.M)
        if api is None:
            raise InfrastructureError(f"{include / 'onnxruntime_c_api.h'} defines no "
                                      "ORT_API_VERSION: not ONNX Runtime's C header")
        done.write_text(json.dumps({"package": package, "api": int(api.group(1))}) + "\n")
    facts = json.loads(done.read_text())
    return include, str(facts["package"]), int(facts["api"])


def build_ort_runner(architecture: str, cache_root: Path, *, version: str = ORT_VERSION,
                     progress: Callable[[str], None] = lambda text: None) -> BuiltTools:
    """benchlab's ONNX Runtime runner for ``architecture`` with the library it loads, from
    the cache or built now (:func:`~benchlab.devicetools.compile.find_or_build_c_runner`,
    which says what it raises). Its programs: :data:`ORT_RUNNER` and :data:`ORT_LIBRARY`."""
    recipe = CRunnerRecipe(
        label="benchlab's ONNX Runtime runner", name="ortrunner", source=_SOURCE,
        program=ORT_RUNNER, flags=FLAGS, libraries=WheelLibrary(
            package="onnxruntime", version=version,
            member=f"onnxruntime/capi/libonnxruntime.so.{version}", library=ORT_LIBRARY,
            unsupported="ONNX Runtime's wheel carries its C library"))
    return find_or_build_c_runner(recipe, architecture, cache_root, _header_facts,
                                  builder=_BUILDER, progress=progress)


def _header_facts(root: Path, progress: Callable[[str], None]) -> tuple[Path, dict[str, object]]:
    include, package, api = ort_header(root, progress=progress)
    return include, {"header_package": package, "api": api}
