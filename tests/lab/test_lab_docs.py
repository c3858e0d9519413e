"""Every command in docs/lab.md's ```bash blocks runs, as written, against a real lab.

The test starts the lab the way the page does (its first command, ``benchlab lab up``), then
runs each command of each block in order, in the repository's root, with the tested
benchlab's scripts first on PATH (a reader who followed the README has them there). A command
that exits non-zero fails the test. Commands that run until stopped (``lab up``, ``lab serve``,
``lab worker``) are started, must answer (the API, or their device registered and alive),
and at the end must stop cleanly on Ctrl-C (SIGINT to their process group): exit code 0, or
130 (Ctrl-C's conventional code) for a server that re-raises the signal after its shutdown.
Before that, every job the commands queued must have ended with ok results.

The page's placeholders are replaced, and nothing else; each replacement and why:

* ``<printed database URL>``, ``postgresql://bench@db.lab/benchlab``, and ``...`` or ``URL``
  after ``--db``/``--lab`` → the database URL ``lab up`` printed: they stand for "your lab's
  database", and the only lab here is the one ``lab up`` started.
* ``SPEC`` and ``SPEC...`` → ``examples/lab/loop.yaml``, the page's own first spec.
* ``adb:R58N123`` → the device of ``lab up``'s worker: there is no phone here.
* ``abi=arm64-v8a`` → ``abi=`` this host's ABI: no arm64 device exists here (on an arm64
  machine the rule is kept as it is).
* ``/etc/benchlab/worker.toml`` → a temporary file holding the page's ```toml block (tests do
  not write to /etc), in which each board's ``user=bench`` becomes this user plus
  ``config=`` an ssh client config whose ``Host pi4 jetson`` entry leads to the loopback board
  (a real sshd on 127.0.0.1, tests/conftest.py's ``board``): boards named pi4 and jetson with
  a user bench cannot exist here, and a worker will not start while a board of its config is
  unreachable. The host names stay as written.
* ``lab up`` gets ``--data-dir`` (a temporary folder) and ``--port`` (a free one), and
  ``lab serve``'s ``--port 8470`` becomes a free port: a developer's own lab may hold the
  default folder and port, and ``lab up``'s server holds one port already.

A token that still looks like a placeholder fails the test, naming it: a new placeholder in
the page needs a replacement here, with its reason.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from benchlab.lab.client import job_outcomes
from benchlab.lab.devices import list_devices
from benchlab.lab.jobs import list_jobs
from benchlab.lab.localpg import PostgresServer, find_pg_bin
from benchlab.lab.queue import open_lab
from benchlab_standin.board import LoopbackBoard

from .agents import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "lab.md"
SPEC = "examples/lab/loop.yaml"
_SERVICES = ("up", "serve", "worker")
_PLACEHOLDER = re.compile(r"^(<.*|.*>|\.\.\.|URL|SPEC.*|ID|DB)$")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOC.read_text(), re.MULTILINE | re.DOTALL)


def _commands(block: str) -> list[str]:
    """The block's commands: continuation lines joined, comment lines and blanks left out."""
    lines = block.replace("\\\n", " ").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


@dataclass
class Service:
    """A documented command that runs until stopped."""

    command: str
    proc: subprocess.Popen
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def check_alive(self) -> None:
        assert self.proc.poll() is None, (
            f"{self.command!r} exited with {self.proc.returncode}:\n{self.output()}")


