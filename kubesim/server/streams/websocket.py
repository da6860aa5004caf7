"""WebSocket (RFC 6455), server side: the opening handshake, frames, and a message connection over a
Transport that answers pings and closes cleanly.

Only what the Kubernetes clients use: no extensions (a frame with RSV bits set is a protocol error), text
and binary messages both carry bytes (the Python client sends text frames on exec), client frames must be
masked and server frames are not.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kubesim.server.streams.transport import StreamClosed, Transport

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_DATA_OPCODES = (CONTINUATION, TEXT, BINARY)
_CONTROL_OPCODES = (CLOSE, PING, PONG)

NORMAL_CLOSURE, PROTOCOL_ERROR, MESSAGE_TOO_BIG, GOING_AWAY = 1000, 1002, 1009, 1001


class ProtocolError(ValueError):
    """The client broke RFC 6455; `code` is the close code to answer with."""

    def __init__(self, message: str, code: int = PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.code = code


def is_upgrade(headers: Mapping[str, str]) -> bool:
    """`Upgrade: websocket` with `upgrade` among the `Connection` tokens (what upstream's wsstream checks)."""
    connection = {token.strip().lower() for token in headers.get("connection", "").split(",")}
    return headers.get("upgrade", "").strip().lower() == "websocket" and "upgrade" in connection


def offered_protocols(headers: Mapping[str, str]) -> list[str]:
    """The subprotocols the client offers, in its order of preference."""
    return [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",") if p.strip()]


def handshake_error(method: str, headers: Mapping[str, str]) -> str | None:
    """Why the opening handshake cannot be answered with 101 (None when it can)."""
    if method != "GET":
        return f"a WebSocket handshake is a GET request, not {method}"
    if headers.get("sec-websocket-version", "").strip() != "13":
        return "Sec-WebSocket-Version: only version 13 is supported"
    try:
        key = base64.b64decode(headers.get("sec-websocket-key", ""), validate=True)
    except ValueError:
        key = b""
    if len(key) != 16:
        return "Sec-WebSocket-Key: must be 16 bytes in base64"
    return None


def accept_key(key: str) -> str:
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2)."""
    return base64.b64encode(hashlib.sha1((key.strip() + _GUID).encode()).digest()).decode()  # noqa: S324


def handshake_headers(key: str, protocol: str) -> list[tuple[str, str]]:
    """The headers of the 101 answer; `protocol` empty when the client offered none we speak."""
    headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept_key(key))]
    if protocol:
        headers.append(("Sec-WebSocket-Protocol", protocol))
    return headers


def encode_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """One unmasked server frame."""
    first = (0x80 if fin else 0) | opcode
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", first, size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", first, 126, size)
    else:
        header = struct.pack("!BBQ", first, 127, size)
    return header + payload


def close_payload(code: int, reason: str = "") -> bytes:
    return struct.pack("!H", code) + reason.encode()[:123]


@dataclass(frozen=True)
class Frame:
    fin: bool
    opcode: int
    payload: bytes


def read_frame(read_exactly: Callable[[int], bytes], max_payload: int) -> Frame:
    """The next client frame, unmasked; ProtocolError for what RFC 6455 says must fail the connection."""
    first, second = read_exactly(2)
    fin, opcode = bool(first & 0x80), first & 0x0F
    if first & 0x70:
        raise ProtocolError("reserved bits set without a negotiated extension")
    if opcode not in _DATA_OPCODES + _CONTROL_OPCODES:
        raise ProtocolError(f"unknown opcode {opcode:#x}")
    if not second & 0x80:
        raise ProtocolError("client frames must be masked")
    size = second & 0x7F
    if opcode in _CONTROL_OPCODES and (size > 125 or not fin):
        raise ProtocolError("control frames must be whole and at most 125 bytes")
    if size == 126:
        (size,) = struct.unpack("!H", read_exactly(2))
    elif size == 127:
        (size,) = struct.unpack("!Q", read_exactly(8))
    if size > max_payload:
        raise ProtocolError(f"frame of {size} bytes exceeds the bound of {max_payload}", MESSAGE_TOO_BIG)
    mask = read_exactly(4)
    return Frame(fin, opcode, unmask(read_exactly(size), mask))


def unmask(data: bytes, mask: bytes) -> bytes:
    """XOR with the 4-byte mask, a machine word at a time (the payload is up to megabytes)."""
    if not data:
        return data
    repeated = (mask * (len(data) // 4 + 1))[: len(data)]
    return (int.from_bytes(data, "little") ^ int.from_bytes(repeated, "little")).to_bytes(len(data), "little")


class WebSocket:
    """Messages over an upgraded connection. `receive()` from one thread; `send()` from any."""

    def __init__(self, transport: Transport, *, max_message: int) -> None:
        self.transport = transport
        self.max_message = max_message
        self._close_sent = threading.Event()
        #: set once the client's close frame arrived (or it hung up): nothing more will be read
        self.peer_closed = threading.Event()

    def receive(self) -> bytes | None:
        """The next data message (text or binary, as bytes); None once the client closed, hung up, broke
        the protocol, or the idle timeout passed. Pings are answered here."""
        parts: list[bytes] = []
        size = 0
        try:
            while True:
                frame = read_frame(self.transport.recv_exactly, self.max_message - size)
                if frame.opcode == PING:
                    self._send_frame(PONG, frame.payload)
                    continue
                if frame.opcode == PONG:
                    continue
                if frame.opcode == CLOSE:
                    self.close(NORMAL_CLOSURE)
                    self.peer_closed.set()
                    return None
                if (frame.opcode == CONTINUATION) != bool(parts):
                    raise ProtocolError(
                        "a continuation frame must follow an unfinished message, and only then"
                    )
                parts.append(frame.payload)
                size += len(frame.payload)
                if frame.fin:
                    return b"".join(parts)
        except ProtocolError as error:
            self.close(error.code, str(error))
        except StreamClosed:
            pass
        self.peer_closed.set()
        return None

    def send(self, payload: bytes) -> None:
        """One binary message. Raises StreamClosed when the client is gone."""
        self._send_frame(BINARY, payload)

    def close(self, code: int = NORMAL_CLOSURE, reason: str = "") -> None:
        """Send the close frame once; a client already gone is fine."""
        if self._close_sent.is_set():
            return
        self._close_sent.set()
        with contextlib.suppress(StreamClosed):
            self.transport.send(encode_frame(CLOSE, close_payload(code, reason)))

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        self.transport.send(encode_frame(opcode, payload))
