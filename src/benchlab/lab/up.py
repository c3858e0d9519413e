"""``benchlab lab up``: a whole lab on one machine, in one command, to try it.

It starts a PostgreSQL server of its own from the installed server binaries (kept in a data
directory, so a second ``up`` finds the same results), initialises the lab database, then runs
the server and a worker for this host as child processes and prints the URL. Ctrl-C, SIGTERM
or SIGHUP stops all three (the worker first, which finishes or hands back its job, then the
server, then PostgreSQL). A real lab runs ``lab serve`` and ``lab worker`` against a shared
PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import InfrastructureError, UsageError
from benchlab.lab.localpg import PostgresServer, PostgresUnavailable, find_pg_bin
from benchlab.lab.queue import init_lab

__all__ = ["STOP_SIGNALS", "LocalLab", "default_data_dir", "start_local_lab"]

_DATABASE = "benchlab"

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""What stops a lab process cleanly: Ctrl-C, a service manager's stop, a closed terminal."""

_CHILD_GRACE_S = 90.0
"""How long a child may take to stop: the worker's grace for a running job (60 s) and more."""


def default_data_dir() -> Path:
    """Where ``lab up`` keeps its PostgreSQL cluster: a short path the server user can enter."""
    return Path(tempfile.gettempdir()) / f"benchlab-lab-{os.getuid()}"


@dataclass
class LocalLab:
    """A running local lab: its database server, web server and worker processes."""

    database_url: str
    web_url: str
    pg: PostgresServer
    children: list[subprocess.Popen]

    def stop(self) -> None:
        """Stop the worker, then the server (SIGTERM, then SIGKILL), then the database."""
        for child in reversed(self.children):  # the worker first: it still needs the server
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=_CHILD_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self.pg.stop()

    def wait(self) -> str:
        """Run until a stop signal arrives or a lab process exits; then stop everything.

        Returns why it stopped. Meant for the main thread (it installs signal handlers).
        """
        received: list[int] = []
        previous = {sig: signal.signal(sig, lambda sig, _frame: received.append(sig))
                    for sig in STOP_SIGNALS}
        try:
            while not received and all(child.poll() is None for child in self.children):
                time.sleep(0.2)
            if received:
                why = f"stopped by {signal.Signals(received[0]).name}"
            else:
                exited = next(c for c in self.children if c.poll() is not None)
                why = f"a lab process exited: 'lab {exited.args[4]}' with code {exited.returncode}"
            # A second signal during the stop must not cut it short and leave orphans.
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
            self.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return why


def _create_database(pg: PostgresServer) -> str:
    try:
        return pg.create_database(_DATABASE)
    except RuntimeError as exc:
        if "already exists" not in str(exc):
            raise InfrastructureError(f"cannot create the lab database: {exc}") from None
        return pg.url(_DATABASE)


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise InfrastructureError(f"the lab server exited with code {proc.returncode}")
        try:
            if httpx.get(url + "api/v1/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise InfrastructureError(f"the lab server did not answer at {url} within {timeout:.0f} s")


def start_local_lab(*, data_dir: Path | None = None, port: int = 8470, pg_port: int = 0,
                    worker_args: Sequence[str] = (),
                    log: Callable[[str], None] = print) -> LocalLab:
    """Start PostgreSQL, initialise the lab, start the server and this host's worker."""
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise UsageError("lab up needs the PostgreSQL server binaries (initdb, pg_ctl; Debian: "
                         "apt-get install postgresql); or run 'lab serve' and 'lab worker' "
                         "against an existing server with --db")
    try:
        pg = PostgresServer(bin_dir, root=data_dir or default_data_dir(), port=pg_port)
        pg.start()
    except (PostgresUnavailable, RuntimeError) as exc:
        raise InfrastructureError(f"cannot start PostgreSQL for the lab: {exc}") from None
    children: list[subprocess.Popen] = []
    lab = LocalLab("", f"http://127.0.0.1:{port}/", pg, children)
    try:
        lab.database_url = _create_database(pg).replace("+psycopg2", "")
        log(init_lab(lab.database_url))
        command = [sys.executable, "-m", "benchlab", "lab"]
        children.append(subprocess.Popen(
            [*command, "serve", "--db", lab.database_url, "--port", str(port)]))
        _wait_http(lab.web_url, children[0])
        children.append(subprocess.Popen(
            [*command, "worker", "--db", lab.database_url, *worker_args]))
    except BaseException:
        lab.stop()
        raise
    return lab
