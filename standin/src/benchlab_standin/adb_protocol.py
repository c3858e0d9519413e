"""Wire formats of the ADB transport protocol and of the legacy file-sync protocol.

Sources (AOSP, ``packages/modules/adb``, formerly ``system/core/adb``):

* ``protocol.txt`` -- the 24-byte message header (six little-endian uint32: command, arg0,
  arg1, data_length, data_crc32, magic = command ^ 0xFFFFFFFF) and the CNXN / OPEN / OKAY
  (READY) / WRTE / CLSE / AUTH / STLS messages with their flow-control rule: after a WRTE the
  sender waits for the peer's OKAY before the next one.
* ``adb.h`` -- ``A_VERSION`` 0x01000001 (from this version on the receiver skips the payload
  checksum), ``MAX_PAYLOAD`` 256 KiB on the device side. The "crc32" field is in fact the plain
  sum of the payload bytes.
* ``SYNC.TXT`` and ``file_sync_protocol.h`` -- the ``sync:`` service: 8-byte requests (4-byte id
  + little-endian uint32), STAT / LIST / SEND / RECV / DATA / DONE / OKAY / FAIL / QUIT, DATA
  chunks of at most 64 KiB.

This module only encodes and decodes; :mod:`benchlab_standin.adbd` drives the state machines.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

__all__ = [
    "A_AUTH", "A_CLSE", "A_CNXN", "A_OKAY", "A_OPEN", "A_STLS", "A_SYNC", "A_VERSION",
    "A_WRTE", "HEADER_SIZE", "MAX_PAYLOAD", "Message", "ProtocolError", "SYNC_DATA_MAX",
    "SyncRequest", "SyncRequestParser", "checksum", "command_name", "read_message",
    "sync_dent", "sync_done_dent", "sync_fail", "sync_packet", "sync_stat",
]


def _cmd(name: str) -> int:
    # Command constants are the four ASCII letters read as a little-endian uint32.
    return struct.unpack("<I", name.encode("ascii"))[0]


A_SYNC = _cmd("SYNC")
A_CNXN = _cmd("CNXN")
A_AUTH = _cmd("AUTH")
A_OPEN = _cmd("OPEN")
A_OKAY = _cmd("OKAY")
A_CLSE = _cmd("CLSE")
A_WRTE = _cmd("WRTE")
A_STLS = _cmd("STLS")

#: Protocol version this stand-in speaks: the first one whose peers skip the checksum.
A_VERSION = 0x01000001
#: The largest payload this side accepts (what real adbd announces in its CNXN).
MAX_PAYLOAD = 256 * 1024
HEADER_SIZE = 24
#: Largest DATA chunk in the sync protocol.
SYNC_DATA_MAX = 64 * 1024
# Upper bound on payloads accepted from a peer: the host may announce up to 1 MiB before it
# learns our maxdata, so reject only absurd lengths (a corrupt stream), not large-but-valid ones.
_PAYLOAD_LIMIT = 16 * 1024 * 1024
_HEADER = struct.Struct("<6I")

_NAMES = {A_SYNC: "SYNC", A_CNXN: "CNXN", A_AUTH: "AUTH", A_OPEN: "OPEN", A_OKAY: "OKAY",
          A_CLSE: "CLSE", A_WRTE: "WRTE", A_STLS: "STLS"}


class ProtocolError(Exception):
    """A malformed header or sync request: the connection must be dropped."""


def checksum(payload: bytes) -> int:
    """The header's ``data_crc32`` field: the sum of the payload's bytes (not a CRC)."""
    return sum(payload) & 0xFFFFFFFF


def command_name(command: int) -> str:
    """``"CNXN"`` for ``A_CNXN``; hex for anything unknown (for logs)."""
    return _NAMES.get(command, f"0x{command:08x}")


@dataclass(frozen=True, slots=True)
class Message:
    """One transport message: ``COMMAND(arg0, arg1, payload)``."""

    command: int
    arg0: int
    arg1: int
    payload: bytes = b""

    def pack(self) -> bytes:
        """Header plus payload, ready for the socket (checksum filled in for old peers)."""
        header = _HEADER.pack(self.command, self.arg0 & 0xFFFFFFFF, self.arg1 & 0xFFFFFFFF,
                              len(self.payload), checksum(self.payload),
                              self.command ^ 0xFFFFFFFF)
        return header + self.payload

    def __str__(self) -> str:
        shown = self.payload[:40]
        more = "..." if len(self.payload) > 40 else ""
        return f"{command_name(self.command)}({self.arg0}, {self.arg1}, {shown!r}{more})"


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    """``size`` bytes, or None on a clean EOF before the first byte."""
    chunks = []
    got = 0
    while got < size:
        chunk = sock.recv(size - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError(f"connection closed {got} bytes into a {size}-byte read")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(sock: socket.socket) -> Message | None:
    """Read one message; None when the peer closed the connection between messages.

    The checksum is not verified: peers at version 0x01000001 send zero there.
    """
    header = _recv_exact(sock, HEADER_SIZE)
    if header is None:
        return None
    command, arg0, arg1, length, _crc, magic = _HEADER.unpack(header)
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic 0x{magic:08x} for command 0x{command:08x}")
    if length > _PAYLOAD_LIMIT:
        raise ProtocolError(f"payload length {length} is not plausible")
    payload = b""
    if length:
        payload = _recv_exact(sock, length) or b""
        if len(payload) != length:
            raise ProtocolError("connection closed inside a payload")
    return Message(command, arg0, arg1, payload)


# --- sync protocol -------------------------------------------------------------------------

_SYNC_HEADER = struct.Struct("<4sI")
# Requests whose uint32 is the length of a body that follows (a path, or DATA bytes).
_WITH_BODY = {b"STAT", b"LIST", b"SEND", b"RECV", b"DATA"}
# Requests whose uint32 is a value with no body (DONE carries the mtime; QUIT a zero).
_NO_BODY = {b"DONE", b"QUIT"}
# Paths are capped at 1024 bytes by adbd; DATA at 64 KiB.
_MAX_PATH = 1024


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """One sync request: ``kind`` (``b"STAT"``...), the uint32 ``value`` and any body."""

    kind: bytes
    value: int
    body: bytes = b""


class SyncRequestParser:
    """Cuts the host's sync byte stream into requests.

    WRTE boundaries are meaningless to the sync protocol: one request may be split across
    several WRTEs, and one WRTE may carry several requests (``adb push`` sends SEND, the first
    DATA and sometimes DONE together), so bytes are buffered until a request is complete.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[SyncRequest]:
        """Add bytes; return every request now complete, in order."""
        self._buffer += data
        requests = []
        while len(self._buffer) >= _SYNC_HEADER.size:
            kind, value = _SYNC_HEADER.unpack_from(self._buffer)
            if kind in _NO_BODY:
                requests.append(SyncRequest(kind, value))
                del self._buffer[:_SYNC_HEADER.size]
                continue
            if kind not in _WITH_BODY:
                raise ProtocolError(f"unknown sync request {kind!r}")
            limit = SYNC_DATA_MAX if kind == b"DATA" else _MAX_PATH
            if value > limit:
                raise ProtocolError(f"sync {kind.decode()} length {value} exceeds {limit}")
            end = _SYNC_HEADER.size + value
            if len(self._buffer) < end:
                break
            requests.append(SyncRequest(kind, value, bytes(self._buffer[_SYNC_HEADER.size:end])))
            del self._buffer[:end]
        return requests


