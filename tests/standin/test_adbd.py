"""The stand-in adbd: wire protocol spoken directly, then end to end through the real adb.

The first half plays the adb server by hand (``RawHost``) to pin down what the stand-in puts
on the wire: the CNXN banner, checksums, flow control, maxdata, refusals, sync framing. The
second half (``slow``) drives it with the real ``adb`` client and server.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from bounded import alive

from benchlab_standin import StandinPhone
from benchlab_standin.adb_protocol import (
    A_CLSE, A_CNXN, A_OKAY, A_OPEN, A_VERSION, A_WRTE, MAX_PAYLOAD, Message, ProtocolError,
    checksum, read_message, sync_packet,
)

from .conftest import ConnectedPhone


def wait_until(predicate: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(0.05)




class RawHost:
    """A minimal ADB host speaking the transport protocol to the stand-in directly."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self._ids = itertools.count(100)

    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        self.sock.sendall(Message(command, arg0, arg1, payload).pack())

    def recv(self, timeout: float = 20.0) -> Message:
        self.sock.settimeout(timeout)
        message = read_message(self.sock)
        assert message is not None, "connection closed"
        return message

    def connect(self, maxdata: int = 1024 * 1024) -> Message:
        self.send(A_CNXN, A_VERSION, maxdata, b"host::features=shell_v2,cmd\0")
        return self.recv()

    def open(self, service: str) -> tuple[int, int]:
        local = next(self._ids)
        self.send(A_OPEN, local, 0, service.encode() + b"\0")
        reply = self.recv()
        assert (reply.command, reply.arg1) == (A_OKAY, local), str(reply)
        return local, reply.arg0

    def collect(self, local: int, remote: int) -> bytes:
        """Acknowledge WRTEs of one stream until its CLSE; the bytes received."""
        data = bytearray()
        while True:
            msg = self.recv()
            assert msg.arg1 == local, str(msg)
            if msg.command == A_CLSE:
                return bytes(data)
            assert msg.command == A_WRTE, str(msg)
            data += msg.payload
            self.send(A_OKAY, local, remote)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def host(standin_phone: StandinPhone):
    raw = RawHost(standin_phone.port)
    yield raw
    raw.close()


# --- wire protocol, no adb needed ----------------------------------------------------------


def test_message_header_layout() -> None:
    packed = Message(A_WRTE, 1, 2, b"abc").pack()
    assert packed[:24] == struct.pack("<6I", A_WRTE, 1, 2, 3, 97 + 98 + 99, A_WRTE ^ 0xFFFFFFFF)
    assert packed[24:] == b"abc"
    a, b = socket.socketpair()
    with a, b:
        a.sendall(packed[:4] + b"\0" * 20)  # magic does not match the command
        with pytest.raises(ProtocolError):
            read_message(b)


def test_handshake_announces_profile_and_legacy_features(host: RawHost) -> None:
    host.send(A_OPEN, 1, 0, b"shell:echo early\0")  # before CNXN: must be ignored
    reply = host.connect()
    assert (reply.command, reply.arg0, reply.arg1) == (A_CNXN, A_VERSION, MAX_PAYLOAD)
    banner = reply.payload.decode()
    assert banner.startswith("device::ro.product.name=standin;ro.product.model=Standin Phone;")
    features = banner.split("features=")[1].split(",")
    for modern in ("shell_v2", "stat_v2", "ls_v2", "sendrecv_v2", "delayed_ack", "abb"):
        assert modern not in features
    # Checksum is sent correctly even though a 0x01000001 peer ignores it.
    host.send(A_CNXN, A_VERSION, 4096, b"host::\0")
    host.sock.settimeout(20)
    header = host.sock.recv(24, socket.MSG_WAITALL)
    length, crc = struct.unpack("<6I", header)[3:5]
    assert crc == checksum(host.sock.recv(length, socket.MSG_WAITALL))


def test_unknown_service_is_refused_and_empty_shell_closes(host: RawHost) -> None:
    host.connect()
    host.send(A_OPEN, 7, 0, b"jdwp:1234\0")
    reply = host.recv()
    assert (reply.command, reply.arg0, reply.arg1) == (A_CLSE, 0, 7)
    local, remote = host.open("shell:")  # accepted, then closed: no interactive shell
    assert host.collect(local, remote) == b""


def test_shell_respects_maxdata_and_waits_for_okay(host: RawHost) -> None:
    host.connect(maxdata=4096)
    local, remote = host.open("shell:head -c 20000 /dev/zero")
    first = host.recv()
    assert first.command == A_WRTE and 0 < len(first.payload) <= 4096
    with pytest.raises(TimeoutError):  # no second WRTE before our OKAY
        host.recv(timeout=0.5)
    host.send(A_OKAY, local, remote)
    rest = host.collect(local, remote)
    assert len(first.payload) + len(rest) == 20000


