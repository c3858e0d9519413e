"""The ``ssh`` target: a Linux board (Raspberry Pi, Jetson, any server) reached with OpenSSH.

benchlab calls the system's ``ssh`` client rather than a Python SSH library, so whatever the
user's ``~/.ssh/config`` says (aliases, keys, ``ProxyJump`` hops, agent forwarding) applies
unchanged. The first command opens a multiplexing master (``ControlMaster=auto`` with a
private ``ControlPath``) that later commands reuse, so each costs one round trip rather than a
new handshake (against a local sshd: ~0.5 s per new connection, ~0.2 s reusing one).

Files travel through ``cat`` over the same connection, which needs nothing on the board but a
POSIX shell. Python frameworks run benchlab's runner with the board's ``python`` (which must
have benchlab and the runtime installed); native frameworks run binaries.

Usage: ``--target ssh:host=pi`` (an alias from ``~/.ssh/config``) or
``--target ssh:host=10.0.0.7,user=pi,port=22,identity=~/.ssh/id_ed25519,python=python3``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlab.errors import InfrastructureError, UsageError
from benchlab.schema.result import EnvKey
from benchlab.schema.availability import Availability
from benchlab.targets.boardcpu import CPU_SCRIPT, board_cpu
from benchlab.targets.probe import state_facts
from benchlab.targets.remote import ShellTarget

__all__ = ["SshTarget"]

# Prints one "name value" line per fact, named as EnvKey names them.
_IDENTITY_SCRIPT = r"""
echo "hostname $(hostname 2>/dev/null || cat /etc/hostname)"
echo "kernel $(uname -r)"
echo "machine $(uname -m)"
[ -r /etc/os-release ] && . /etc/os-release && echo "os $PRETTY_NAME"
n=0; model=""
while IFS=: read -r k v; do
  case "$k" in
    processor*) n=$((n+1));;
    "model name"*|Model*|Hardware*) [ -z "$model" ] && model=$(echo $v);;
  esac
