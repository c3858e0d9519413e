"""benchlab's LiteRT runner for a CPU, built over the TensorFlow Lite C API of LiteRT-LM's
library, or of Debian's TensorFlow Lite for an ARMv8.0 CPU.

No wheel benchlab installs carries a TFLite C library: ``ai-edge-litert``'s ``libLiteRt.so``
exports the LiteRT C API only, with no headers anywhere. The ``litert-lm-api`` wheel (LiteRT's
LLM runtime) does: its ``litert_lm/liblitert-lm.so``, for x86-64 and aarch64 glibc, exports
TFLite's C API (``TfLiteInterpreterCreate``...) with the XNNPACK delegate, and needs only
glibc. It is a different build from the host's Python LiteRT (TFLite 2.23 inside LiteRT-LM,
not ``ai-edge-litert``'s): each result names the library that ran. The library is large
(126 MiB on x86-64, 127 MiB on aarch64), as it carries LiteRT-LM's own code too: a phone
keeps it by content, pushed once.

Its aarch64 library runs LDAPR (ARMv8.3, FEAT_LRCPC) while it loads, so an ARMv8.0 core (a
Cortex-A53) cannot load it. :func:`build_debian_litert_runner` builds the same runner over
Debian's ``libtensorflow-lite2.14.1`` (sid; ARMv8.0's baseline), with every package it
depends on and sid's glibc, which it needs (2.38 or later), all as apt resolves them
(:func:`~benchlab.devicetools.debian.debian_root`): the phone's bundle takes its libraries and
glibc from them. Debian builds that library without the XNNPACK delegate: the runner then
runs TFLite's built-in kernels (it declares the delegate's functions weak).

TFLite's C API headers come from Debian's ``libtensorflow-lite-dev`` (2.14, Debian unstable
"sid"; Debian 12 has none), fetched once (:func:`~benchlab.devicetools.debian.
debian_headers`); the functions they lack (the XNNPACK delegate, signatures) are declared in
``litert_runner.c``. TFLite's C API is ABI-stable: the 2.14 declarations serve 2.23's library.

The key of a build: the wheel's version and hash (or the Debian packages' versions), the
headers' package version, the architecture, the flags, the compiler's version and the
runner's source.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchlab.devicetools.cache import BuiltTools
from benchlab.devicetools.compile import (
    CRunnerRecipe,
    DebianLibraries,
    WheelLibrary,
    find_or_build_c_runner,
)
from benchlab.devicetools.debian import DEBIAN_ARCHIVE, debian_headers

__all__ = ["DEBIAN_TFLITE", "HEADER_PACKAGE", "LITERT_LIBRARY", "LITERT_LM_LIBRARY",
           "LITERT_LM_VERSION", "LITERT_RUNNER", "build_debian_litert_runner",
           "build_litert_runner", "litert_header", "litert_runner_tool"]

#: The runner's program name on a device.
LITERT_RUNNER = "benchlab-litert-runner"
#: The litert-lm-api release whose library the runner loads.
LITERT_LM_VERSION = "0.18.1"
#: The library as the wheel names it (no soname: the runner's NEEDED entry names the file).
LITERT_LIBRARY = "liblitert-lm.so"
#: What the runner over it says it loads (its first line; a result's tool names it).
LITERT_LM_LIBRARY = f"litert-lm-api {LITERT_LM_VERSION}'s {LITERT_LIBRARY}"
#: The Debian package with TFLite's C API headers, and the suite that has it.
HEADER_PACKAGE, HEADER_SUITE = "libtensorflow-lite-dev", "sid"
#: Debian's TensorFlow Lite library for an ARMv8.0 CPU (its package, of the same suite): the
#: one package named; what it depends on, the versions and its soname are apt's and the
#: file's to say.
DEBIAN_TFLITE = "libtensorflow-lite2.14.1"
#: The wheel's platform tags: glibc 2.27, not the 2.28 of the other runtimes' wheels.
PLATFORMS = {"x86_64": "manylinux_2_27_x86_64", "aarch64": "manylinux_2_27_aarch64"}
FLAGS = ("-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L")
_SOURCE = "litert_runner.c"
#: The macro the runner's source is told its library in.
_MACRO = "LITERT_LIBRARY"
#: Bump when the way benchlab builds changes, so old entries are not reused.
_BUILDER = 1


def litert_runner_tool(tflite_version: str, library: str = LITERT_LM_LIBRARY, *,
                       xnnpack: bool = True) -> str:
    """What a result records as its tool: benchlab's runner, never benchmark_model, and the
    library that ran (as the runner names it), ``xnnpack``: whether that library has the
    XNNPACK delegate."""
    without = "" if xnnpack else ", without XNNPACK"
    return f"{LITERT_RUNNER} (TensorFlow Lite {tflite_version} C API of {library}{without})"


def litert_header(root: Path, *, archive: str = DEBIAN_ARCHIVE,
                  progress: Callable[[str], None] = lambda text: None) -> tuple[Path, str]:
    """The include folder with TFLite's C API headers (fetched once into ``root/sources``)
    and the Debian package version they came from."""
    folder = root / "sources" / f"tflite-headers-{HEADER_SUITE}"
    package = debian_headers(folder, HEADER_PACKAGE, HEADER_SUITE, subdir="tensorflow",
                             into="tensorflow", marker="lite/core/c/c_api.h",
                             what="TensorFlow Lite's C API headers", archive=archive,
                             progress=progress)
    return folder / "include", package


def build_litert_runner(architecture: str, cache_root: Path, *,
                        progress: Callable[[str], None] = lambda text: None) -> BuiltTools:
    """benchlab's LiteRT runner for ``architecture`` with the library it loads, from the
    cache or built now (:func:`~benchlab.devicetools.compile.find_or_build_c_runner`, which
    says what it raises). Its programs: :data:`LITERT_RUNNER` and :data:`LITERT_LIBRARY`."""
    recipe = CRunnerRecipe(
        label="benchlab's LiteRT runner", name="litertrunner", source=_SOURCE,
        program=LITERT_RUNNER, flags=FLAGS, libs=("-lm",), describe_macro=_MACRO,
        libraries=WheelLibrary(
            package="litert-lm-api", version=LITERT_LM_VERSION,
            member=f"litert_lm/{LITERT_LIBRARY}", library=LITERT_LIBRARY, platforms=PLATFORMS,
            unsupported="litert-lm-api's wheel carries TFLite's C library"))
    return find_or_build_c_runner(recipe, architecture, cache_root, _header_facts,
                                  builder=_BUILDER, progress=progress)


def build_debian_litert_runner(architecture: str, cache_root: Path, *,
                               progress: Callable[[str], None] = lambda text: None,
                               ) -> BuiltTools:
    """benchlab's LiteRT runner for ``architecture`` over Debian's TensorFlow Lite
    (:data:`DEBIAN_TFLITE` with what it depends on, glibc included), from the cache or
    built now. Its programs: :data:`LITERT_RUNNER` and the library under its soname; its
    entry names the packages' root as its sysroot (the bundle's libraries and glibc)."""
    recipe = CRunnerRecipe(
        label="benchlab's LiteRT runner over Debian's TensorFlow Lite", name="litertdebian",
        source=_SOURCE, program=LITERT_RUNNER, flags=FLAGS, libs=("-lm",),
        describe_macro=_MACRO, libraries=DebianLibraries(DEBIAN_TFLITE, HEADER_SUITE))
    return find_or_build_c_runner(recipe, architecture, cache_root, _header_facts,
                                  builder=_BUILDER, progress=progress)


def _header_facts(root: Path, progress: Callable[[str], None]) -> tuple[Path, dict[str, object]]:
    include, package = litert_header(root, progress=progress)
    return include, {"header_package": package}
