"""``StandinPhone``: an ``adbd`` stand-in that the real ``adb`` server connects to over TCP.

Run ``adb connect 127.0.0.1:PORT`` and the adb server treats it as a network-attached phone:
``adb devices -l``, ``adb shell``, ``adb push``/``pull``, ``adb reboot``, ``wait-for-device``
all go through the real client and server and the real wire protocol.

Protocol sources (AOSP ``packages/modules/adb``): ``protocol.txt`` (transport messages, the
CNXN handshake, streams, flow control), ``adb.h`` (``A_VERSION``, ``MAX_PAYLOAD``),
``SERVICES.TXT`` (service names), ``SYNC.TXT`` (file transfer); see
:mod:`benchlab_standin.adb_protocol` and :mod:`benchlab_standin.services`.

What it proves: that benchlab's adb plumbing (argument quoting, output parsing, file
transfer, timeouts and kills, reconnecting after a reboot) works against the real adb client
and server, and that sensor-reading code parses Android-formatted files and tool output.

What it cannot prove: anything about Android itself. Commands run on *this* machine (x86,
this kernel, these tools, this user; ``uname -m`` is not ``aarch64``), only the device path
prefixes listed in :mod:`benchlab_standin.services` are rewritten into the sandbox -- and
textually, so a path built at run time (``cd /; cd data``) escapes the mapping (except, on
an ARM profile run as root, ``/proc/cpuinfo`` and the CPU sysfs: :mod:`benchlab_standin.cpuview`
mounts those per command). There is no
SELinux, no app sandbox, no ``pm``/``am``, no USB, no authentication (it announces itself as
already authorized), and by default only the legacy shell and sync protocols: no exit status
from ``adb shell``, no separate stderr. A profile whose ``features`` add ``shell_v2`` also
serves the shell protocol (``shell,v2``: stderr apart and the exit status), as modern phones
do; sync stays legacy. The sensor values come from the crude model in
:mod:`benchlab_standin.simulation`. Read-only cpufreq files on an unrooted profile are
enforced with file modes, which root ignores: when the tests run as root, writes succeed;
what differs reliably is that ``su`` exists only on a rooted profile.
"""

from __future__ import annotations

import errno
import itertools
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from benchlab_standin.adb_protocol import (
    A_AUTH, A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_STLS, A_VERSION, A_WRTE, MAX_PAYLOAD, Message,
    ProtocolError, command_name, read_message,
)
from benchlab_standin.cpuview import cannot_mount_views
from benchlab_standin.emulation import enable_aarch64
from benchlab_standin.profile import DeviceProfile, default_profile
from benchlab_standin.services import (
    Sandbox, serve_root, serve_shell, serve_shell_v2, serve_sync,
)
from benchlab_standin.simulation import PhoneSimulation

__all__ = ["StandinPhone", "Stream"]

_log = logging.getLogger("benchlab_standin")


