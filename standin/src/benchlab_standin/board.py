"""A loopback "board": a real OpenSSH ``sshd`` on 127.0.0.1 with its own keys and config.

This is the stand-in for a Raspberry Pi or Jetson in tests and demos. Everything the ``ssh``
target does goes through the real client and server: key authentication, multiplexing,
``cat`` transfers, remote process groups. What it cannot show is a different machine: the
board's CPU, kernel and Python are this host's.

The server runs unprivileged-style (its own host key, ``AuthorizedKeysFile`` in its directory,
``StrictModes no``) so it needs no change to the machine's ``/etc/ssh``. A client config with
a ``Host`` alias is written next to it, exactly like a user's ``~/.ssh/config`` entry.

With ``system=`` (a root file system, :mod:`benchlab_standin.armboard`), sessions run inside
that root (sshd's own ``ChrootDirectory``) in a mount and host-name namespace of the daemon's
own, where ``/proc`` and ``/dev`` are mounted, and ``binds`` over them and the board has its own host name;
``session_env`` (``SetEnv``) reaches every session, which is how an emulated core is chosen.
"""

from __future__ import annotations

import getpass
import shlex
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LoopbackBoard", "find_sshd"]

_SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")


def find_sshd() -> str | None:
    """The ``sshd`` binary (Debian package openssh-server), or None when not installed."""
    found = shutil.which("sshd")
    if found:
        return found
    return next((c for c in _SSHD_CANDIDATES if Path(c).exists()), None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LoopbackBoard:
    """An ``sshd`` on loopback plus an ssh client config naming it ``alias``.

    ``start()`` generates keys and starts the daemon; ``stop()`` ends it. The target to use is
    ``SshTarget(host=alias, config=str(client_config))``.
    """

    root: Path
    alias: str = "loopback-board"
    port: int = 0
    #: A root file system the sessions run inside (sshd's ``ChrootDirectory``; needs root).
    system: Path | None = None
    #: Variables every session starts with (sshd's ``SetEnv``).
    session_env: dict[str, str] = field(default_factory=dict)
    #: The board's own host name (in its own UTS namespace; with ``system`` only).
    hostname: str | None = None
    #: Files and folders mounted over paths inside ``system`` (inside path → host path), after
    #: ``/proc``: a board's own ``/sys`` and ``/proc/cpuinfo``. Without one, no ``/sys``.
    binds: dict[str, Path] = field(default_factory=dict)
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def client_config(self) -> Path:
        """The ssh client config with the board's ``Host`` entry."""
        return self.root / "ssh_config"

    @property
    def target_text(self) -> str:
        """The ``--target`` value that reaches this board."""
        return f"ssh:host={self.alias},config={self.client_config}"

    def start(self, timeout: float = 20.0) -> LoopbackBoard:
        """Generate keys, write both configs and start ``sshd``; wait until it accepts."""
        sshd = find_sshd()
        if sshd is None:
            raise FileNotFoundError("sshd is not installed (apt-get install openssh-server)")
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = self.port or _free_port()
        host_key, user_key = self.root / "host_ed25519", self.root / "user_ed25519"
        for key in (host_key, user_key):
            if not key.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                               check=True, capture_output=True)
        authorized = self.root / "authorized_keys"
        authorized.write_text(Path(f"{user_key}.pub").read_text())
        authorized.chmod(0o600)
        user = getpass.getuser()
        (self.root / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
            f"PidFile {self.root / 'sshd.pid'}\nAuthorizedKeysFile {authorized}\n"
            "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
            f"AllowUsers {user}\nMaxSessions 50\nMaxStartups 50\nLogLevel ERROR\n"
            "Subsystem sftp internal-sftp\n" + self._system_config()
        )
        self.client_config.write_text(
            f"Host {self.alias}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {user}\n"
            f"  IdentityFile {user_key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
            "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        )
        # sshd refuses to start without its privilege-separation directory.
        Path("/run/sshd").mkdir(exist_ok=True) if Path("/run").is_dir() else None
        self._proc = subprocess.Popen(
            self._daemon_argv([sshd, "-D", "-e", "-f", str(self.root / "sshd_config")]),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(self.root / "sshd.log", "wb"),  # noqa: SIM115 - lives with the daemon
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                log = (self.root / "sshd.log").read_text(errors="replace")
                raise RuntimeError(f"sshd exited at start: {log.strip()[:500]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"sshd did not accept connections on port {self.port}")

    def _system_config(self) -> str:
        lines = [f"SetEnv {k}={v}" for k, v in sorted(self.session_env.items())]
        if self.system is not None:
            lines.append(f"ChrootDirectory {self.system}")
        return "".join(f"{line}\n" for line in lines)

    def _daemon_argv(self, sshd: list[str]) -> list[str]:
        """``sshd`` as is, or inside the namespace its chroot sessions need: the kernel's
        views mounted into the root (they leave with the daemon's namespace) and its name."""
        if self.system is None:
            return sshd
        root = shlex.quote(str(self.system))
        # Not the host's /sys: it describes an x86-64 CPU, and pytorch's cpuinfo (in ONNX
        # Runtime and XNNPACK) crashes reading it beside an emulated aarch64 CPU.
        steps = [f"mount -t proc proc {root}/proc", f"mount --rbind /dev {root}/dev"]
        for inside, host in sorted(self.binds.items()):
            steps.append(f"mount --bind {shlex.quote(str(host))} "
                         f"{shlex.quote(str(self.system) + inside)}")
        if self.hostname:
            steps.append(f"hostname {shlex.quote(self.hostname)}")
        return ["unshare", "--mount", "--uts", "--propagation", "private", "--", "sh", "-c",
                " && ".join([*steps, f"exec {shlex.join(sshd)}"])]

    def stop(self) -> None:
        """Stop the daemon (the sessions it started end with it)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> LoopbackBoard:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
