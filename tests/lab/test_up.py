"""``benchlab lab up``: a whole lab from one command, with a real PostgreSQL of its own."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from benchlab.lab.localpg import find_pg_bin

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_lab_up_serves_a_lab_with_this_host_as_a_device(tmp_path: Path) -> None:
    if find_pg_bin() is None:
        pytest.skip("PostgreSQL server binaries are not installed")
    # A short folder the postgres user may enter (pytest's own are private to root).
    data = Path(tempfile.mkdtemp(prefix="benchlab-up-"))
    port = _free_port()
    out = tmp_path / "up.out"
    with open(out, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchlab", "lab", "up", "--data-dir", str(data),
             "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        devices: list = []
        while time.monotonic() < deadline and not devices:
            time.sleep(1)
            assert proc.poll() is None, out.read_text()
            try:
                devices = httpx.get(f"http://127.0.0.1:{port}/api/v1/devices",
                                    timeout=5).json()["devices"]
            except (httpx.HTTPError, KeyError, ValueError):
                continue
        assert devices, out.read_text()
        [device] = devices
        assert device["kind"] == "host" and device["state"] in ("idle", "busy")
        text = out.read_text()
        assert f"lab: http://127.0.0.1:{port}/" in text
        database = re.search(r"database: (\S+)", text).group(1)
        page = httpx.get(f"http://127.0.0.1:{port}/devices", timeout=10)
        assert page.status_code == 200 and device["id"] in page.text
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    assert proc.returncode == 0, out.read_text()
    # Everything stopped: the server's port is free and PostgreSQL's pid file is gone.
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    assert not (data / "data" / "postmaster.pid").exists()
    assert database.startswith("postgresql://")
    shutil.rmtree(data, ignore_errors=True)