def sync_packet(kind: bytes, value: int, body: bytes = b"") -> bytes:
    """An 8-byte sync header (id + uint32) followed by ``body``."""
    return _SYNC_HEADER.pack(kind, value & 0xFFFFFFFF) + body


def sync_fail(message: str) -> bytes:
    """``FAIL`` with a length-prefixed UTF-8 reason."""
    text = message.encode("utf-8", "replace")
    return sync_packet(b"FAIL", len(text), text)


def sync_stat(mode: int, size: int, mtime: int) -> bytes:
    """The legacy STAT reply: id, mode, size, mtime (uint32 each; all zero = no such file)."""
    return struct.pack("<4sIII", b"STAT", mode & 0xFFFFFFFF, size & 0xFFFFFFFF,
                       mtime & 0xFFFFFFFF)


def sync_dent(mode: int, size: int, mtime: int, name: bytes) -> bytes:
    """One LIST entry: ``DENT``, mode, size, mtime, name length, name."""
    return struct.pack("<4sIIII", b"DENT", mode & 0xFFFFFFFF, size & 0xFFFFFFFF,
                       mtime & 0xFFFFFFFF, len(name)) + name


def sync_done_dent() -> bytes:
    """The end of a LIST: a DENT-sized record with id ``DONE`` and zeros (20 bytes)."""
    return struct.pack("<4sIIII", b"DONE", 0, 0, 0, 0)
