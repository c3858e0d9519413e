"""What the ARM stand-ins need built once per machine, built before they are used.

Builds cached by key so a second run finds them: the ARM board's arm64 Debian root
(:func:`~benchlab_standin.armboard.build_root`, under ``/var/cache/benchlab/boards``), the
programs benchlab pushes to the ARM phone, which has no Python (llama.cpp's runner and
ExecuTorch's for aarch64: :func:`benchlab.devicetools.prepare_device_tools`, in an artifact
cache; ExecuTorch's alone for the ARM board, which runs it over ssh), and ExecuTorch's and
ONNX Runtime's runners for this host, which the tests of ``runner=native`` run.

``python -m benchlab_standin --prepare`` runs them and says what each built and how long it
took; the test suite runs the same :data:`ARM_BUILDS` before the tests that need them start
(tests/prebuild.py), so no build runs inside a test's time limit or beside the other tests.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from benchlab.devicetools import (
    RUNNER,
    PreparedTool,
    find_toolchain,
    host_architecture,
    prepare_device_tools,
)
from benchlab.errors import InfrastructureError

from benchlab_standin.armboard import build_root, cannot_build_root

__all__ = ["ARM_BUILDS", "CANNOT_BUILD_HERE", "StandinBuild", "prepare_arm_standins"]

Progress = Callable[[str], None]


#: ``python -m benchlab_standin --prepare``'s exit status when a build cannot run on this
#: machine (it says why); 1 is a build that failed.
CANNOT_BUILD_HERE = 3


@dataclass(frozen=True, slots=True)
class StandinBuild:
    """A build the stand-ins need: its name, why it cannot run here (None: it can), and the
    build itself (into ``cache_root``, an artifact cache; None: benchlab's default one)."""

    key: str
    name: str
    unavailable: Callable[[], str | None]
    make: Callable[[Path | None, Progress], PreparedTool]


def _board_root(cache_root: Path | None, progress: Progress) -> PreparedTool:
    began = time.monotonic()
    root = build_root(progress=progress)  # a machine-wide cache: sshd's chroot needs its owner
    return PreparedTool("the ARM board's arm64 root", root.folder, root.built_now,
                        round(time.monotonic() - began, 1))


def _no_cross_compiler() -> str | None:
    try:
        find_toolchain("aarch64")
    except InfrastructureError as exc:
        return str(exc)
    if shutil.which("cmake") is None:
        return "building llama.cpp needs CMake: apt-get install cmake"
    return None


def _phone_tools(cache_root: Path | None, progress: Progress) -> PreparedTool:
    # Every device tool, as `benchlab prepare --arch aarch64` builds them; named by the first.
    tool, *_ = prepare_device_tools("aarch64", cache_root, progress=progress)
    return replace(tool, name=f"llama.cpp's runner ({RUNNER}) for the ARM phone (aarch64)")


def _no_arm_compiler() -> str | None:
    try:
        find_toolchain("aarch64")
    except InfrastructureError as exc:
        return str(exc)
    return None


def _arm_et_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools("aarch64", cache_root, progress=progress,
                                   tools=("executorch",))
    return replace(tool, name="ExecuTorch's runner (benchlab-et-runner) for the ARM board "
                              "(aarch64)")


def _arm_ort_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools("aarch64", cache_root, progress=progress,
                                   tools=("onnxruntime",))
    return replace(tool, name="ONNX Runtime's runner (benchlab-ort-runner) for the ARM board "
                              "(aarch64)")


def _arm_litert_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools("aarch64", cache_root, progress=progress,
                                   tools=("litert",))
    return replace(tool, name="LiteRT's runner (benchlab-litert-runner) for the ARM phone "
                              "(aarch64)")


def _arm_litert_debian_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools("aarch64", cache_root, progress=progress,
                                   tools=("litert-debian",))
    return replace(tool, name="LiteRT's runner over Debian's TensorFlow Lite "
                              "(benchlab-litert-runner) for the ARMv8.0 phone (aarch64)")


def _no_host_compiler() -> str | None:
    try:
        find_toolchain(host_architecture())
    except InfrastructureError as exc:
        return str(exc)
    return None


def _host_et_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools(host_architecture(), cache_root, progress=progress,
                                   tools=("executorch",))
    return tool


def _host_ort_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools(host_architecture(), cache_root, progress=progress,
                                   tools=("onnxruntime",))
    return tool


def _host_litert_runner(cache_root: Path | None, progress: Progress) -> PreparedTool:
    (tool,) = prepare_device_tools(host_architecture(), cache_root, progress=progress,
                                   tools=("litert",))
    return tool


#: Every build the ARM stand-ins need, by key.
ARM_BUILDS = {build.key: build for build in (
    StandinBuild("board-root", "the ARM board's arm64 root", cannot_build_root, _board_root),
    StandinBuild("phone-tools", "llama.cpp's runner for the ARM phone (aarch64)",
                 _no_cross_compiler, _phone_tools),
    StandinBuild("arm-et-runner", "ExecuTorch's runner (benchlab-et-runner) for the ARM board "
                 "(aarch64)", _no_arm_compiler, _arm_et_runner),
    StandinBuild("arm-ort-runner", "ONNX Runtime's runner (benchlab-ort-runner) for the ARM "
                 "board (aarch64)", _no_arm_compiler, _arm_ort_runner),
    StandinBuild("arm-litert-runner", "LiteRT's runner (benchlab-litert-runner) for the ARM "
                 "phone (aarch64)", _no_arm_compiler, _arm_litert_runner),
    StandinBuild("arm-litert-debian-runner", "LiteRT's runner over Debian's TensorFlow Lite "
                 "(benchlab-litert-runner) for the ARMv8.0 phone (aarch64)", _no_arm_compiler,
                 _arm_litert_debian_runner),
    StandinBuild("host-et-runner", "ExecuTorch's runner (benchlab-et-runner) for this host",
                 _no_host_compiler, _host_et_runner),
    StandinBuild("host-ort-runner", "ONNX Runtime's runner (benchlab-ort-runner) for this host",
                 _no_host_compiler, _host_ort_runner),
    StandinBuild("host-litert-runner", "LiteRT's runner (benchlab-litert-runner) for this host",
                 _no_host_compiler, _host_litert_runner),
)}


def prepare_arm_standins(cache_root: Path | None = None, *, keys: tuple[str, ...] | None = None,
                         progress: Progress = lambda text: None,
                         builds: Mapping[str, StandinBuild] = ARM_BUILDS,
                         ) -> tuple[list[PreparedTool], dict[str, str]]:
    """Run the ``builds`` named by ``keys`` (every one when None), one after another: what
    each built, and the builds that cannot run here with why. A build that fails raises its
    own error (``RuntimeError`` or :class:`~benchlab.errors.InfrastructureError`, with the
    end of its log)."""
    done: list[PreparedTool] = []
    skipped: dict[str, str] = {}
    for key in keys if keys is not None else tuple(builds):
        build = builds[key]
        why = build.unavailable()
        if why:
            skipped[build.name] = why
            continue
        progress(f"{build.name}: preparing")
        done.append(build.make(cache_root, progress))
        progress(done[-1].describe())
    return done, skipped
