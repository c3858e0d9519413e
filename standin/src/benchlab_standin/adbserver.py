"""An adb server of one's own, on a free port, for tests that drive the real ``adb`` client.

Every call passes ``-P PORT``, so the default server on 5037 (a developer's phones) is never
started, asked or killed. The server is killed when the context manager exits::

    with isolated_adb_server() as adb, StandinPhone(tmp) as phone:
        adb.connect(phone.serial)
        print(adb.run("-s", phone.serial, "shell", "getprop ro.product.model").stdout)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["AdbError", "AdbServer", "free_port", "isolated_adb_server"]


class AdbError(RuntimeError):
    """An adb command failed, or a device did not reach the wanted state in time."""


def free_port() -> int:
    """A TCP port that was free a moment ago (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    # -P decides the server; a stray serial or port in the environment must not redirect us.
    for name in ("ANDROID_SERIAL", "ANDROID_ADB_SERVER_PORT", "ADB_SERVER_SOCKET"):
        env.pop(name, None)
    return env


@dataclass
class AdbServer:
    """A running adb server on ``port``, and the client binary to talk to it."""

    port: int
    adb_path: str = "adb"

    def command(self, *args: str) -> list[str]:
        """The argv for ``adb -P PORT ARGS...``."""
        return [self.adb_path, "-P", str(self.port), *args]

    def run(self, *args: str, timeout: float = 60.0, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``adb -P PORT ARGS...``; text output; raise :class:`AdbError` if ``check``."""
        try:
            done = subprocess.run(  # noqa: S603 - the adb binary the caller chose
                self.command(*args), capture_output=True, text=True, timeout=timeout,
                env=_environment(), input=input,
                stdin=None if input is not None else subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise AdbError(f"adb {' '.join(args)} timed out after {timeout}s") from exc
        if check and done.returncode != 0:
            raise AdbError(f"adb {' '.join(args)} failed ({done.returncode}): "
                           f"{done.stdout}{done.stderr}")
        return done

    def popen(self, *args: str, stdout: int | None = None,
              stderr: int | None = None) -> subprocess.Popen[bytes]:
        """Start ``adb -P PORT ARGS...`` without waiting (stdin from /dev/null)."""
        return subprocess.Popen(  # noqa: S603 - the adb binary the caller chose
            self.command(*args), env=_environment(), stdin=subprocess.DEVNULL, stdout=stdout,
            stderr=stderr)

    def devices(self) -> dict[str, str]:
        """Serial -> state (``device``, ``offline``, ``unauthorized``...) from ``adb devices``."""
        out = self.run("devices", check=True).stdout
        states = {}
        for line in out.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 2:
                states[parts[0]] = parts[1]
        return states

    def wait_for_state(self, serial: str, state: str = "device", timeout: float = 60.0) -> None:
        """Poll ``adb devices`` until ``serial`` is in ``state``."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            seen = self.devices().get(serial)
            if seen == state:
                return
            time.sleep(0.2)
        raise AdbError(f"{serial} did not become {state!r} within {timeout}s (last: {seen!r})")

    def connect(self, serial: str, timeout: float = 60.0) -> None:
        """``adb connect SERIAL`` and wait until the device is online."""
        done = self.run("connect", serial, timeout=timeout)
        if "connected to" not in done.stdout:
            raise AdbError(f"adb connect {serial}: {done.stdout}{done.stderr}".strip())
        self.wait_for_state(serial, "device", timeout)

    def disconnect(self, serial: str) -> None:
        """``adb disconnect SERIAL``."""
        self.run("disconnect", serial)

    def kill(self) -> None:
        """``adb -P PORT kill-server`` and wait until the port is free."""
        self.run("kill-server", timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.1)


@contextmanager
def isolated_adb_server(adb_path: str = "adb") -> Iterator[AdbServer]:
    """Start an adb server on a free port; kill it on exit. Raises AdbError if adb is absent."""
    resolved = shutil.which(adb_path)
    if resolved is None:
        raise AdbError(f"adb client {adb_path!r} not found")
    last = ""
    for _attempt in range(3):  # The free port may be taken before the server binds it.
        server = AdbServer(free_port(), resolved)
        done = server.run("start-server", timeout=60)
        if done.returncode == 0:
            break
        last = done.stdout + done.stderr
    else:
        raise AdbError(f"adb start-server failed: {last}")
    try:
        yield server
    finally:
        server.kill()