def test_streams_are_multiplexed(host: RawHost, standin_phone: StandinPhone) -> None:
    host.connect()
    flag = standin_phone.root / "data/local/tmp/go"
    slow = host.open("shell:while [ ! -e /data/local/tmp/go ]; do sleep 0.05; done; echo one")
    fast = host.open("shell:touch /data/local/tmp/go; echo two")
    got: dict[int, bytes] = {slow[0]: b"", fast[0]: b""}
    remotes = dict([slow, fast])
    open_streams = set(got)
    while open_streams:
        msg = host.recv()
        if msg.command == A_WRTE:
            got[msg.arg1] += msg.payload
            host.send(A_OKAY, msg.arg1, remotes[msg.arg1])
        elif msg.command == A_CLSE:
            open_streams.discard(msg.arg1)
    assert flag.exists()
    assert got == {slow[0]: b"one\n", fast[0]: b"two\n"}


def test_host_close_kills_the_process_group(host: RawHost, standin_phone: StandinPhone) -> None:
    host.connect()
    pidfile = standin_phone.root / "data/local/tmp/sleep.pid"
    local, remote = host.open("shell:sleep 30 & echo $! > /data/local/tmp/sleep.pid; wait")
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), what="pid file")
    pid = int(pidfile.read_text())
    assert alive(pid)
    host.send(A_CLSE, local, remote)
    wait_until(lambda: not alive(pid), what=f"pid {pid} to die")
    wait_until(lambda: standin_phone.sim.jobs == 0, what="no running jobs")


def test_sync_requests_split_and_coalesced(host: RawHost, standin_phone: StandinPhone) -> None:
    host.connect()
    local, remote = host.open("sync:")
    payload = os.urandom(150_000)
    spec = b"/sdcard/Download/x.bin,33188"
    stream = sync_packet(b"SEND", len(spec), spec)
    for offset in range(0, len(payload), 65536):
        chunk = payload[offset:offset + 65536]
        stream += sync_packet(b"DATA", len(chunk), chunk)
    stream += sync_packet(b"DONE", 1_700_000_000)
    path = b"/sdcard/Download/x.bin"
    stream += sync_packet(b"STAT", len(path), path) + sync_packet(b"RECV", len(path), path)
    replies = bytearray()

    def receive() -> int:
        """Take one message: collect (and acknowledge) WRTE data; return the command."""
        msg = host.recv()
        assert msg.arg1 == local and msg.command in (A_OKAY, A_WRTE), str(msg)
        if msg.command == A_WRTE:
            replies.extend(msg.payload)
            host.send(A_OKAY, local, remote)
        return msg.command

    # Odd-sized WRTEs: requests straddle them, and the last one carries several. Each WRTE
    # waits for the device's OKAY; replies to earlier requests may arrive in between.
    for offset in range(0, len(stream), 9999):
        host.send(A_WRTE, local, remote, stream[offset:offset + 9999])
        while receive() != A_OKAY:
            pass
    expected = 8 + 16 + len(payload) + 8 * 3 + 8  # OKAY, STAT, DATA x3, DONE
    while len(replies) < expected:
        receive()
    assert replies[:8] == sync_packet(b"OKAY", 0)
    mode, size, mtime = struct.unpack("<III", replies[12:24])
    assert replies[8:12] == b"STAT" and size == len(payload) and mtime == 1_700_000_000
    assert mode & 0o777 == 0o644
    received, rest = bytearray(), bytes(replies[24:])
    while rest[:4] == b"DATA":
        (n,) = struct.unpack("<I", rest[4:8])
        received += rest[8:8 + n]
        rest = rest[8 + n:]
    assert bytes(received) == payload and rest == sync_packet(b"DONE", 0)
    assert (standin_phone.root / "sdcard/Download/x.bin").read_bytes() == payload
    host.send(A_WRTE, local, remote, sync_packet(b"QUIT", 0))
    assert host.recv().command == A_OKAY
    assert host.recv().command == A_CLSE


def test_sync_stat_missing_and_recv_failure(host: RawHost) -> None:
    host.connect()
    local, remote = host.open("sync:")
    path = b"/data/nothing/here"
    host.send(A_WRTE, local, remote, sync_packet(b"STAT", len(path), path))
    assert host.recv().command == A_OKAY
    reply = host.recv()
    assert reply.payload == b"STAT" + b"\0" * 12
    host.send(A_OKAY, local, remote)
    host.send(A_WRTE, local, remote, sync_packet(b"RECV", len(path), path))
    assert host.recv().command == A_OKAY
    reply = host.recv()
    assert reply.payload.startswith(b"FAIL") and b"No such file" in reply.payload


# --- end to end through the real adb client and server -------------------------------------


