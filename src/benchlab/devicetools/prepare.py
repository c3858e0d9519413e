"""Everything benchlab builds for devices of one architecture, built ahead of a run.

A device without Python runs programs benchlab builds for it (llama.cpp's runner,
ExecuTorch's over the libraries of ExecuTorch's wheel, ONNX Runtime's over the C library
of ONNX Runtime's wheel, LiteRT's over the TFLite C API of LiteRT-LM's library and, for an
aarch64 CPU without LiteRT-LM's ARMv8.3 instructions, over Debian's TensorFlow Lite). The
first run on such a device would build them inside the run, minutes before its first number;
:func:`prepare_device_tools` builds them beforehand into the artifact cache, where a run finds
them by key, and says what it built and how long it took (``benchlab prepare --arch aarch64``).
The test suite calls the same function before its tests start (tests/prebuild.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchlab.devicetools.cache import BuiltTools
from benchlab.devicetools.etrunner import ET_RUNNER, ET_VERSION, build_et_runner
from benchlab.devicetools.glibcbundle import SYSROOTS, glibc_bundle
from benchlab.devicetools.litertrunner import (
    DEBIAN_TFLITE,
    LITERT_LM_VERSION,
    LITERT_RUNNER,
    build_debian_litert_runner,
    build_litert_runner,
)
from benchlab.devicetools.llamacpp import RUNNER, build_llama_tools
from benchlab.devicetools.ortrunner import ORT_RUNNER, ORT_VERSION, build_ort_runner
from benchlab.errors import UsageError
from benchlab.spec.artifacts import default_cache_dir

__all__ = ["DEVICE_TOOLS", "ONLY_FOR", "PreparedTool", "device_tools_dir", "prepare_device_tools"]

#: What :func:`prepare_device_tools` builds, by name: llama.cpp's runner, ExecuTorch's,
#: ONNX Runtime's, LiteRT's (over LiteRT-LM's library, and over Debian's TensorFlow Lite).
DEVICE_TOOLS = ("llamacpp", "executorch", "onnxruntime", "litert", "litert-debian")
#: benchlab's own runners over a runtime's shipped libraries: a phone's copy is bundled.
OWN_RUNNERS = ("executorch", "onnxruntime", "litert", "litert-debian")
#: The tools only some CPUs run, and those CPUs: LiteRT over Debian's TensorFlow Lite is what
#: an ARMv8.0 core runs (frameworks/tflite/native.py); no other CPU is given it.
ONLY_FOR = {"litert-debian": ("aarch64",)}
_Builder = Callable[..., BuiltTools]
#: Each tool's builder, its program and what it is.
_BUILDERS: dict[str, tuple[_Builder, str, str]] = {
    "llamacpp": (build_llama_tools, RUNNER, f"llama.cpp's runner ({RUNNER})"),
    "executorch": (build_et_runner, ET_RUNNER,
                   f"ExecuTorch's runner ({ET_RUNNER}, ExecuTorch {ET_VERSION} libraries)"),
    "onnxruntime": (build_ort_runner, ORT_RUNNER,
                    f"ONNX Runtime's runner ({ORT_RUNNER}, ONNX Runtime {ORT_VERSION} C "
                    "library)"),
    "litert": (build_litert_runner, LITERT_RUNNER,
               f"LiteRT's runner ({LITERT_RUNNER}, TFLite C API of litert-lm-api "
               f"{LITERT_LM_VERSION})"),
    "litert-debian": (build_debian_litert_runner, LITERT_RUNNER,
                      f"LiteRT's runner for ARMv8.0 ({LITERT_RUNNER}, Debian's "
                      f"{DEBIAN_TFLITE})"),
}


def device_tools_dir(cache_root: Path) -> Path:
    """Where an artifact cache keeps the programs built for devices."""
    return Path(cache_root) / "devicetools"


@dataclass(frozen=True, slots=True)
class PreparedTool:
    """One thing built ahead and ready in its cache (a program, an emulated device's root):
    what it is and for which CPU, where, and what getting it cost."""

    #: What it is, for which CPU (``llama.cpp's runner (benchlab-llama-runner) for aarch64``).
    name: str
    path: Path
    #: True when this call built it, False when the cache had it.
    built_now: bool
    #: The seconds this call took for it (a cache hit: the lookup).
    seconds: float

    def describe(self) -> str:
        """One line: what, built now in how long or found, and where."""
        how = f"built in {self.seconds:.0f} s" if self.built_now else "found in the cache"
        return f"{self.name}: {how} ({self.path})"


def prepare_device_tools(architecture: str, cache_root: Path | None = None, *,
                         progress: Callable[[str], None] = lambda text: None,
                         tools: tuple[str, ...] = DEVICE_TOOLS,
                         ) -> list[PreparedTool]:
    """Build (or find) every program benchlab pushes to a device of ``architecture`` that has
    no Python, in ``cache_root`` (the default artifact cache when None); ``tools`` picks some
    of :data:`DEVICE_TOOLS`, in that order (one :data:`ONLY_FOR` other CPUs is left out).

    Raises :class:`~benchlab.errors.InfrastructureError` when no compiler for it is installed
    (naming the package) or a build fails (with the end of its log).
    """
    cache_root = default_cache_dir() if cache_root is None else cache_root
    unknown = sorted(set(tools) - set(DEVICE_TOOLS))
    if unknown:
        raise UsageError(f"benchlab builds {', '.join(DEVICE_TOOLS)} for devices, not "
                         f"{', '.join(unknown)}")
    done = []
    for name in (tool for tool in DEVICE_TOOLS if tool in tools
                 and architecture in ONLY_FOR.get(tool, (architecture,))):
        began = time.monotonic()
        # Each builder looks for the compiler before it fetches anything.
        build, program, what = _BUILDERS[name]
        built = build(architecture, device_tools_dir(cache_root), progress=progress)
        if name in OWN_RUNNERS and architecture in SYSROOTS:
            # A phone's copy: bundled with glibc (glibcbundle.py), made now, not in a run.
            glibc_bundle(built, program, device_tools_dir(cache_root))
        done.append(PreparedTool(name=f"{what} for {architecture}",
                                 path=built.program(program), built_now=built.built_now,
                                 seconds=round(time.monotonic() - began, 1)))
    return done
