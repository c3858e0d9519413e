"""Real lab worker processes for the tests, and a benchmark program that sleeps and marks.

``nap.py`` sleeps, prints three metric lines and appends its start and end times to a marks
file: the tests read overlaps and executions from it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchlab.lab.devices import list_devices
from benchlab.lab.jobs import LabJob, get_job
from benchlab.lab.queue import open_lab

__all__ = ["Agents", "nap_spec", "read_marks", "wait_until"]

NAP = '''
import argparse, json, os, time
p = argparse.ArgumentParser()
p.add_argument("--sleep", type=float, default=1.0)
p.add_argument("--marks", default="")
a = p.parse_args()
start = time.time()
time.sleep(a.sleep)
for i in range(3):
    line = {"type": "NET", "metric": "latency", "unit": "us", "value": 100.0 + i}
    print("PyTorchObserver " + json.dumps(line))
if a.marks:
    with open(a.marks, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "start": start, "end": time.time()}) + "\\n")
'''


def nap_spec(folder: Path, sleep: float, marks: Path, name: str = "nap",
             timeout: float = 120.0) -> Path:
    """A spec whose one job runs nap.py once (one process, three samples)."""
    program = folder / "nap.py"
    program.write_text(NAP)
    spec = folder / f"{name}.yaml"
    spec.write_text(
        f"model:\n  name: {name}\n  format: script\n"
        "tests:\n  - identifier: default\n    warmup: 0\n    iter: 3\n    repeat: 1\n"
        f"    timeout: {timeout}\n    commands:\n"
        f"      - \"{sys.executable} {program} --sleep {sleep} --marks {marks}\"\n"
    )
    return spec


def read_marks(marks: Path) -> list[dict]:
    """Every completed nap, in the order written."""
    if not marks.exists():
        return []
    return [json.loads(line) for line in marks.read_text().splitlines() if line.strip()]


def wait_until(check: Callable[[], bool], timeout: float, what: str, poll: float = 0.5) -> None:
    """Poll ``check`` until true; fail the test naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


class Agents:
    """Starts ``benchlab lab worker`` processes on one lab and stops them all at the end."""

    def __init__(self, url: str, logs: Path, *, die_with_parent: bool = False) -> None:
        """``die_with_parent``: each agent is SIGKILLed by the kernel when the thread that
        started it dies (util-linux's ``setpriv --pdeathsig``), so a program killed with no
        chance to clean up leaves no agent behind. For a program's main thread only: the
        signal follows the starting thread, not the process."""
        self.url = url
        self.logs = logs
        self.procs: list[subprocess.Popen] = []
        setpriv = shutil.which("setpriv") if die_with_parent else None
        self._wrap = (setpriv, "--pdeathsig", "KILL", "--") if setpriv else ()

    def start(self, name: str, *extra: str, host_device: bool = True,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start an agent for host ``name`` with quick heartbeats and stall detection
        (``env``: its environment, e.g. a cache folder of the test's)."""
        log = open(self.logs / f"{name}-{len(self.procs)}.log", "w")  # noqa: SIM115
        argv = [*self._wrap, sys.executable, "-m", "benchlab", "lab", "worker", "--db",
                self.url, "--name", name, "--no-adb", "--heartbeat", "1", "--stalled-after", "4",
                "--health-every", "3600", *extra]
        if not host_device:
            argv.append("--no-host-device")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env)
        self.procs.append(proc)
        return proc

    def wait_registered(self, device_id: str, timeout: float = 60.0, *,
                        alive: bool = True) -> None:
        """Until the device is registered and its worker alive (or, ``alive=False``, until it
        is registered offline: a device that did not answer its probe)."""
        def ready() -> bool:
            with open_lab(self.url) as lab:
                return any(d.id == device_id and d.alive == alive
                           for d in list_devices(lab.store))
        wait_until(ready, timeout, f"device {device_id} to register")

    def job(self, job_id: int) -> LabJob:
        """The job's current row."""
        with open_lab(self.url) as lab:
            return get_job(lab.store, job_id)

    def log_text(self) -> str:
        """Every agent's log, for assertion messages."""
        return "\n".join(p.read_text() for p in sorted(self.logs.glob("*.log")))

    def stop(self) -> None:
        """SIGINT each agent (graceful), SIGKILL whatever is left."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextmanager
def agents(url: str, logs: Path) -> Iterator[Agents]:
    """An :class:`Agents` that stops its processes on exit."""
    running = Agents(url, logs)
    try:
        yield running
    finally:
        running.stop()


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(url: str, port: int, wrap: Callable[[Any], Any] = lambda app: app) -> Iterator[str]:
    """The lab app on 127.0.0.1:``port`` under uvicorn in a thread until the block ends;
    yields its base URL (``wrap``: a middleware around the app).

    ``log_config=None``: uvicorn's default logging setup is ``logging.config.dictConfig``, which
    closes every handler in the process. absl's handler closes its stream when closed, and that
    stream is pytest's captured stderr if absl was imported in an earlier test: the whole
    session then died with "lost sys.stderr" in a shuffled order (issue 24).
    """
    import uvicorn

    from benchlab.lab.server.app import create_app

    server = uvicorn.Server(uvicorn.Config(wrap(create_app(url)), host="127.0.0.1", port=port,
                                           log_level="warning", log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the lab server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
