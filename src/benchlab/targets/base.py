"""The target protocol: where commands run.

A target pushes files to a device, runs one command there with a timeout that kills everything
the command started, pulls files back and describes the device. ``host`` is this machine;
``ssh`` and ``adb`` follow the same protocol, so a Python runtime measured on the host goes
through the same door as a binary on a phone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

# Their home is the schema (energy meters, frameworks and the harness use them too); named
# here as well because the Target protocol speaks in them.
from benchlab.schema.availability import Availability
from benchlab.schema.commands import CommandResult, RunRequest

__all__ = ["Availability", "CommandResult", "RunRequest", "Target"]


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
