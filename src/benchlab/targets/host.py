"""The ``host`` target: commands run as child processes of benchlab on this machine.

Each command starts in a new session (its own process group), so a timeout kills the whole
tree it spawned, not just the direct child. CPU pinning and memory caps are applied in the
child between ``fork`` and ``exec``; benchlab's own process keeps its affinity and environment.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchlab.errors import InfrastructureError
from benchlab.targets.environment import capture_host_environment, parse_cpu_list
from benchlab.schema.availability import Availability
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.probe import PROBE_SCRIPT, parse_probe, state_facts

__all__ = ["HostTarget"]

# A process that ignores SIGTERM gets this long before SIGKILL.
_TERM_GRACE_S = 2.0


def child_setup(cpu_list: str | None, memory_limit: int | None) -> Callable[[], None] | None:
    """What a child process does after fork and before exec: pin it to ``cpu_list`` and cap
    its address space at ``memory_limit`` MiB; ``None`` when there is nothing to do.

    Two plain system calls and no locks, so it is safe after fork even when benchlab runs
    other threads.
    """
    cpus = parse_cpu_list(cpu_list) if cpu_list else None
    if not cpus and not memory_limit:
        return None

    def in_child() -> None:  # runs after fork, before exec, in the child only
        if cpus:
            os.sched_setaffinity(0, cpus)
        if memory_limit:
            size = int(memory_limit) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return in_child


class HostTarget:
    """Run benchmarks on this machine, each command in its own process group."""

    name = "host"

    def __init__(self, workroot: Path | None = None) -> None:
        self._workroot = workroot

    def availability(self) -> Availability:
        """The host is always available."""
        return Availability(ok=True, version=sys.version.split()[0])

    def describe(self) -> Mapping[str, Any]:
        """This machine's static facts and its device state (``state``), read once."""
        return {**capture_host_environment(), **state_facts(self.device_state())}

    def device_state(self) -> dict[str, Any]:
        """Frequencies, temperatures, battery and load, read as on every other target."""
        result = self.run(RunRequest(argv=["sh", "-c", PROBE_SCRIPT], timeout=60.0))
        return parse_probe(result.stdout)

    def power_meters(self) -> list[Any]:
        """Meters that can read this machine: Intel/AMD RAPL, then an NVIDIA GPU's NVML."""
        from benchlab.energy.nvml import NvmlMeter
        from benchlab.energy.rapl import RaplMeter

        return [RaplMeter(), NvmlMeter()]

    def python_executable(self) -> str:
        """The interpreter benchlab runs under, so the runner sees the same packages."""
        return sys.executable

    def make_workdir(self, name: str) -> str:
        """A fresh temporary directory (under ``workroot`` when given)."""
        if self._workroot is not None:
            self._workroot.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]
        return tempfile.mkdtemp(prefix=f"benchlab-{safe}-", dir=self._workroot)

    def push(self, local: Path, workdir: str, name: str | None = None) -> str:
        """Files are already here: link them into the workdir under the expected name."""
        if name is None:
            return str(local)
        dest = Path(workdir) / name
        if dest.exists() or dest.is_symlink():
            dest.unlink()
        dest.symlink_to(Path(local).resolve())
        return str(dest)

    def pull(self, remote: str, local: Path) -> Path:
        """Copy a file produced by a command to ``local``; :class:`InfrastructureError` when
        it cannot (a file the command did not write), as the other targets say it."""
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(remote, local)
        except OSError as exc:
            raise InfrastructureError(f"cannot copy {remote}: {exc.strerror or exc}") from None
        return local

    def remove_workdir(self, workdir: str) -> None:
        """Delete a working directory and everything in it."""
        shutil.rmtree(workdir, ignore_errors=True)

    def run(self, request: RunRequest) -> CommandResult:
        """Run one command with a timeout that kills its whole process group."""
        env = dict(os.environ)
        env.update(request.env)
        shell = isinstance(request.argv, str)
        started = time.perf_counter()
        try:
            proc = subprocess.Popen(
                request.argv,
                shell=shell,
                cwd=request.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=child_setup(request.cpu_list, request.memory_limit),  # noqa: PLW1509
            )
        except (OSError, subprocess.SubprocessError) as exc:
            # A command that cannot start is a failed command (as a shell reports it), not a
            # crash of benchlab: the job is recorded as failed and the sweep goes on.
            return CommandResult(
                returncode=127 if isinstance(exc, FileNotFoundError) else 126,
                stdout="",
                stderr=f"benchlab: could not start the command: {_spawn_error(exc, request)}\n",
                duration=time.perf_counter() - started,
            )
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=request.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            stdout, stderr = _kill_group(proc)
        return CommandResult(
            returncode=proc.returncode,
            stdout=stdout.decode("utf-8", "replace"),
            stderr=stderr.decode("utf-8", "replace"),
            duration=time.perf_counter() - started,
            timed_out=timed_out,
        )


def _spawn_error(exc: BaseException, request: RunRequest) -> str:
    """Why a command could not start, naming the setting that made the child's setup fail."""
    if isinstance(exc, OSError):
        return str(exc)
    # preexec_fn failures arrive without their cause: name the limits that were being applied.
    applied = []
    if request.cpu_list:
        allowed = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        applied.append(f"cpu_list {request.cpu_list!r} (this machine allows CPUs {allowed})")
    if request.memory_limit:
        applied.append(f"memory_limit {request.memory_limit} MiB")
    return f"the child's setup failed applying {' and '.join(applied)}" if applied else str(exc)


def _kill_group(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """SIGTERM the process group, then SIGKILL it, and collect what it printed."""
    for sig, grace in ((signal.SIGTERM, _TERM_GRACE_S), (signal.SIGKILL, _TERM_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
    # Something outside the group (a daemonised grandchild) still holds the pipes open.
    proc.kill()
    proc.wait()
    return b"", b""
