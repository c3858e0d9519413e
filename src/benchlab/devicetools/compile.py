"""Compiling one of benchlab's runners against a runtime's shipped libraries, as the
ExecuTorch and ONNX Runtime runners are built: one compiler call, its log kept in the entry,
and the facts a finished entry records about how it was made."""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

from benchlab.devicetools.toolchain import Toolchain
from benchlab.errors import InfrastructureError

__all__ = ["LOG", "build_facts", "compile_program", "runner_source"]

#: The build's log in its entry's folder.
LOG = "build.log"


def runner_source(name: str) -> Path:
    """The source of one of benchlab's runners, shipped in this package (``et_runner.cpp``)."""
    return Path(str(resources.files("benchlab.devicetools") / name))


def compile_program(argv: list[str], folder: Path, label: str) -> None:
    """Run the compiler ``argv``, its command and output into ``folder/build.log``; a
    failure is an :class:`InfrastructureError` with the compiler's last lines."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    (folder / LOG).write_text(" ".join(argv) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise InfrastructureError(f"compiling {label} failed (log: {folder / LOG}):\n{tail}")


def build_facts(identity: dict[str, object], toolchain: Toolchain, seconds: float,
                **more: object) -> dict[str, object]:
    """What an entry records of its build: its identity, how long it took, with what."""
    return {**identity, "build_seconds": round(seconds, 1), **more,
            "toolchain": toolchain.source, "log": LOG}
