"""What the ``ssh`` and ``adb`` targets share: running one command in a remote POSIX shell.

A remote command is wrapped in a few lines of ``sh`` that record the shell's PID (the process
group of everything the command starts, because ``sshd`` and ``adbd`` start each command in a
new session), apply pinning (``taskset`` with a hex mask, which both util-linux and Android's
toybox accept), a memory cap (``ulimit -v``) and the environment, keep stderr apart, and print
the exit status after a unique marker. The marker matters on Android: the legacy ``shell:``
service has one merged stream and no exit status at all.

On a timeout, killing the local ``ssh``/``adb`` client is not enough: the remote process would
run on, heating the phone and skewing the next job. :meth:`ShellTarget.run` therefore kills the
remote process group through a second connection (TERM, a grace period, then KILL) before it
gives up on the client.
"""

from __future__ import annotations

import abc
import secrets
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.targets.environment import parse_cpu_list
from benchlab.targets.base import CommandResult, RunRequest
from benchlab.targets.probe import PROBE_SCRIPT, parse_probe

__all__ = ["ClientResult", "ShellTarget", "cpu_mask", "wrap_command"]

_MARKER = "__BENCHLAB_EXIT_"
_TERM_GRACE_S = 2.0
# The client gets this long to finish after its remote process group was killed.
_CLIENT_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class ClientResult:
    """What a local client process (``ssh``, ``adb``) returned."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


def cpu_mask(cpu_list: str) -> str:
    """``"4-7"`` → ``"f0"``: the hex affinity mask every ``taskset`` understands."""
    mask = 0
    for cpu in parse_cpu_list(cpu_list):
        mask |= 1 << cpu
    return format(mask, "x")


def _command_text(argv: Sequence[str] | str) -> str:
    return argv if isinstance(argv, str) else shlex.join(list(argv))


def wrap_command(request: RunRequest, *, token: str, pidfile: str, errfile: str) -> str:
    """The shell text that runs ``request`` remotely and reports its exit status."""
    command = _command_text(request.argv)
    if request.cpu_list:
        # A shell command string runs inside its own sh so the whole pipeline is pinned.
        inner = command if not isinstance(request.argv, str) else f"sh -c {shlex.quote(command)}"
        command = f"taskset {cpu_mask(request.cpu_list)} {inner}"
    setup = [f"export {k}={shlex.quote(str(v))}" for k, v in sorted(request.env.items())]
    if request.memory_limit:
        setup.append(f"ulimit -v {int(request.memory_limit) * 1024}")
    body = "; ".join([*setup, command])
    cd = f"cd {shlex.quote(request.cwd)} || exit 126; " if request.cwd else ""
    piddir = pidfile.rsplit("/", 1)[0] or "/"
    return (
        f"mkdir -p {shlex.quote(piddir)} 2>/dev/null; echo $$ > {shlex.quote(pidfile)}; {cd}"
        f"( {body}\n) 2> {shlex.quote(errfile)}; rc=$?; "
        f"printf '\\n{_MARKER}{token} %d\\n' $rc; "
        f"cat {shlex.quote(errfile)} 2>/dev/null; rm -f {shlex.quote(errfile)} {shlex.quote(pidfile)}"
    )


def _split_marked(text: str, token: str) -> tuple[str, str, int | None]:
    """(stdout, stderr, exit status) from a wrapped command's output; status None if absent."""
    marker = f"{_MARKER}{token} "
    at = text.rfind("\n" + marker)
    if at < 0:
        return text, "", None
    rest = text[at + 1 + len(marker):]
    status_text, _, stderr = rest.partition("\n")
    try:
        status: int | None = int(status_text.strip())
    except ValueError:
        status = None
    return text[:at], stderr, status


