"""Fixtures for the stand-in phone: the phone itself, an isolated adb server, both connected.

``standin_phone`` needs nothing but Python. ``adb_server`` needs the real ``adb`` client and
skips the test when it is not installed; it runs on its own port (``-P``), never on 5037.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchlab_standin import StandinPhone
from benchlab_standin.adbserver import AdbServer, isolated_adb_server


@pytest.fixture
def standin_phone(tmp_path: Path) -> Iterator[StandinPhone]:
    """A started stand-in phone whose sandbox is ``tmp_path / "device"``."""
    with StandinPhone(tmp_path / "device") as phone:
        yield phone


@pytest.fixture
def adb_server() -> Iterator[AdbServer]:
    """An adb server of this test's own on a free port, killed afterwards."""
    if shutil.which("adb") is None:
        pytest.skip("the adb client is not installed (Debian/Ubuntu: apt-get install adb)")
    with isolated_adb_server() as server:
        yield server


@dataclass
class ConnectedPhone:
    """A stand-in phone that an isolated adb server has connected to."""

    phone: StandinPhone
    adb: AdbServer

    @property
    def serial(self) -> str:
        """The serial to pass to ``adb -s``."""
        return self.phone.serial

    def shell(self, command: str, timeout: float = 60.0) -> str:
        """``adb -s SERIAL shell COMMAND``; its output (legacy shell: stdout and stderr)."""
        return self.adb.run("-s", self.serial, "shell", command, timeout=timeout,
                            check=True).stdout


@pytest.fixture
def connected_phone(standin_phone: StandinPhone, adb_server: AdbServer) -> ConnectedPhone:
    """``standin_phone`` after ``adb connect``, online in ``adb_server``."""
    adb_server.connect(standin_phone.serial)
    return ConnectedPhone(standin_phone, adb_server)
