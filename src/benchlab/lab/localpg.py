"""A PostgreSQL server of our own: real binaries, a private data directory, trust auth, loopback.

``benchlab lab up`` starts one (kept in a data directory across restarts) so that a lab can be
tried on one machine in one command; the tests start a throwaway one per session. Usage::

    bin_dir = find_pg_bin()          # None when the server binaries are not installed
    server = PostgresServer(bin_dir)
    server.start()
    url = server.create_database()   # a fresh, empty database per call
    ...
    server.stop()

initdb refuses to run as root, so under root every server command runs as the ``postgres``
user, with a data directory handed over to it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PostgresServer", "PostgresUnavailable", "find_pg_bin"]

_SUPERUSER = "postgres"
_SERVER_USER = "postgres"
_START_ATTEMPTS = 3


class PostgresUnavailable(RuntimeError):
    """This machine cannot run a test server (reason in the message); tests should skip."""


def find_pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, newest major version first."""

    def major(path: Path) -> tuple[int, str]:
        name = path.parent.name
        return (int(name), name) if name.isdigit() else (-1, name)

    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=major, reverse=True)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).parent)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresServer:
    """One PostgreSQL server on 127.0.0.1 and a free port, living in a temporary directory."""

    def __init__(self, bin_dir: Path, root: Path | None = None, port: int = 0) -> None:
        """Prepare (not start) a server using the binaries in ``bin_dir``.

        With ``root`` the cluster lives (and stays) in ``root/data``, and a later start reuses
        it; without, a temporary directory is made and deleted by :meth:`stop`. ``port`` 0
        picks a free one.
        """
        self.bin_dir = bin_dir
        self.port = port
        self._keep = root is not None
        self._fixed_port = port
        self._root: Path | None = None if root is None else root.resolve()
        self._databases = 0
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            try:
                self._owner = pwd.getpwnam(_SERVER_USER)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root and there is no {_SERVER_USER!r} user to run initdb as"
                ) from None
            runuser = shutil.which("runuser")
            self._prefix = (
                [runuser, "-u", _SERVER_USER, "--"] if runuser else ["su", _SERVER_USER, "-c"]
            )

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory."""
        assert self._root is not None, "server not started"
        return self._root / "data"

    def _as_server_user(self, argv: list[str]) -> list[str]:
        if self._prefix[-1:] == ["-c"]:
            # `su -c` takes one shell command line.
            return [*self._prefix, " ".join(argv)]
        return [*self._prefix, *argv]

    def _run(self, argv: list[str], *, as_server: bool) -> subprocess.CompletedProcess[str]:
        command = self._as_server_user(argv) if as_server else argv
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    def start(self) -> None:
        """initdb a cluster (unless a kept one exists) and start it; RuntimeError if not."""
        if self._keep:
            assert self._root is not None
            self._root.mkdir(parents=True, exist_ok=True)
        else:
            # A short path under the system temp dir: pytest's own tmp dirs are private to
            # their user (postgres cannot enter them) and socket paths must stay under 108 bytes.
            self._root = Path(tempfile.mkdtemp(prefix="benchlab-pg-"))
        if self._prefix:
            os.chown(self._root, self._owner.pw_uid, self._owner.pw_gid)
        if not (self.data_dir / "PG_VERSION").is_file():
            self._initdb()
        failure = ""
        for _ in range(_START_ATTEMPTS):
            # Another process may grab the port between probing and binding: try a new one.
            self.port = self._fixed_port or _free_port()
            started = self._pg_ctl_start()
            if started.returncode == 0:
                return
            failure = f"{started.stdout}\n{started.stderr}\n{self._log_text()}"
        self._cleanup()
        raise RuntimeError(f"pg_ctl start failed:\n{failure}")

    def _initdb(self) -> None:
        init = self._run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                _SUPERUSER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            as_server=True,
        )
        if init.returncode != 0:
            self._cleanup()
            raise RuntimeError(f"initdb failed:\n{init.stdout}\n{init.stderr}")

    def _pg_ctl_start(self) -> subprocess.CompletedProcess[str]:
        assert self._root is not None
        server_options = f"-h 127.0.0.1 -p {self.port} -k {self._root}"
        return self._run(
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self._root / "server.log"),
                "-o",
                server_options,
                "-w",
                "-t",
                "60",
                "start",
            ],
            as_server=True,
        )

    def _log_text(self) -> str:
        assert self._root is not None
        try:
            return (self._root / "server.log").read_text(errors="replace")
        except OSError:
            return ""

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of one database on this server."""
        return f"postgresql+psycopg2://{_SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (a fresh name unless given) and return its URL."""
        if name is None:
            self._databases += 1
            name = f"benchlab_test_{self._databases}"
        done = self._run(
            [
                str(self.bin_dir / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                _SUPERUSER,
                name,
            ],
            as_server=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"createdb {name} failed:\n{done.stdout}\n{done.stderr}")
        return self.url(name)

    def halt(self) -> None:
        """Stop the server process (fast shutdown) and keep its cluster, for :meth:`resume`.

        What a database restart or failover looks like to the lab: connections are cut and
        new ones refused until the server is back.
        """
        assert self._root is not None, "server not started"
        pg_ctl = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-w"]
        done = self._run([*pg_ctl, "-t", "20", "-m", "fast", "stop"], as_server=True)
        if done.returncode != 0:
            # A fast shutdown waits for every backend to exit and for a shutdown checkpoint;
            # seen to outlast pg_ctl's wait on a loaded 2-CPU VM. An immediate one is a crash
            # of the server, which the lab must survive as well.
            done = self._run([*pg_ctl, "-m", "immediate", "stop"], as_server=True)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl stop failed:\n{done.stdout}\n{done.stderr}")

    def resume(self) -> None:
        """Start a halted server again on the same port."""
        started = self._pg_ctl_start()
        if started.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed:\n{started.stdout}\n{started.stderr}\n"
                               f"{self._log_text()}")

    def stop(self) -> None:
        """Stop the server (fast shutdown); delete its directory unless it is a kept one."""
        if self._root is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            self._run(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"],
                as_server=True,
            )
        self._cleanup()

    def _cleanup(self) -> None:
        if self._keep:
            return
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