class ShellTarget(abc.ABC):
    """Base of targets reached through a client program that runs remote ``sh`` commands.

    Subclasses provide :meth:`_client_argv` (the local command that runs one remote shell
    command), :meth:`push`, :meth:`pull` and :meth:`describe`; everything else is here.
    """

    name = "remote"
    #: Where working directories are made on the device.
    workroot = "/tmp"
    #: Remote command lines longer than this are pushed as a script first.
    max_command_chars = 60_000

    # -- what subclasses provide -------------------------------------------------------
    @abc.abstractmethod
    def _client_argv(self, command: str) -> list[str]:
        """The local argv that runs ``command`` in the device's shell."""

    @abc.abstractmethod
    def push(self, local: Path, workdir: str, name: str | None = None) -> str:
        """Copy a local file into ``workdir`` on the device; its path there."""

    @abc.abstractmethod
    def pull(self, remote: str, local: Path) -> Path:
        """Copy a file from the device to ``local``."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """Identity and state of the device."""

    def _normalize(self, text: str) -> str:
        """Hook for clients that mangle line ends (old adb with a pty)."""
        return text

    # -- running -------------------------------------------------------------------------
    def _client(
        self, command: str, timeout: float, *, stdin: Any = subprocess.DEVNULL,
        on_timeout: Callable[[], object] | None = None,
    ) -> ClientResult:
        """Run one remote command through the client.

        On timeout, ``on_timeout`` runs first (it kills the remote side, after which the
        client usually ends by itself); then the client is stopped.
        """
        try:
            proc = subprocess.Popen(
                self._client_argv(command), stdin=stdin, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            return ClientResult(127, "", f"benchlab: could not start the client: {exc}\n")
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            if on_timeout is not None:
                on_timeout()
            try:
                out, err = proc.communicate(timeout=_CLIENT_GRACE_S)
            except subprocess.TimeoutExpired:
                out, err = self._stop_client(proc)
        return ClientResult(
            proc.returncode, self._normalize(out.decode("utf-8", "replace")),
            err.decode("utf-8", "replace"), timed_out,
        )

    @staticmethod
    def _stop_client(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                return proc.communicate(timeout=_TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                continue
        return b"", b""

    def shell(self, command: str, timeout: float = 60.0) -> ClientResult:
        """Run a short shell command on the device (no wrapping, no kill on timeout)."""
        return self._client(command, timeout)

    def run(self, request: RunRequest) -> CommandResult:
        """Run one command; on timeout kill its remote process group, then the client."""
        token = secrets.token_hex(6)
        pidfile = f"{self.workroot}/.benchlab-{token}.pid"
        errfile = f"{self.workroot}/.benchlab-{token}.err"
        script = wrap_command(request, token=token, pidfile=pidfile, errfile=errfile)
        if len(script) > self.max_command_chars:
            script = self._as_pushed_script(script, token)
        started = time.perf_counter()
        kills: list[ClientResult] = []
        client = self._client(
            script, request.timeout, on_timeout=lambda: kills.append(self.kill_remote(pidfile))
        )
        kill = kills[0] if kills else None
        duration = time.perf_counter() - started
        stdout, stderr, status = _split_marked(client.stdout, token)
        stderr += client.stderr
        if kill is not None:
            if kill.returncode != 0:
                stderr += f"benchlab: killing the remote process failed: {kill.stderr.strip()[:300]}\n"
            return CommandResult(None, stdout, stderr, duration, timed_out=True)
        if status is None:
            # The wrapper never reported: the connection or the client failed.
            code = client.returncode if client.returncode else 255
            return CommandResult(
                code, stdout, stderr or "the connection to the device was lost\n", duration
            )
        return CommandResult(status, stdout, stderr, duration)

    def kill_remote(self, pidfile: str) -> ClientResult:
        """TERM, then KILL, the process group whose leader's PID is in ``pidfile``."""
        q = shlex.quote(pidfile)
        command = (
            f"p=$(cat {q} 2>/dev/null); [ -n \"$p\" ] || exit 0; "
            # "kill -SIG -PGID" is the one group-kill spelling dash, bash, mksh and toybox share.
            "kill -TERM -$p 2>/dev/null || kill -TERM $p 2>/dev/null; "
            f"i=0; while kill -0 $p 2>/dev/null && [ $i -lt {int(_TERM_GRACE_S * 10)} ]; do "
            "sleep 0.1; i=$((i+1)); done; "
            "kill -KILL -$p 2>/dev/null; kill -KILL $p 2>/dev/null; "
            f"rm -f {q}; exit 0"
        )
        return self._client(command, _CLIENT_GRACE_S + _TERM_GRACE_S + 10)

    def _as_pushed_script(self, script: str, token: str) -> str:
        """Long command lines (a big runner config) travel as a file instead."""
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / f"benchlab-{token}.sh"
            local.write_text(script)
            remote = self.push(local, self.workroot, local.name)
        return f"sh {shlex.quote(remote)}; rc=$?; rm -f {shlex.quote(remote)}; exit $rc"

    # -- files and directories ------------------------------------------------------------
    def make_workdir(self, name: str) -> str:
        """A fresh directory under :attr:`workroot` on the device."""
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]
        path = f"{self.workroot}/benchlab-{safe}-{secrets.token_hex(4)}"
        result = self._client(f"mkdir -p {shlex.quote(path)}", 60.0)
        if result.returncode != 0:
            from benchlab.errors import InfrastructureError

            raise InfrastructureError(
                f"{self.name}: could not create {path} on the device: "
                f"{(result.stderr or result.stdout).strip()[:300]}"
            )
        return path

    def remove_workdir(self, workdir: str) -> None:
        """Delete a working directory made by :meth:`make_workdir` (best effort)."""
        if not workdir.startswith(f"{self.workroot}/benchlab-"):
            return  # never rm -rf anything benchlab did not make
        self._client(f"rm -rf {shlex.quote(workdir)}", 120.0)

    # -- state -----------------------------------------------------------------------------
    def device_state(self) -> dict[str, Any]:
        """Frequencies, temperatures, battery and load, read with :data:`PROBE_SCRIPT`."""
        result = self._client(PROBE_SCRIPT, 60.0)
        state = parse_probe(result.stdout)
        if not state["complete"]:
            state["error"] = (result.stderr or "the probe did not finish").strip()[:300]
        return state