class Stream:
    """One ADB stream: our ``local_id`` paired with the host's ``remote_id``.

    ``write`` sends WRTE packets no larger than the peer's maxdata and waits for the host's
    OKAY after each (the flow control of protocol.txt). ``read`` returns the host's next WRTE
    payload and acknowledges it with OKAY only then, so a slow consumer slows the host down.
    """

    def __init__(self, conn: _Connection, local_id: int, remote_id: int, service: str) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self._cond = threading.Condition()
        self._ready = True  # The host's OPEN counts as its first READY.
        self._closed = False
        self._inbox: deque[bytes] = deque()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def max_payload(self) -> int:
        """Largest WRTE payload the host accepts."""
        return self.conn.max_payload

    @property
    def closed(self) -> bool:
        """True once either side closed the stream."""
        return self._closed

    def write(self, data: bytes) -> bool:
        """Send ``data`` to the host; False if the stream closed first."""
        size = self.max_payload
        for offset in range(0, len(data), size):
            with self._cond:
                while not self._ready and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return False
                self._ready = False
            chunk = data[offset:offset + size]
            if not self.conn.send(Message(A_WRTE, self.local_id, self.remote_id, chunk)):
                return False
        return True

    def read(self) -> bytes | None:
        """The host's next data, or None once the stream is closed and drained."""
        with self._cond:
            while not self._inbox and not self._closed:
                self._cond.wait()
            if not self._inbox:
                return None
            data = self._inbox.popleft()
            closed = self._closed
        if not closed:
            self.conn.send(Message(A_OKAY, self.local_id, self.remote_id))
        return data

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the stream closes (at once if it already has)."""
        with self._cond:
            if not self._closed:
                self._callbacks.append(callback)
                return
        callback()

    def close(self) -> None:
        """Close from the device side: send CLSE (once) and release the stream."""
        if self._mark_closed():
            self.conn.send(Message(A_CLSE, self.local_id, self.remote_id))

    # Called from the connection's reader thread:

    def _okay(self) -> None:
        with self._cond:
            self._ready = True
            self._cond.notify_all()

    def _deliver(self, data: bytes) -> None:
        with self._cond:
            self._inbox.append(data)
            self._cond.notify_all()

    def _mark_closed(self) -> bool:
        """Mark closed; True if this call did it. Runs the close callbacks."""
        with self._cond:
            if self._closed:
                return False
            self._closed = True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        self.conn.forget(self.local_id)
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - one failing hook must not block the others
                _log.exception("close callback of %s failed", self.service)
        return True


class _Connection:
    """One TCP connection from an adb server: handshake, stream table, message dispatch."""

    def __init__(self, phone: StandinPhone, sock: socket.socket) -> None:
        self.phone = phone
        self.sock = sock
        self.max_payload = MAX_PAYLOAD
        self.version = A_VERSION
        self.online = False
        self._send_lock = threading.Lock()
        self._streams: dict[int, Stream] = {}
        self._streams_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._down = threading.Event()

    def send(self, message: Message) -> bool:
        """Send one message (thread-safe); False if the connection is down."""
        if self._down.is_set():
            return False
        data = message.pack()
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError:
            self.shutdown()
            return False
        return True

    def forget(self, local_id: int) -> None:
        """Drop a closed stream from the table."""
        with self._streams_lock:
            self._streams.pop(local_id, None)

    def shutdown(self) -> None:
        """Drop the connection: every stream closes (their commands are killed)."""
        if self._down.is_set():
            return
        self._down.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        with self._streams_lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream._mark_closed()
        self.phone._connection_ended(self)

    def serve(self) -> None:
        """Read and dispatch messages until the host disconnects or breaks the protocol."""
        try:
            while (message := read_message(self.sock)) is not None:
                self._handle(message)
        except (OSError, ProtocolError) as exc:
            if not self._down.is_set():
                _log.info("connection dropped: %s", exc)
        finally:
            self.shutdown()

    def _handle(self, msg: Message) -> None:
        command = msg.command
        if command == A_CNXN:
            self.version = min(msg.arg0, A_VERSION)
            self.max_payload = min(msg.arg1, MAX_PAYLOAD) or MAX_PAYLOAD
            self.phone.host_banners.append(msg.payload.rstrip(b"\0").decode("utf-8", "replace"))
            self.online = True
            _log.debug("CNXN from host: version 0x%08x, maxdata %d", msg.arg0, msg.arg1)
            self.send(Message(A_CNXN, A_VERSION, MAX_PAYLOAD, self.phone.profile.banner()))
        elif command == A_STLS:
            raise ProtocolError("host asked for TLS, which this stand-in does not speak")
        elif command == A_AUTH:
            # The host only signs tokens a device sent; this device never asks. Ignore.
            _log.info("ignoring AUTH(%d) from the host: no authentication here", msg.arg0)
        elif not self.online:
            pass  # protocol.txt: messages before CNXN are ignored.
        elif command == A_OPEN:
            self._open(msg.arg0, msg.payload.split(b"\0", 1)[0].decode("utf-8", "replace"))
        elif command in (A_OKAY, A_WRTE, A_CLSE):
            with self._streams_lock:
                stream = self._streams.get(msg.arg1)
            if stream is None:
                return  # protocol.txt: messages for unknown streams are ignored.
            if command == A_OKAY:
                stream._okay()
            elif command == A_WRTE:
                stream._deliver(msg.payload)
            else:
                stream._mark_closed()  # protocol.txt: do not answer a CLOSE.
        else:
            raise ProtocolError(f"unexpected command {command_name(command)}")

    def _open(self, remote_id: int, service: str) -> None:
        self.phone.opened_services.append(service)
        _log.debug("OPEN %r", service)
        handler = self.phone._handler_for(service)
        if handler is None or remote_id == 0:
            self.send(Message(A_CLSE, 0, remote_id))  # Refused, as adbd refuses.
            return
        local_id = next(self._ids)
        stream = Stream(self, local_id, remote_id, service)
        with self._streams_lock:
            self._streams[local_id] = stream
        self.send(Message(A_OKAY, local_id, remote_id))
        threading.Thread(target=_run_service, args=(handler, stream), daemon=True,
                         name=f"standin-{service.split(':', 1)[0]}-{local_id}").start()


def _run_service(handler: Callable[[Stream], None], stream: Stream) -> None:
    # A crashing service must still close its stream, or the host waits on it forever.
    try:
        handler(stream)
    except Exception:  # noqa: BLE001 - logged; the host sees the stream close
        _log.exception("service %r failed", stream.service)
    finally:
        stream.close()


class StandinPhone:
    """A stand-in Android phone on ``127.0.0.1:port`` speaking ADB, backed by a sandbox.

    ``root`` is the sandbox directory (created if missing); ``port=0`` picks a free port.
    ``opened_services`` records every service the host opened, ``host_banners`` every CNXN
    identity the host sent (useful to see what the adb server does).
    """

    def __init__(self, root: Path, port: int = 0, profile: DeviceProfile | None = None,
                 host: str = "127.0.0.1") -> None:
        self.root = Path(root).absolute()
        self.root.mkdir(parents=True, exist_ok=True)
        self.profile = profile or default_profile()
        self.sandbox = Sandbox(self.root, self.profile.emulated_cpu)
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self.opened_services: list[str] = []
        self.host_banners: list[str] = []
        self.boot_count = 0
        self.sim: PhoneSimulation | None = None
        self._listener: socket.socket | None = None
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def port(self) -> int:
        """The TCP port (known after :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("StandinPhone is not started")
        return self._port

    @property
    def serial(self) -> str:
        """What ``adb devices`` lists it as: ``127.0.0.1:PORT``."""
        return f"{self.host}:{self.port}"

    @property
    def connection_count(self) -> int:
        """TCP connections from adb servers open now."""
        with self._lock:
            return len(self._connections)

    def start(self) -> StandinPhone:
        """Boot the sandbox, start the simulation and listen. An ARM profile first makes sure
        aarch64 programs run here (:func:`benchlab_standin.emulation.enable_aarch64`) and
        raises ``RuntimeError`` saying why when they cannot."""
        if self.profile.emulated_cpu:
            why = enable_aarch64()
            if why is not None:
                raise RuntimeError(f"the ARM stand-in cannot run aarch64 programs here: {why}")
        self._stopped.clear()
        self.profile.materialize(self.root)
        if self.profile.emulated_cpu:
            self._mount_cpu_view()
        self.sim = PhoneSimulation(self.root, self.profile)
        self.sim.start()
        self._listen(self._requested_port)
        self._port = self._listener.getsockname()[1]  # type: ignore[union-attr]
        self.boot_count = 1
        self._spawn(self._accept_loop, "standin-accept")
        return self

    def _mount_cpu_view(self) -> None:
        """Give every command the phone's ``/proc/cpuinfo`` and CPU sysfs (paths that stay
        the same across reboots), or say once, in the log and the phone's logcat, why its
        programs read the host's."""
        view = (self.root / "proc/cpuinfo", self.root / "sys/devices/system/cpu")
        why = None if self.sandbox.cpu_view else cannot_mount_views(*view)
        if why is None:
            self.sandbox.cpu_view = view
            return
        said = (f"aarch64 programs read the host's /proc/cpuinfo and /sys/devices/system/cpu "
                f"(only command text is mapped): {why}")
        _log.warning("%s: %s", self.profile.product_name, said)
        with open(self.root / "data/logcat.txt", "a") as buffer:
            buffer.write(f"{time.strftime('%m-%d %H:%M:%S')}.000     0     0 W standin : "
                         f"{said}\n")

    def stop(self) -> None:
        """Stop listening, drop connections (killing their commands), stop the simulation."""
        self._stopped.set()
        self._go_offline()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()
        if self.sim is not None:
            self.sim.stop()

    def __enter__(self) -> StandinPhone:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def set_temperature(self, celsius: float, zone: int | str | None = None) -> None:
        """Set every thermal zone (or one, by index or type) to ``celsius``."""
        self._require_sim().set_temperature(celsius, zone)

    def set_charging(self, charging: bool) -> None:
        """Plug or unplug the simulated USB charger."""
        self._require_sim().set_charging(charging)

    def temperatures(self) -> dict[str, float]:
        """Current simulated temperature per thermal zone type (degrees C)."""
        return self._require_sim().temperatures()

    def reboot(self, wait: bool = False) -> None:
        """Reboot: drop connections, stay unreachable ``profile.reboot_seconds``, boot again."""
        thread = self._spawn(self._reboot, "standin-reboot")
        if wait:
            thread.join()

    # --- internals ----------------------------------------------------------------------

    def _require_sim(self) -> PhoneSimulation:
        if self.sim is None:
            raise RuntimeError("StandinPhone is not started")
        return self.sim

    def _spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def _listen(self, port: int) -> None:
        deadline = time.monotonic() + 10
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, port))
            except OSError as exc:
                sock.close()
                # After a reboot the port may be briefly held; retry, a phone comes back
                # on the same address.
                if exc.errno != errno.EADDRINUSE or port == 0 or time.monotonic() > deadline:
                    raise
                self._stopped.wait(0.1)
                continue
            sock.listen(16)
            sock.settimeout(0.2)  # accept() wakes up to notice stop() and reboots
            self._listener = sock
            return

    def _go_offline(self) -> None:
        """Close the port and drop every connection (their commands are killed)."""
        with self._lock:  # Atomic with the accept loop: no connection slips in meanwhile.
            listener, self._listener = self._listener, None
            connections = list(self._connections)
        if listener is not None:
            listener.close()
        for conn in connections:
            conn.shutdown()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            listener = self._listener
            if listener is None:
                self._stopped.wait(0.05)  # Rebooting: the port is closed meanwhile.
                continue
            try:
                sock, _addr = listener.accept()
            except (TimeoutError, OSError):
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, sock)
            with self._lock:
                if self._listener is not listener:  # Went offline while accepting.
                    sock.close()
                    continue
                self._connections.add(conn)
            threading.Thread(target=conn.serve, name="standin-conn", daemon=True).start()

    def _connection_ended(self, conn: _Connection) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _handler_for(self, service: str) -> Callable[[Stream], None] | None:
        name, _, arg = service.partition(":")
        kind, *options = name.split(",")
        if kind in ("shell", "exec") and "v2" not in options:
            busy = self._require_sim().busy
            return lambda stream: serve_shell(stream, arg, self.sandbox, busy)
        if kind == "shell" and "shell_v2" in self.profile.features:
            busy = self._require_sim().busy
            return lambda stream: serve_shell_v2(stream, arg, self.sandbox, busy)
        if kind == "sync":
            return lambda stream: serve_sync(stream, self.sandbox)
        if kind in ("root", "unroot"):
            return lambda stream: serve_root(stream, kind, self.profile.rooted)
        if kind == "reboot":
            # Like adbd: the OPEN is answered; the reply to the host is the link going away.
            return lambda stream: self.reboot()
        return None

    def _reboot(self) -> None:
        self._go_offline()
        if self._stopped.wait(self.profile.reboot_seconds):
            return
        sim = self._require_sim()
        with sim.lock:  # The simulation must not write into a tree being rewritten.
            self.profile.materialize(self.root)
            sim.reset()
        self.boot_count += 1
        if not self._stopped.is_set():
            self._listen(self.port)
            _log.info("stand-in rebooted (boot %d), listening again on %s", self.boot_count,
                      self.serial)
