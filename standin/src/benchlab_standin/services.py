"""The device-side services of the stand-in: ``shell:``/``exec:`` and ``sync:``, in a sandbox.

Sources: AOSP ``packages/modules/adb/SERVICES.TXT`` (service names; ``shell:`` without the
``shell_v2`` feature is one raw byte stream, stdout and stderr together, no exit status),
``shell_protocol.h`` (``shell,v2``: packets of a one-byte id and a little-endian 32-bit length,
stdout and stderr apart, then the exit status; served only by a profile that announces
``shell_v2``) and
``SYNC.TXT`` / ``file_sync_protocol.h`` (the legacy sync requests, see
:mod:`benchlab_standin.adb_protocol`).

The sandbox is a directory that plays the device's filesystem. Sync requests map *every*
device path into it (after collapsing ``..``, so nothing outside can be reached). Shell
commands run on this machine with ``/bin/sh -c``; only the device-specific prefixes
(:data:`MAPPED_DIRS`, :data:`MAPPED_FILES`) are rewritten textually into the sandbox, so
``/bin/sh``, ``/tmp`` and the host's tools keep working. On an ARM phone that can
(:attr:`Sandbox.cpu_view`), each command also runs in a mount namespace of its own where the
sandbox's ``/proc/cpuinfo`` and ``/sys/devices/system/cpu`` are mounted over the host's, so a
program's own ``open()`` of those paths reads the phone's CPU
(:mod:`benchlab_standin.cpuview`).
"""

from __future__ import annotations

import os
import posixpath
import re
import selectors
import signal
import stat
import struct
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from benchlab_standin.adb_protocol import (
    SYNC_DATA_MAX, ProtocolError, SyncRequestParser, sync_dent, sync_done_dent, sync_fail,
    sync_packet, sync_stat,
)
from benchlab_standin.cpuview import private_view_argv

__all__ = [
    "MAPPED_DIRS", "MAPPED_FILES", "Sandbox", "StreamLike", "serve_root", "serve_shell",
    "serve_shell_v2", "serve_sync",
]

#: Device directories whose whole subtree lives in the sandbox.
MAPPED_DIRS = ("/data", "/sdcard", "/sys", "/system")
#: Single device files that live in the sandbox (the rest of /proc is the host's).
MAPPED_FILES = ("/proc/cpuinfo", "/proc/loadavg", "/proc/meminfo", "/proc/uptime")

# A mapped prefix where a path starts: not after a path or name character (so /foo/data and
# $VAR/data stay as they are), and ending where the path component ends.
_DEVICE_PATH = re.compile(
    r"(?<![\w./~}\)-])(?:/(?:data|sdcard|system|sys)(?![\w.-])|/proc/(?:cpuinfo|loadavg|meminfo|uptime|sys/vm/drop_caches)"
    r"(?![\w.-]))")
# The sandbox path is pasted unquoted into commands, so it must not need quoting.
_SAFE_ROOT = re.compile(r"^/[\w./+@%,:-]*$")


class StreamLike(Protocol):
    """What a service needs from an ADB stream (see :class:`benchlab_standin.adbd.Stream`)."""

    max_payload: int

    def write(self, data: bytes) -> bool: ...

    def read(self) -> bytes | None: ...

    def close(self) -> None: ...

    def on_close(self, callback: Callable[[], None]) -> None: ...


