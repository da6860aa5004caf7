"""SPDY/3.1, server side, as far as Kubernetes uses it: client-opened streams carrying headers (SYN_STREAM,
answered by SYN_REPLY), data with half-close (FIN), resets, pings and GOAWAY.

kubectl speaks it through moby/spdystream, which opens every stream itself, compresses header blocks with
zlib primed with the SPDY/3 dictionary (one compression context per direction for the whole connection)
and implements no flow control: it neither sends nor honours WINDOW_UPDATE, so neither does this server
(TCP's own window is the only back-pressure, as with the kubelet).
"""

from __future__ import annotations

import contextlib
import struct
import threading
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kubesim.server.streams import bounds
from kubesim.server.streams.transport import StreamClosed

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
#: RST_STREAM status codes
PROTOCOL_ERROR, REFUSED_STREAM, CANCEL = 1, 3, 5
#: GOAWAY status codes
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR = 0, 1
#: a DATA frame's length field is 24 bits
MAX_DATA = (1 << 24) - 1

# The zlib dictionary of SPDY/3 (draft-mbelshe-httpbis-spdy-00, 2.6.10.1): length-prefixed words, then text.
_DICTIONARY_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location",
    "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
    "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
)  # fmt: skip
_DICTIONARY_TEXT = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
HEADER_DICTIONARY = (
    b"".join(struct.pack("!I", len(word)) + word.encode() for word in _DICTIONARY_WORDS)
    + _DICTIONARY_TEXT.encode()
)


class ProtocolError(ValueError):
    """The client broke SPDY framing; the connection ends with GOAWAY PROTOCOL_ERROR."""


class Pipe(Protocol):
    """The bytes under SPDY: an upgraded connection (Transport) or a WebSocket tunnel."""

    def recv_exactly(self, size: int) -> bytes: ...

    def send(self, data: bytes) -> None: ...


@dataclass(frozen=True)
class ControlFrame:
    type: int
    flags: int
    payload: bytes


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    flags: int
    payload: bytes


def read_frame(read_exactly: Callable[[int], bytes]) -> ControlFrame | DataFrame:
    """The next frame; its payload is at most 16 MiB by the format."""
    head = read_exactly(8)
    word, flags, length = struct.unpack("!I", head[:4])[0], head[4], int.from_bytes(head[5:8], "big")
    payload = read_exactly(length)
    if not word & 0x80000000:
        return DataFrame(word & 0x7FFFFFFF, flags, payload)
    version, frame_type = (word >> 16) & 0x7FFF, word & 0xFFFF
    if version != VERSION:
        raise ProtocolError(f"SPDY version {version} is not supported (only 3)")
    return ControlFrame(frame_type, flags, payload)