done < /proc/cpuinfo
echo "cpu_count $n"
echo "cpu_model $model"
""" + CPU_SCRIPT


class SshTarget(ShellTarget):
    """Run benchmarks on a remote Linux machine through the OpenSSH client."""

    name = "ssh"

    def __init__(
        self,
        host: str | None = None,
        *,
        user: str | None = None,
        port: int | None = None,
        identity: str | None = None,
        config: str | None = None,
        python: str = "python3",
        workroot: str = "/tmp",
        ssh: str = "ssh",
        connect_timeout: float = 10.0,
        control_persist: int = 60,
        multiplex: bool = True,
    ) -> None:
        self.host = str(host) if host is not None else None
        self.user = user
        self.port = int(port) if port is not None else None
        self.identity = os.path.expanduser(identity) if identity else None
        self.config = os.path.expanduser(config) if config else None
        self.python = python
        self.workroot = workroot.rstrip("/") or "/tmp"
        self.ssh = ssh
        self.connect_timeout = connect_timeout
        self.control_persist = control_persist
        self.multiplex = multiplex
        # Unix socket paths are limited to ~104 bytes, so the directory must be short.
        key = hashlib.sha256(f"{host}|{user}|{port}|{config}".encode()).hexdigest()[:10]
        self._control_dir = Path(tempfile.gettempdir()) / f"benchlab-ssh-{os.getuid()}"
        self._control_path = self._control_dir / key

    # -- the client ----------------------------------------------------------------------
    def _base_argv(self) -> list[str]:
        if not self.host:
            raise UsageError("the ssh target needs a host: --target ssh:host=NAME")
        self._control_dir.mkdir(mode=0o700, exist_ok=True)
        argv = [self.ssh]
        if self.config:
            argv += ["-F", self.config]
        argv += [
            "-o", "BatchMode=yes",  # never hang on a password prompt
            "-o", f"ConnectTimeout={max(1, int(self.connect_timeout))}",
            "-o", "ServerAliveInterval=15",
        ]
        if self.multiplex:
            argv += ["-o", "ControlMaster=auto", "-o", f"ControlPath={self._control_path}",
                     "-o", f"ControlPersist={self.control_persist}"]
        else:
            argv += ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.identity:
            argv += ["-i", self.identity]
        if self.user:
            argv += ["-l", self.user]
        return [*argv, self.host]

    def _client_argv(self, command: str) -> list[str]:
        return [*self._base_argv(), "--", command]

    def close(self) -> None:
        """Close the multiplexing master connection, if one is open."""
        if not self.host or not self.multiplex:
            return
        subprocess.run(
            [*self._base_argv()[:-1], "-O", "exit", self.host],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
        )
        # The master removes its socket as it exits, just after answering "-O exit".
        deadline = time.monotonic() + 5.0
        while self._control_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    # -- protocol -------------------------------------------------------------------------
    def availability(self) -> Availability:
        """Reachable with key authentication, with a POSIX shell; the version of its Python."""
        if not self.host:
            return Availability(
                ok=False, reason="no host given: use --target ssh:host=NAME (an ssh alias or "
                "address; user=, port=, identity=, config=, python= are optional)",
            )
        try:
            result = self.shell(f"{shlex.quote(self.python)} -c 'import platform; "
                                "print(platform.python_version())' 2>/dev/null; echo ok",
                                timeout=self.connect_timeout + 20)
        except UsageError as exc:
            return Availability(ok=False, reason=str(exc))
        if result.returncode != 0 or not result.stdout.rstrip().endswith("ok"):
            why = (result.stderr or result.stdout).strip().splitlines()
            return Availability(
                ok=False, reason=f"cannot reach {self.host} over ssh: {why[-1] if why else '?'}"
            )
        lines = result.stdout.split()
        version = lines[0] if len(lines) > 1 else None
        details = {"python": version or f"{self.python} not found (native runners only)"}
        return Availability(ok=True, version=version, details=details)

    def python_executable(self) -> str:
        """The board's Python, as configured (``python=``)."""
        return self.python

    def describe(self) -> dict[str, Any]:
        """Identity (hostname, OS, CPU), CPU clusters, frequencies, temperatures, load."""
        result = self.shell(_IDENTITY_SCRIPT, timeout=60.0)
        info: dict[str, Any] = {EnvKey.TARGET: "ssh", "address": self.host}
        for line in result.stdout.splitlines():
            key, _, value = line.partition(" ")
            if key and value.strip():
                info[key] = value.strip()
        if EnvKey.CPU_COUNT in info:
            count = info[EnvKey.CPU_COUNT]
            info[EnvKey.CPU_COUNT] = int(count) if count.isdigit() else None
        cpu = board_cpu({k: str(v) for k, v in info.items()})
        for raw in ("shell_exe", "cpu_flags", "cpuinfo_x86", "auxv", "midr"):
            info.pop(raw, None)
        info.update(cpu)
        if cpu.get(EnvKey.EMULATED):
            # In the device's name, so that every table, page and trend keeps it apart.
            info[EnvKey.HOSTNAME] = f"{info.get(EnvKey.HOSTNAME) or self.host} (emulated)"
        info.update(state_facts(self.device_state()))
        return info

    def push(self, local: Path, workdir: str, name: str | None = None) -> str:
        """Copy a local file into ``workdir`` on the board over the multiplexed connection."""
        dest = f"{workdir.rstrip('/')}/{name or Path(local).name}"
        with open(local, "rb") as handle:
            result = self._client(f"cat > {shlex.quote(dest)}", 3600.0, stdin=handle)
        if result.returncode != 0:
            raise InfrastructureError(
                f"ssh: copying {local} to {self.host}:{dest} failed: {result.stderr.strip()[:300]}"
            )
        return dest

    def pull(self, remote: str, local: Path) -> Path:
        """Copy a file from the board to ``local``."""
        local.parent.mkdir(parents=True, exist_ok=True)
        with open(local, "wb") as handle:
            proc = subprocess.run(
                self._client_argv(f"cat {shlex.quote(remote)}"), stdin=subprocess.DEVNULL,
                stdout=handle, stderr=subprocess.PIPE, timeout=3600, check=False,
            )
        if proc.returncode != 0:
            raise InfrastructureError(
                f"ssh: copying {self.host}:{remote} failed: "
                f"{proc.stderr.decode('utf-8', 'replace').strip()[:300]}"
            )
        return local