@dataclass
class DocLab:
    """What the commands share: the lab's URL, its devices, the processes left running."""

    folder: Path
    data_dir: Path
    env: dict[str, str]
    ssh_config: Path
    url: str = ""
    host_device: str = ""
    abi: str = ""
    services: list[Service] = field(default_factory=list)

    def substitute(self, command: str) -> list[str]:
        """The command's words with the page's placeholders replaced (see the docstring)."""
        if "<printed database URL>" in command:
            command = command.replace("<printed database URL>", self._need(self.url, command))
        words = shlex.split(command, comments=True)
        sub = self._subcommand(words)
        out: list[str] = []
        for i, word in enumerate(words):
            before = words[i - 1] if i else ""
            if word == "postgresql://bench@db.lab/benchlab" or (
                    before in ("--db", "--lab") and word in ("...", "URL")):
                word = self._need(self.url, command)
            elif word in ("SPEC", "SPEC..."):
                word = SPEC
            elif word == "adb:R58N123":
                word = self._need(self.host_device, command)
            elif word == "abi=arm64-v8a":
                word = f"abi={self._need(self.abi, command)}"
            elif word == "/etc/benchlab/worker.toml":
                [toml] = _blocks("toml")
                word = str(self.folder / "worker.toml")
                Path(word).write_text(toml.replace(
                    "user=bench", f"user={getpass.getuser()},config={self.ssh_config}"))
            elif sub == "serve" and before == "--port":
                word = str(_free_port())
            assert not _PLACEHOLDER.match(word), (
                f"{command!r}: {word!r} looks like a placeholder this test does not replace; "
                "add it to the substitutions in tests/lab/test_lab_docs.py, with the reason")
            out.append(word)
        if sub == "up":
            out += ["--data-dir", str(self.data_dir), "--port", str(_free_port())]
        return out

    @staticmethod
    def _need(value: str, command: str) -> str:
        assert value, f"{command!r} comes before `benchlab lab up` has printed the lab's URL"
        return value

    @staticmethod
    def _subcommand(words: list[str]) -> str:
        for i, word in enumerate(words[:-2]):
            if Path(word).name == "benchlab" and words[i + 1] == "lab":
                return words[i + 2]
        return ""

    def run(self, command: str) -> None:
        words = self.substitute(command)
        sub = self._subcommand(words)
        if sub in _SERVICES:
            self._start(command, words, sub)
            return
        done = subprocess.run(["bash", "-c", shlex.join(words)], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=400, check=False)
        assert done.returncode == 0, (
            f"{command!r} (run as {shlex.join(words)!r}) exited with {done.returncode}:\n"
            f"{done.stdout}\n{done.stderr}\n{self.service_logs()}")

    def _start(self, command: str, words: list[str], sub: str) -> None:
        log = self.folder / f"service-{len(self.services)}-{sub}.log"
        with open(log, "w") as sink:
            # `exec`: the process is the command itself, so Ctrl-C reaches it as in a terminal.
            proc = subprocess.Popen(["bash", "-c", "exec " + shlex.join(words)], cwd=ROOT,
                                    env=self.env, stdout=sink, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        service = Service(command, proc, log)
        self.services.append(service)
        if sub == "up":
            def printed_url() -> bool:
                service.check_alive()
                found = re.search(r"^database: (\S+)", service.output(), re.MULTILINE)
                self.url = found.group(1) if found else ""
                return bool(found)
            wait_until(printed_url, 180, f"{command!r} to print the database URL")

            def host_device() -> bool:
                service.check_alive()
                hosts = [d for d in self._devices() if d.kind == "host" and d.alive]
                if hosts:
                    self.host_device = hosts[0].id
                    self.abi = str(hosts[0].properties.get("abi", ""))
                return bool(hosts)
            wait_until(host_device, 120, f"{command!r}'s worker to register this host")
        elif sub == "serve":
            port = words[words.index("--port") + 1]

            def answers() -> bool:
                service.check_alive()
                try:
                    return httpx.get(f"http://127.0.0.1:{port}/api/v1/health",
                                     timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False
            wait_until(answers, 120, f"{command!r} to answer")
        else:
            device = f"host:{words[words.index('--name') + 1]}"

            def registered() -> bool:
                # Every device the worker says it serves (its boards too), alive.
                service.check_alive()
                serving = {device, *re.findall(r"^serving (\S+) ", service.output(),
                                               re.MULTILINE)}
                alive = {d.id for d in self._devices() if d.alive}
                return serving <= alive
            wait_until(registered, 120, f"{command!r} to register its devices")

    def _devices(self) -> list:
        if not self.url:
            return []
        with open_lab(self.url) as lab:
            return list_devices(lab.store)

    def service_logs(self) -> str:
        return "\n".join(f"--- {s.command}\n{s.output()}" for s in self.services)

    def stop(self) -> list[tuple[str, int | None]]:
        """Ctrl-C each service, the last started first; their exit codes."""
        codes = []
        for service in reversed(self.services):
            if service.proc.poll() is None:
                os.killpg(service.proc.pid, signal.SIGINT)
            try:
                service.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(service.proc.pid, signal.SIGKILL)
                service.proc.wait()
            codes.append((service.command, service.proc.returncode))
        return codes


@pytest.fixture
def doc_lab(tmp_path: Path, board: LoopbackBoard, zoo_cache_dir: Path) -> Iterator[DocLab]:
    if find_pg_bin() is None:
        pytest.skip("PostgreSQL server binaries are not installed")
    # The page's boards, pi4 and jetson, as aliases of the loopback board.
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(board.client_config.read_text().replace(
        f"Host {board.alias}\n", "Host pi4 jetson\n"))
    # A short folder the postgres user may enter (pytest's own are private to root).
    data = Path(tempfile.mkdtemp(prefix="benchlab-docs-"))
    scripts = str(Path(sys.executable).parent)
    # The commands' default artifact cache ($XDG_CACHE_HOME/benchlab/artifacts) is the
    # session's, where the page's zoo model is exported once for every test; not the user's.
    artifacts = tmp_path / "xdg-cache" / "benchlab" / "artifacts"
    artifacts.parent.mkdir(parents=True)
    artifacts.symlink_to(zoo_cache_dir, target_is_directory=True)
    env = {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", ""),
           "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
    lab = DocLab(folder=tmp_path, data_dir=data, env=env, ssh_config=ssh_config)
    try:
        yield lab
    finally:
        lab.stop()
        bin_dir = find_pg_bin()
        if bin_dir is not None and (data / "data" / "postmaster.pid").exists():
            PostgresServer(bin_dir, root=data).stop()  # `lab up` was killed before its stop
        shutil.rmtree(data, ignore_errors=True)


def test_every_bash_command_of_the_lab_page_runs_as_written(doc_lab: DocLab) -> None:
    blocks = _blocks("bash")
    assert len(blocks) >= 3, "docs/lab.md lost its command blocks"
    commands = [command for block in blocks for command in _commands(block)]
    assert DocLab._subcommand(shlex.split(commands[0], comments=True)) == "up", (
        "the page's first command must start the lab the others use")
    assert (ROOT / ".venv" / "bin" / "benchlab").exists() or not any(
        c.startswith(".venv/") for c in commands), (
        "the page runs .venv/bin/benchlab: install as the README says, into .venv")
    for command in commands:
        started = time.monotonic()
        doc_lab.run(command)
        print(f"{time.monotonic() - started:6.1f} s  {command}")  # shown when the test fails

    # Every job the commands queued, with --wait or without, ended with ok results.
    def all_ended() -> bool:
        with open_lab(doc_lab.url) as lab:
            return all(j.status in ("finished", "failed", "cancelled")
                       for j in list_jobs(lab.store))
    wait_until(all_ended, 300, "every queued job to end")
    with open_lab(doc_lab.url) as lab:
        jobs = list_jobs(lab.store)
    assert jobs, "the page's commands queued no job"
    failures = [line for outcome in job_outcomes(doc_lab.url, jobs) for line in outcome.lines()]
    assert failures == [], "\n".join(failures) + "\n" + doc_lab.service_logs()

    # A clean stop exits 0, or 130 where the process re-raises the SIGINT after its shutdown
    # (uvicorn does, so `lab serve` ends as Ctrl-C'd programs conventionally do).
    codes = doc_lab.stop()
    assert all(code in (0, 128 + signal.SIGINT) for _, code in codes), (
        f"{codes}\n{doc_lab.service_logs()}")