def control_frame(frame_type: int, flags: int, payload: bytes) -> bytes:
    return struct.pack("!HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, *, fin: bool = False) -> bytes:
    return struct.pack("!II", stream_id, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


def rst_stream(stream_id: int, status: int) -> bytes:
    return control_frame(RST_STREAM, 0, struct.pack("!II", stream_id, status))


def goaway(last_stream_id: int, status: int) -> bytes:
    return control_frame(GOAWAY, 0, struct.pack("!II", last_stream_id, status))


def parse_header_block(block: bytes) -> dict[str, list[str]]:
    """Name → values (a value holding NULs is several values), names lower-cased."""

    def take(at: int) -> tuple[bytes, int]:
        if at + 4 > len(block):
            raise ProtocolError("truncated header block")
        (size,) = struct.unpack("!I", block[at : at + 4])
        if at + 4 + size > len(block):
            raise ProtocolError("truncated header block")
        return block[at + 4 : at + 4 + size], at + 4 + size

    if len(block) < 4:
        raise ProtocolError("truncated header block")
    (count,) = struct.unpack("!I", block[:4])
    headers: dict[str, list[str]] = {}
    at = 4
    for _ in range(count):
        name, at = take(at)
        value, at = take(at)
        headers.setdefault(name.decode("latin-1").lower(), []).extend(value.decode("latin-1").split("\x00"))
    return headers


def build_header_block(headers: Mapping[str, str]) -> bytes:
    parts = [struct.pack("!I", len(headers))]
    for name, value in headers.items():
        for text in (name.lower(), value):
            raw = text.encode("latin-1")
            parts.append(struct.pack("!I", len(raw)) + raw)
    return b"".join(parts)


class HeaderCodec:
    """The connection's two zlib contexts (one per direction), primed with the SPDY/3 dictionary."""

    def __init__(self, max_block: int = bounds.MAX_HEADER_BLOCK_BYTES) -> None:
        self.max_block = max_block
        self._inflate = zlib.decompressobj(zdict=HEADER_DICTIONARY)
        self._deflate = zlib.compressobj(zdict=HEADER_DICTIONARY)

    def decode(self, compressed: bytes) -> dict[str, list[str]]:
        try:
            block = self._inflate.decompress(compressed, self.max_block + 1)
        except zlib.error as error:
            raise ProtocolError(f"header block does not inflate: {error}") from error
        if len(block) > self.max_block or self._inflate.unconsumed_tail:
            raise ProtocolError(f"header block exceeds the bound of {self.max_block} bytes")
        return parse_header_block(block)

    def encode(self, headers: Mapping[str, str]) -> bytes:
        return self._deflate.compress(build_header_block(headers)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)


@dataclass
class Stream:
    """One client-opened stream: its headers, what the client sent (`read`), and what the server sends."""

    connection: SpdyConnection
    id: int
    headers: dict[str, list[str]]
    _inbound: deque[bytes] = field(default_factory=deque)
    _buffered: int = 0
    _remote_done: bool = False
    _local_done: bool = False
    _discard: bool = False
    _reset_by_peer: bool = False
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def header(self, name: str) -> str:
        values = self.headers.get(name.lower()) or [""]
        return values[0]

    def read(self) -> bytes:
        """The next data the client sent; b"" once it half-closed or reset the stream, or the connection
        ended."""
        with self._changed:
            while not self._inbound and not self._remote_done:
                self._changed.wait()
            if not self._inbound:
                return b""
            data = self._inbound.popleft()
            self._buffered -= len(data)
            self._changed.notify_all()
            return data

    def discard_input(self) -> None:
        """Drop what the client sends on this stream (a stream the server only writes)."""
        with self._changed:
            self._discard = True
            self._inbound.clear()
            self._buffered = 0
            self._changed.notify_all()

    def write(self, data: bytes) -> None:
        """Send data; raises StreamClosed when the client reset the stream or the connection is gone."""
        for at in range(0, len(data), bounds.CHUNK_BYTES):
            if self._reset_by_peer:
                raise StreamClosed(f"stream {self.id} reset by the client")
            self.connection.send(data_frame(self.id, data[at : at + bounds.CHUNK_BYTES]))

    def close(self) -> None:
        """Half-close: an empty DATA frame with FIN. Once only; a connection already gone is fine."""
        with self._changed:
            if self._local_done:
                return
            self._local_done = True
        with contextlib.suppress(StreamClosed):
            self.connection.send(data_frame(self.id, b"", fin=True))

    def reset(self, status: int = CANCEL) -> None:
        with self._changed:
            already = self._local_done and self._remote_done
            self._local_done = True
        self._end_remote()
        if not already:
            with contextlib.suppress(StreamClosed):
                self.connection.send(rst_stream(self.id, status))

    # --- the connection's reader thread ---------------------------------------------------------------

    def _deliver(self, data: bytes) -> None:
        """Queue data for `read`, waiting while this stream holds a full buffer (back-pressure)."""
        with self._changed:
            while self._buffered >= bounds.STREAM_BUFFER_BYTES and not (self._discard or self._remote_done):
                self._changed.wait()
            if self._discard or self._remote_done:
                return
            self._inbound.append(data)
            self._buffered += len(data)
            self._changed.notify_all()

    def _end_remote(self) -> None:
        with self._changed:
            self._remote_done = True
            self._changed.notify_all()


#: what a session says about a new stream: None refuses it (RST_STREAM CANCEL), else a function to call
#: once the stream is accepted (SYN_REPLY sent: spdystream drops data on a stream it has no reply for)
OnStream = Callable[["Stream"], Callable[[], None] | None]


class SpdyConnection:
    """The frames of one upgraded connection. `serve()` reads until the client leaves and hands each new
    stream to `on_stream`."""

    def __init__(self, pipe: Pipe, *, max_streams: int) -> None:
        self.pipe = pipe
        self.max_streams = max_streams
        self.codec = HeaderCodec()
        self.streams: dict[int, Stream] = {}
        self._last_stream_id = 0
        self._header_lock = threading.Lock()
        self._goaway_lock = threading.Lock()
        self._goaway_sent = False

    def send(self, frame: bytes) -> None:
        self.pipe.send(frame)

    def serve(self, on_stream: OnStream) -> None:
        try:
            while self._handle(read_frame(self.pipe.recv_exactly), on_stream):
                pass
        except ProtocolError:
            self.go_away(GOAWAY_PROTOCOL_ERROR)
        except StreamClosed:
            pass
        finally:
            for stream in list(self.streams.values()):
                stream._end_remote()

    def go_away(self, status: int = GOAWAY_OK) -> None:
        """Tell the client no more streams will be accepted (once)."""
        with self._goaway_lock:
            if self._goaway_sent:
                return
            self._goaway_sent = True
        with contextlib.suppress(StreamClosed):
            self.send(goaway(self._last_stream_id, status))

    def forget(self, stream: Stream) -> None:
        self.streams.pop(stream.id, None)

    def _handle(self, frame: ControlFrame | DataFrame, on_stream: OnStream) -> bool:
        """Act on one frame; False once the client said GOAWAY."""
        if isinstance(frame, DataFrame):
            stream = self.streams.get(frame.stream_id)
            if stream is not None:
                if frame.payload:
                    stream._deliver(frame.payload)
                if frame.flags & FLAG_FIN:
                    stream._end_remote()
            return True
        if frame.type == SYN_STREAM:
            self._open(frame, on_stream)
        elif frame.type == RST_STREAM and len(frame.payload) == 8:
            stream = self.streams.pop(struct.unpack("!I", frame.payload[:4])[0] & 0x7FFFFFFF, None)
            if stream is not None:
                stream._local_done = stream._reset_by_peer = True
                stream._end_remote()
        elif frame.type == PING and len(frame.payload) == 4:
            if struct.unpack("!I", frame.payload)[0] % 2:  # the client's pings are odd: echo them
                self.send(control_frame(PING, 0, frame.payload))
        elif frame.type == GOAWAY:
            return False
        elif frame.type not in (SYN_REPLY, SETTINGS, HEADERS, WINDOW_UPDATE):
            raise ProtocolError(f"unknown control frame type {frame.type}")
        return True

    def _open(self, frame: ControlFrame, on_stream: OnStream) -> None:
        if len(frame.payload) < 10:
            raise ProtocolError("SYN_STREAM shorter than its fixed fields")
        stream_id = struct.unpack("!I", frame.payload[:4])[0] & 0x7FFFFFFF
        headers = self.codec.decode(
            frame.payload[10:]
        )  # inflate even a refused stream: the context is shared
        if stream_id % 2 == 0 or stream_id <= self._last_stream_id:
            self.send(rst_stream(stream_id, PROTOCOL_ERROR))
            return
        self._last_stream_id = stream_id
        if len(self.streams) >= self.max_streams or self._goaway_sent:
            self.send(rst_stream(stream_id, REFUSED_STREAM))
            return
        stream = Stream(self, stream_id, headers)
        if frame.flags & (FLAG_FIN | FLAG_UNIDIRECTIONAL):
            stream._remote_done = True
        self.streams[stream_id] = stream
        start = on_stream(stream)
        if start is None:
            self.forget(stream)
            stream.reset(CANCEL)
            return
        with self._header_lock:  # header blocks must reach the client in compression order
            self.send(control_frame(SYN_REPLY, 0, struct.pack("!I", stream_id) + self.codec.encode({})))
        start()
