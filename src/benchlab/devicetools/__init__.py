"""Tools benchlab builds for devices without Python: a device's architecture read from its
programs (:mod:`~benchlab.devicetools.elf`), the compilers that build for it
(:mod:`~benchlab.devicetools.toolchain`), the cache of what was built
(:mod:`~benchlab.devicetools.cache`), llama.cpp's programs with benchlab's own runner
(:mod:`~benchlab.devicetools.llamacpp`), benchlab's ExecuTorch runner over the libraries of
ExecuTorch's wheel (:mod:`~benchlab.devicetools.etrunner`), benchlab's ONNX Runtime runner
over the C library of ONNX Runtime's wheel (:mod:`~benchlab.devicetools.ortrunner`),
benchlab's LiteRT runner over the TFLite C API of LiteRT-LM's library, or of Debian's
TensorFlow Lite for an ARMv8.0 CPU (:mod:`~benchlab.devicetools.litertrunner`), C headers
and packages with what they depend on from Debian (:mod:`~benchlab.devicetools.debian`), a
program
over shared libraries bundled with glibc for a phone (:mod:`~benchlab.devicetools.glibcbundle`)
and all of them built ahead of a run (:mod:`~benchlab.devicetools.prepare`)."""

from __future__ import annotations

from benchlab.devicetools.cache import BuildCache, BuiltTools
from benchlab.devicetools.elf import (
    architecture_of_abi,
    elf_architecture,
    refuse_wrong_architecture,
)
from benchlab.devicetools.etrunner import ET_RUNNER, build_et_runner
from benchlab.devicetools.litertrunner import LITERT_RUNNER, build_litert_runner
from benchlab.devicetools.llamacpp import RUNNER, build_llama_tools
from benchlab.devicetools.ortrunner import ORT_RUNNER, build_ort_runner
from benchlab.devicetools.prepare import PreparedTool, device_tools_dir, prepare_device_tools
from benchlab.devicetools.toolchain import Toolchain, find_toolchain, host_architecture

__all__ = [
    "ET_RUNNER",
    "LITERT_RUNNER",
    "ORT_RUNNER",
    "RUNNER",
    "BuildCache",
    "BuiltTools",
    "PreparedTool",
    "Toolchain",
    "architecture_of_abi",
    "build_et_runner",
    "build_litert_runner",
    "build_llama_tools",
    "build_ort_runner",
    "device_tools_dir",
    "elf_architecture",
    "find_toolchain",
    "host_architecture",
    "prepare_device_tools",
    "refuse_wrong_architecture",
]
