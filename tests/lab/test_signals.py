"""Lab processes stop cleanly on the signals a service manager or a terminal sends."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest
from bounded import alive
from benchlab_standin.adbserver import free_port

from benchlab.lab.client import submit_to_lab
from benchlab.lab.localpg import find_pg_bin
from benchlab.lab.queue import store_url
from benchlab.store import open_store

from .agents import agents, nap_spec, read_marks, wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found




@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_lab_up_alone_leaves_no_process_behind(sig: signal.Signals,
                                                           tmp_path: Path) -> None:
    if find_pg_bin() is None:
        pytest.skip("PostgreSQL server binaries are not installed")
    data = Path(tempfile.mkdtemp(prefix="benchlab-up-"))
    port = free_port()
    out = tmp_path / "up.out"
    with open(out, "w") as sink:
        # Its own session, as under a service manager: the signal reaches `lab up` only,
        # never its children directly.
        proc = subprocess.Popen([sys.executable, "-m", "benchlab", "lab", "up", "--data-dir",
                                 str(data), "--port", str(port)], stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: proc.poll() is None and _devices(port), 120,
                   "the lab to serve its host device")
        postmaster = int((data / "data" / "postmaster.pid").read_text().split()[0])
        family = _descendants(proc.pid) | {postmaster}
        assert len(family) >= 3, family  # the server, the worker, PostgreSQL
        os.kill(proc.pid, sig)
        proc.wait(timeout=150)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = out.read_text()
    assert proc.returncode == 0, text
    assert f"stopped by {sig.name}" in text
    left = {pid for pid in family if alive(pid)}
    assert not left, f"still running after {sig.name}: {left}\n{text}"
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    shutil.rmtree(data, ignore_errors=True)


def _devices(port: int) -> list:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/devices", timeout=5).json()["devices"]
    except (httpx.HTTPError, KeyError, ValueError):
        return []


def test_lab_serve_stops_on_sighup(lab_url: str, tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "benchlab", "lab", "serve", "--db", lab_url,
                             "--port", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: proc.poll() is None and bool(_health(port)), 60, "the server")
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def _health(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_stopped_worker_hands_its_job_back_after_the_grace_period(lab_url: str,
                                                                    tmp_path: Path) -> None:
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 8.0, marks, name="handed")
    with agents(lab_url, tmp_path) as lab_agents:
        first = lab_agents.start("hostA", "--grace", "1")
        lab_agents.wait_registered("host:hostA")
        [job] = submit_to_lab(lab_url, [spec], device="host:hostA")
        wait_until(lambda: lab_agents.job(job.id).run_uuid is not None, 60, "the job's run")
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
        handed = lab_agents.job(job.id)
        assert handed.status == "waiting", lab_agents.log_text()
        assert re.search("handed back", handed.reason), handed.reason
        assert not read_marks(marks)  # the interrupted nap did not complete
        lab_agents.start("hostA")  # back: the job runs again and finishes, once
        wait_until(lambda: lab_agents.job(job.id).status == "finished", 120,
                   "the handed-back job to finish")
        done = lab_agents.job(job.id)
        assert done.attempts == 2 and done.run_uuid == handed.run_uuid
        with open_store(store_url(lab_url)) as store:
            assert len(store.results(done.run_uuid)) == 1
        assert len(read_marks(marks)) == 1


def test_a_stopped_worker_lets_a_short_job_finish(lab_url: str, tmp_path: Path) -> None:
    marks = tmp_path / "marks.jsonl"
    spec = nap_spec(tmp_path, 3.0, marks, name="short")
    with agents(lab_url, tmp_path) as lab_agents:
        first = lab_agents.start("hostA", "--grace", "60")
        lab_agents.wait_registered("host:hostA")
        [job] = submit_to_lab(lab_url, [spec], device="host:hostA")
        wait_until(lambda: lab_agents.job(job.id).status == "running", 60, "the job to start")
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=90)
        done = lab_agents.job(job.id)
        assert done.status == "finished" and done.attempts == 1, lab_agents.log_text()
        assert len(read_marks(marks)) == 1
