"""The target protocol: where commands run.

A target pushes files to a device, runs one command there with a timeout that kills everything
the command started, pulls files back and describes the device. ``host`` is this machine;
``ssh`` and ``adb`` follow the same protocol, so a Python runtime measured on the host goes
through the same door as a binary on a phone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["Availability", "CommandResult", "RunRequest", "Target"]


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether a plugin can be used here, its version, and why not when it cannot."""

    ok: bool
    version: str | None = None
    reason: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One command to run on a target.

    ``argv`` is a list (run directly) or a string (run by the target's shell). ``env`` is added
    on top of the target's environment for this command only. ``cpu_list`` pins the command's
    processes (``"0-1,3"``); ``memory_limit`` caps their address space in MiB.
    """

    argv: Sequence[str] | str
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = 600.0
    cpu_list: str | None = None
    memory_limit: int | None = None


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one command did: exit status, output, and whether the timeout killed it.

    ``returncode`` is negative when a signal ended the process (``-9`` for SIGKILL). ``log``
    holds the device log written while the command ran (Android's logcat), where captured.
    ``files`` are local copies of what the command's invocation asked to bring back (pulled
    from the device by name) and of the job's model files (``files.KEY``), for a parser that
    reads outputs a tool wrote to files; they last until the output is parsed.
    """

    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    log: str = ""
    files: Mapping[str, Path] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0 before its timeout."""
        return not self.timed_out and self.returncode == 0


@runtime_checkable
class Target(Protocol):
    """Where benchmark commands run. Implementations are registered as ``benchlab.targets``."""

    name: str

    def availability(self) -> Availability:
        """Whether this target can be used now, and why not."""
        ...

    def describe(self) -> Mapping[str, Any]:
        """Identity and state of the device: CPU, cores, OS, governor, temperatures, load."""
        ...

    def device_state(self) -> Mapping[str, Any]:
        """Frequencies, governors, clusters, temperatures, battery and load, now.

        Every built-in target returns :func:`benchlab.targets.probe.parse_probe`'s shape.
        """
        ...

    def python_executable(self) -> str:
        """The Python interpreter that runs benchlab's runner on this target."""
        ...

    def make_workdir(self, name: str) -> str:
        """Create a fresh working directory on the target (``{TGTDIR}``) and return its path."""
        ...

    def push(self, local: Path, workdir: str, name: str | None = None) -> str:
        """Make a local file available on the target and return its path there."""
        ...

    def pull(self, remote: str, local: Path) -> Path:
        """Copy a file from the target to ``local``."""
        ...

    def run(self, request: RunRequest) -> CommandResult:
        """Run one command; on timeout kill it and everything it started."""
        ...

    def remove_workdir(self, workdir: str) -> None:
        """Delete a working directory made by :meth:`make_workdir`."""
        ...
