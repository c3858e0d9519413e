"""One command run on a target, and what it did: the shapes a target's ``run`` speaks in,
shared by every layer that builds commands (frameworks, energy meters, the harness)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CommandResult", "RunRequest"]


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