class Sandbox:
    """The directory that plays the device filesystem, and how commands run inside it."""

    def __init__(self, root: Path, emulated_cpu: str | None = None) -> None:
        root = Path(root).absolute()
        self.emulated_cpu = emulated_cpu
        if not _SAFE_ROOT.match(str(root)):
            raise ValueError(f"sandbox root {root} has characters that would need shell "
                             "quoting; paths are rewritten into commands unquoted")
        self.root = root
        #: The sandbox's ``/proc/cpuinfo`` and ``/sys/devices/system/cpu``, mounted over the
        #: host's for every command (set by an ARM phone where it may); None: path text only.
        self.cpu_view: tuple[Path, Path] | None = None

    def host_path(self, device_path: str) -> Path:
        """Where a device path lives in the sandbox (any path; ``..`` cannot climb out)."""
        clean = posixpath.normpath("/" + device_path.lstrip("/")).lstrip("/")
        return self.root / clean if clean else self.root

    def rewrite(self, command: str) -> str:
        """The command with device path prefixes pointed into the sandbox (purely textual)."""
        return _DEVICE_PATH.sub(lambda m: str(self.root) + m.group(0), command)

    def argv(self, command: str) -> list[str]:
        """How ``command`` runs on this machine: rewritten, and with the phone's CPU view."""
        shell = ["/bin/sh", "-c", self.rewrite(command)]
        return shell if self.cpu_view is None else private_view_argv(*self.cpu_view, shell)

    def environment(self) -> dict[str, str]:
        """A phone-like environment; path-valued variables point into the sandbox."""
        host_path = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        tmp = str(self.host_path("/data/local/tmp"))
        emulated = {}
        if self.emulated_cpu:
            # An ARM phone: its tools without Python, its programs on the emulated core.
            host_path = str(self.host_path("/system/xbin"))
            emulated = {"QEMU_CPU": self.emulated_cpu}
        return {
            **emulated,
            "PATH": f"{self.host_path('/system/bin')}:{host_path}",
            "HOME": tmp, "TMPDIR": tmp,
            "ANDROID_DATA": str(self.host_path("/data")),
            "ANDROID_ROOT": str(self.host_path("/system")),
            "ANDROID_STORAGE": str(self.host_path("/storage")),
            "EXTERNAL_STORAGE": str(self.host_path("/sdcard")),
            "ANDROID_ASSETS": str(self.host_path("/system/app")),
            "SHELL": "/bin/sh", "USER": "shell", "LOGNAME": "shell", "HOSTNAME": "localhost",
        }


# --- shell ---------------------------------------------------------------------------------


class _ShellCommand:
    """A command started for a shell service, in its own process group (one killpg ends all
    it started), killed when the host closes the stream; ``busy(+1)``/``busy(-1)`` bracket it
    (the physical simulation heats up meanwhile)."""

    def __init__(self, stream: StreamLike, command: str, sandbox: Sandbox,
                 busy: Callable[[int], None], stderr: int, pump: Callable[..., None]) -> None:
        cwd = sandbox.host_path("/data/local/tmp")
        cwd.mkdir(parents=True, exist_ok=True)
        self.stream, self.busy = stream, busy
        self.proc = subprocess.Popen(  # noqa: S603 - running the host's commands is the point
            sandbox.argv(command), cwd=cwd, env=sandbox.environment(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0,
            start_new_session=True)
        busy(+1)
        stream.on_close(self.kill_group)
        threading.Thread(target=pump, args=(stream, self.proc), daemon=True,
                         name=f"standin-stdin-{self.proc.pid}").start()

    def kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def end(self, host_gone: bool) -> None:
        """Wait for the command, close its pipes and the stream. Where the host closed the
        stream (or the connection dropped) while it ran, its group must not outlive the stream;
        background jobs of a command that finished normally are left alone, as on a phone."""
        if host_gone:
            self.kill_group()
        self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr, self.proc.stdin):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        self.busy(-1)
        self.stream.close()


def serve_shell(stream: StreamLike, command: str, sandbox: Sandbox,
                busy: Callable[[int], None] = lambda delta: None) -> None:
    """Run ``command`` and stream its combined output; kill its process group on CLSE."""
    if not command.strip():
        stream.close()  # No interactive shell in the stand-in.
        return
    shell = _ShellCommand(stream, command, sandbox, busy, subprocess.STDOUT, _pump_stdin)
    host_gone = True
    try:
        fd = shell.proc.stdout.fileno()  # type: ignore[union-attr]
        while chunk := os.read(fd, stream.max_payload):
            if not stream.write(chunk):
                break
        else:
            host_gone = False
    finally:
        shell.end(host_gone)


def _pump_stdin(stream: StreamLike, proc: subprocess.Popen[bytes]) -> None:
    # Legacy shell forwards the host's stdin; the host never signals its end (no shell_v2),
    # exactly as with a real device, so commands that read stdin wait until killed.
    while (data := stream.read()) is not None:
        try:
            proc.stdin.write(data)  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError, OSError):
            pass  # The process stopped reading; keep draining so the host is not stalled.