@pytest.mark.slow
def test_devices_getprop_and_shell_output(connected_phone: ConnectedPhone) -> None:
    adb, serial = connected_phone.adb, connected_phone.serial
    listing = adb.run("devices", "-l", check=True).stdout
    line = next(row for row in listing.splitlines() if row.startswith(serial))
    assert line.split()[1] == "device"
    assert "product:standin model:Standin_Phone device:standin" in line
    assert connected_phone.shell("getprop ro.product.model") == "Standin Phone\n"
    done = adb.run("-s", serial, "shell", "echo hi; echo err >&2; exit 3")
    # Legacy shell: one stream for stdout and stderr, and no exit status.
    assert (done.stdout, done.returncode) == ("hi\nerr\n", 0)


@pytest.mark.slow
def test_push_pull_roundtrip(connected_phone: ConnectedPhone, tmp_path: Path) -> None:
    adb, serial = connected_phone.adb, connected_phone.serial
    blob = os.urandom(1024 * 1024 + 123)
    (tmp_path / "blob.bin").write_bytes(blob)
    adb.run("-s", serial, "push", str(tmp_path / "blob.bin"), "/data/local/tmp/blob.bin",
            check=True)
    sandboxed = connected_phone.phone.root / "data/local/tmp/blob.bin"
    assert sandboxed.read_bytes() == blob
    assert connected_phone.shell("wc -c < /data/local/tmp/blob.bin").strip() == str(len(blob))
    adb.run("-s", serial, "pull", "/data/local/tmp/blob.bin", str(tmp_path / "back.bin"),
            check=True)
    assert (tmp_path / "back.bin").read_bytes() == blob


@pytest.mark.slow
def test_sysfs_battery_and_logcat(connected_phone: ConnectedPhone) -> None:
    shell = connected_phone.shell
    assert shell("cat /sys/devices/system/cpu/cpu7/cpufreq/cpuinfo_max_freq") == "2850000\n"
    battery = shell("dumpsys battery")
    assert battery.startswith("Current Battery Service state:\n  AC powered: false\n")
    for line in ("USB powered: true", "status: 2", "level: 80", "technology: Li-ion"):
        assert f"  {line}\n" in battery
    shell("log -t StandinTest 'hello from the stand-in'")
    dumped = shell("logcat -d")
    assert any("StandinTest" in row and row.endswith("hello from the stand-in")
               for row in dumped.splitlines())


@pytest.mark.slow
def test_killing_the_client_kills_the_command(connected_phone: ConnectedPhone) -> None:
    root = connected_phone.phone.root
    client = connected_phone.adb.popen(
        "-s", connected_phone.serial, "shell",
        "echo $$ > /data/local/tmp/sh.pid; sleep 30 & echo $! > /data/local/tmp/sleep.pid; wait",
        stdout=subprocess.DEVNULL)
    pidfiles = [root / "data/local/tmp/sh.pid", root / "data/local/tmp/sleep.pid"]
    wait_until(lambda: all(p.exists() and p.read_text().strip() for p in pidfiles),
               what="pid files")
    pids = [int(p.read_text()) for p in pidfiles]
    assert all(alive(pid) for pid in pids)
    client.kill()
    client.wait(timeout=20)
    wait_until(lambda: not any(alive(pid) for pid in pids), what=f"{pids} to die")


@pytest.mark.slow
def test_temperature_rises_under_load(connected_phone: ConnectedPhone) -> None:
    zone = "/sys/class/thermal/thermal_zone1/temp"  # cpu-1-0-usr, share 1.0
    start = int(connected_phone.shell(f"cat {zone}"))
    busy = connected_phone.adb.popen(
        "-s", connected_phone.serial, "shell",
        "while [ ! -e /data/local/tmp/stop ]; do :; done", stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: int(connected_phone.shell(f"cat {zone}")) >= start + 2000,
                   timeout=60, what="zone 1 to warm by 2 C")
        # schedutil runs at the top while busy (not yet hot enough to be capped).
        cur = connected_phone.shell("cat /sys/devices/system/cpu/cpu7/cpufreq/scaling_cur_freq")
        assert int(cur) == 2_850_000
    finally:
        connected_phone.shell("touch /data/local/tmp/stop")
        busy.wait(timeout=30)


@pytest.mark.slow
def test_reboot_then_wait_for_device(connected_phone: ConnectedPhone) -> None:
    adb, serial, phone = connected_phone.adb, connected_phone.serial, connected_phone.phone
    connected_phone.shell("echo kept > /data/local/tmp/survivor")
    adb.run("-s", serial, "reboot", check=True)
    wait_until(lambda: phone.boot_count == 2, what="the stand-in to boot again")
    # The 29.x adb server reconnects dropped TCP devices by itself (first retry after ~10 s).
    adb.run("-s", serial, "wait-for-device", timeout=120, check=True)
    assert connected_phone.shell("getprop sys.boot_completed") == "1\n"
    assert connected_phone.shell("cat /data/local/tmp/survivor") == "kept\n"