# shell_protocol.h: the packet ids of ``shell,v2``.
_V2_STDIN, _V2_STDOUT, _V2_STDERR, _V2_EXIT, _V2_CLOSE_STDIN = 0, 1, 2, 3, 4
_V2_HEADER = struct.Struct("<BI")


def _v2_packet(kind: int, data: bytes) -> bytes:
    return _V2_HEADER.pack(kind, len(data)) + data


def serve_shell_v2(stream: StreamLike, command: str, sandbox: Sandbox,
                   busy: Callable[[int], None] = lambda delta: None) -> None:
    """``shell,v2`` (the shell protocol): stdout and stderr as separate packets, then an exit
    packet with the status; the host's stdin arrives as packets and ends with CLOSE_STDIN.

    As adbd does: a command killed by a signal exits with 128 + the signal. ``pty`` is served
    as ``raw`` (the stand-in has no terminal; benchlab never asks for one).
    """
    if not command.strip():
        stream.close()  # No interactive shell in the stand-in.
        return
    shell = _ShellCommand(stream, command, sandbox, busy, subprocess.PIPE, _pump_stdin_v2)
    proc = shell.proc
    room = max(1, stream.max_payload - _V2_HEADER.size)  # one packet per WRTE
    host_gone = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ, _V2_STDOUT)  # type: ignore[arg-type]
            selector.register(proc.stderr, selectors.EVENT_READ, _V2_STDERR)  # type: ignore[arg-type]
            while selector.get_map() and not host_gone:
                for key, _ in selector.select():
                    chunk = os.read(key.fd, room)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif not stream.write(_v2_packet(key.data, chunk)):
                        host_gone = True
                        break
        if host_gone:
            shell.kill_group()
        code = proc.wait()
        if not host_gone:
            status = code if code >= 0 else 128 - code
            stream.write(_v2_packet(_V2_EXIT, bytes([status & 0xFF])))
    finally:
        shell.end(host_gone)


def _pump_stdin_v2(stream: StreamLike, proc: subprocess.Popen[bytes]) -> None:
    # Packets may span WRTE payloads: keep what has come until a whole one is here.
    pending = bytearray()
    while (data := stream.read()) is not None:
        pending += data
        while len(pending) >= _V2_HEADER.size:
            kind, length = _V2_HEADER.unpack_from(pending)
            if len(pending) < _V2_HEADER.size + length:
                break
            body = bytes(pending[_V2_HEADER.size:_V2_HEADER.size + length])
            del pending[:_V2_HEADER.size + length]
            try:
                if kind == _V2_STDIN:
                    proc.stdin.write(body)  # type: ignore[union-attr]
                elif kind == _V2_CLOSE_STDIN:
                    proc.stdin.close()  # type: ignore[union-attr]
            except (BrokenPipeError, ValueError, OSError):
                pass  # The process stopped reading; keep draining (window size is ignored).


def serve_root(stream: StreamLike, kind: str, rooted: bool) -> None:
    """``root:``/``unroot:``: adbd's answers; the stand-in's user never changes."""
    if kind == "unroot":
        text = "adbd not running as root\n"
    elif rooted:
        text = "adbd is already running as root\n"
    else:
        text = "adbd cannot run as root in production builds\n"
    stream.write(text.encode())
    stream.close()


# --- sync ----------------------------------------------------------------------------------


class _Upload:
    """One SEND in progress: a file (or symlink) being written from DATA chunks."""

    def __init__(self, sandbox: Sandbox, spec: str) -> None:
        path, _, mode_text = spec.rpartition(",")
        if not path:
            path, mode_text = spec, "33188"  # No mode given: a regular 0644 file.
        self.mode = int(mode_text) if mode_text.isdigit() else 0o100644
        self.path = sandbox.host_path(path)
        self.error: str | None = None
        self._link_target = bytearray()
        self._file = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # adbd mkdirs as needed
            if self.path.is_dir() and not self.path.is_symlink():
                raise IsADirectoryError(21, "Is a directory")
            if self.path.is_symlink() or self.path.exists():
                self.path.unlink()
            if not stat.S_ISLNK(self.mode):
                self._file = open(self.path, "wb")  # noqa: SIM115 - closed in finish()
        except OSError as exc:
            self.error = f"couldn't create file: {exc.strerror}"

    def data(self, chunk: bytes) -> None:
        if self.error:
            return  # The client sends everything before it reads the reply: discard.
        try:
            if self._file is None:
                self._link_target += chunk
            else:
                self._file.write(chunk)
        except OSError as exc:
            self.error = f"write failed: {exc.strerror}"

    def finish(self, mtime: int) -> bytes:
        try:
            if self._file is not None:
                self._file.close()
            if self.error is None:
                if self._file is None:
                    # The client sends the link target with its C string terminator.
                    target = bytes(self._link_target).rstrip(b"\0")
                    os.symlink(os.fsdecode(target), self.path)
                else:
                    os.chmod(self.path, stat.S_IMODE(self.mode))
                    os.utime(self.path, (mtime, mtime))
        except OSError as exc:
            self.error = self.error or f"close failed: {exc.strerror}"
        if self.error is None:
            return sync_packet(b"OKAY", 0)
        self.abort()
        return sync_fail(self.error)

    def abort(self) -> None:
        """Drop a partial upload, as adbd deletes a file whose transfer failed."""
        if self._file is not None and not self._file.closed:
            self._file.close()
        if self._file is not None:
            try:
                self.path.unlink()
            except OSError:
                pass


def _stat_reply(path: Path) -> bytes:
    try:
        st = os.lstat(path)  # Legacy STAT is lstat: a symlink reports itself.
    except OSError:
        return sync_stat(0, 0, 0)
    return sync_stat(st.st_mode, st.st_size, int(st.st_mtime))


def _list_reply(path: Path) -> bytes:
    out = []
    try:
        names = [".", ".."] + sorted(os.listdir(path))  # readdir shows both; clients skip
    except OSError:
        names = []
    for name in names:
        try:
            st = os.lstat(path / name)
        except OSError:
            continue
        out.append(sync_dent(st.st_mode, st.st_size, int(st.st_mtime), name.encode()))
    out.append(sync_done_dent())
    return b"".join(out)


def _send_file(stream: StreamLike, path: Path) -> bool:
    """RECV: DATA chunks then DONE, or one FAIL. Batches chunks to fill WRTE payloads."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        return stream.write(sync_fail(f"open failed: {exc.strerror}"))
    with handle:
        pending = bytearray()
        while True:
            try:
                chunk = handle.read(SYNC_DATA_MAX)
            except OSError as exc:
                return stream.write(bytes(pending) + sync_fail(f"read failed: {exc.strerror}"))
            if not chunk:
                break
            pending += sync_packet(b"DATA", len(chunk), chunk)
            if len(pending) >= stream.max_payload:
                if not stream.write(bytes(pending)):
                    return False
                pending.clear()
    return stream.write(bytes(pending) + sync_packet(b"DONE", 0))


def serve_sync(stream: StreamLike, sandbox: Sandbox) -> None:
    """Answer legacy sync requests until QUIT, a protocol error or the host closing."""
    parser = SyncRequestParser()
    upload: _Upload | None = None
    try:
        while (data := stream.read()) is not None:
            for request in parser.feed(data):
                kind, body = request.kind, request.body
                if upload is not None:
                    if kind == b"DATA":
                        upload.data(body)
                        continue
                    if kind == b"DONE":
                        reply, upload = upload.finish(request.value), None
                        if not stream.write(reply):
                            return
                        continue
                    raise ProtocolError(f"{kind!r} inside a SEND")
                path = body.decode("utf-8", "surrogateescape")
                if kind == b"QUIT":
                    return
                if kind == b"STAT":
                    ok = stream.write(_stat_reply(sandbox.host_path(path)))
                elif kind == b"LIST":
                    ok = stream.write(_list_reply(sandbox.host_path(path)))
                elif kind == b"RECV":
                    ok = _send_file(stream, sandbox.host_path(path))
                elif kind == b"SEND":
                    upload, ok = _Upload(sandbox, path), True
                else:
                    raise ProtocolError(f"unexpected sync request {kind!r}")
                if not ok:
                    return
    except ProtocolError as exc:
        stream.write(sync_fail(str(exc)))
    finally:
        if upload is not None:
            upload.abort()
        stream.close()
