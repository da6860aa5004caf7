"""port-forward: one TCP connection into the pod per forwarded client connection.

Three wire forms, as upstream serves them:
- SPDY streams (`portforward.k8s.io`): each forwarded connection is a pair of client-opened streams with the
  headers `streamType` (error or data), `port` and `requestID`. The server copies between the data stream
  and the pod's port, writes a failure as text on the error stream, and half-closes both when done. kubectl
  1.37 sends these SPDY frames inside WebSocket binary messages (subprotocol `SPDY/3.1+portforward.k8s.io`,
  the API server's tunnel) and falls back to a plain SPDY/3.1 upgrade when that is refused.
- WebSocket channels (`v4.channel.k8s.io`, the Python client): the ports are in the query; port i has
  channel 2i (data both ways) and 2i+1 (errors, server to client), each opened by a message carrying the
  port as two little-endian bytes; one connection per port, and the WebSocket closes when all are done.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from kubesim.errors import ApiError
from kubesim.server.streams import bounds
from kubesim.server.streams.spdy import SpdyConnection, Stream
from kubesim.server.streams.transport import StreamClosed
from kubesim.server.streams.websocket import WebSocket

log = logging.getLogger(__name__)

PROTOCOL = "portforward.k8s.io"
TUNNEL_PROTOCOL = "SPDY/3.1+" + PROTOCOL
CHANNEL_PROTOCOL = "v4.channel.k8s.io"

#: a connection into the pod's network namespace (StreamBackend.connect bound to one pod)
Connect = Callable[[int], socket.socket]


def parse_ports(values: list[str]) -> list[int]:
    """The `ports` query parameter (repeated, or comma-separated), as the kubelet parses it."""
    if not values:
        raise ApiError(400, "BadRequest", 'query parameter "ports" is required')
    ports = []
    for value in values:
        if not value:
            raise ApiError(400, "BadRequest", 'query parameter "ports" cannot be empty')
        for text in value.split(","):
            port = int(text) if text.isdigit() else -1
            if not 0 <= port < 65536:
                raise ApiError(400, "BadRequest", f'unable to parse "{value}" as a port: invalid syntax')
            if port < 1:
                raise ApiError(400, "BadRequest", f'port "{value}" must be > 0')
            ports.append(port)
    return ports


def stream_error(stream: Stream) -> str | None:
    """Why the kubelet refuses a port-forward stream (None when its headers are good)."""
    port = stream.header("port")
    if not port:
        return '"port" header is required'
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f'unable to parse "{port}" as a port'
    if stream.header("streamType") not in ("error", "data"):
        return f'invalid stream type "{stream.header("streamType")}"'
    return None


def forward_error(port: int, pod: str, error: BaseException) -> str:
    """The kubelet's words for a port nothing listens on (written to the error stream). `pod` is the
    kubelet's full name, <name>_<namespace>; the uid is empty when the API server forwards the request."""
    reason = error.message if isinstance(error, ApiError) else str(error)
    return f"error forwarding port {port} to pod {pod}, uid : {reason}"


def copy_out(target: socket.socket, write: Callable[[bytes], None]) -> None:
    """Copy what the pod's side sends to the client until it ends; StreamClosed when the client is gone."""
    while chunk := _recv(target):
        write(chunk)


def _recv(target: socket.socket) -> bytes:
    try:
        return target.recv(bounds.CHUNK_BYTES)
    except OSError:
        return b""


def _shutdown(target: socket.socket, how: int) -> None:
    with contextlib.suppress(OSError):
        target.shutdown(how)


@dataclass
class _Pair:
    request_id: str
    port: int
    error: Stream | None = None
    data: Stream | None = None
    started: bool = False
    timer: threading.Timer | None = None


@dataclass
class SpdyForwarding:
    """Port-forward over one SPDY connection: pairs the streams by request id and forwards each pair."""

    connection: SpdyConnection
    connect: Connect
    pod: str
    creation_timeout: float = bounds.STREAM_CREATION_TIMEOUT
    _pairs: dict[str, _Pair] = field(default_factory=dict)
    _targets: set[socket.socket] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self) -> None:
        """Until the client leaves; then every forwarded connection is cut."""
        try:
            self.connection.serve(self.on_stream)
        finally:
            with self._lock:
                targets, pairs = list(self._targets), list(self._pairs.values())
            for target in targets:
                _shutdown(target, socket.SHUT_RDWR)
            for pair in pairs:
                if pair.timer is not None:
                    pair.timer.cancel()

    def on_stream(self, stream: Stream) -> Callable[[], None] | None:
        if (refusal := stream_error(stream)) is not None:
            log.debug("kubesim: port-forward stream %d of %s refused: %s", stream.id, self.pod, refusal)
            return None
        # Clients before 1.5 sent no request id: the kubelet pairs error stream n with data stream n+2.
        request_id = stream.header("requestID") or str(
            stream.id - (2 if stream.header("streamType") == "data" else 0)
        )
        with self._lock:
            pair = self._pairs.setdefault(request_id, _Pair(request_id, int(stream.header("port"))))
            kind = stream.header("streamType")
            if getattr(pair, kind) is not None:
                return None
            setattr(pair, kind, stream)
            if kind == "error":
                stream.discard_input()
        return lambda: self._accepted(pair)

    def _accepted(self, pair: _Pair) -> None:
        with self._lock:
            complete = pair.error is not None and pair.data is not None and not pair.started
            if complete:
                pair.started = True
                self._pairs.pop(pair.request_id, None)
        if complete:
            if pair.timer is not None:
                pair.timer.cancel()
            threading.Thread(
                target=self._forward, args=(pair,), name="kubesim-port-forward", daemon=True
            ).start()
        elif pair.timer is None:
            pair.timer = threading.Timer(self.creation_timeout, self._expire, args=(pair,))
            pair.timer.daemon = True
            pair.timer.start()

    def _expire(self, pair: _Pair) -> None:
        with self._lock:
            if pair.started:
                return
            self._pairs.pop(pair.request_id, None)
        for stream in (pair.error, pair.data):
            if stream is not None:
                if stream is pair.error:
                    with contextlib.suppress(StreamClosed):
                        stream.write(f"timed out waiting for streams (request {pair.request_id})".encode())
                stream.close()
                self.connection.forget(stream)

    def _forward(self, pair: _Pair) -> None:
        error, data = pair.error, pair.data
        assert error is not None
        assert data is not None
        target: socket.socket | None = None
        try:
            try:
                target = self.connect(pair.port)
            except (OSError, ApiError) as failure:
                with contextlib.suppress(StreamClosed):
                    error.write(forward_error(pair.port, self.pod, failure).encode())
                return
            with self._lock:
                self._targets.add(target)
            inbound = threading.Thread(target=self._copy_in, args=(data, target), daemon=True)
            inbound.start()
            with contextlib.suppress(StreamClosed):
                copy_out(target, data.write)
            _shutdown(target, socket.SHUT_RDWR)
        finally:
            # FIN on both: the client reads the data to its end, resets the data stream, and takes an empty
            # error stream as success
            data.close()
            error.close()
        if target is not None:
            inbound.join()  # ends once the client resets or half-closes the data stream, or leaves
            with self._lock:
                self._targets.discard(target)
            target.close()
        self.connection.forget(data)
        self.connection.forget(error)

    @staticmethod
    def _copy_in(data: Stream, target: socket.socket) -> None:
        """What the client sends, until it half-closes or resets the stream."""
        try:
            while chunk := data.read():
                target.sendall(chunk)
        except OSError:
            return
        _shutdown(target, socket.SHUT_WR)


def serve_channels(ws: WebSocket, ports: list[int], connect: Connect, pod: str) -> None:
    """Port-forward over the v4 channel protocol: one connection per requested port."""
    targets: list[socket.socket | None] = []
    try:
        for index, port in enumerate(ports):
            for channel in (2 * index, 2 * index + 1):
                ws.send(bytes((channel,)) + struct.pack("<H", port))
        for index, port in enumerate(ports):
            try:
                targets.append(connect(port))
            except (OSError, ApiError) as failure:
                targets.append(None)
                ws.send(bytes((2 * index + 1,)) + forward_error(port, pod, failure).encode())
        reader = threading.Thread(
            target=_channel_reader, args=(ws, targets), name="kubesim-ws-reader", daemon=True
        )
        reader.start()
        copiers = [
            threading.Thread(target=_channel_copy_out, args=(ws, target, 2 * index), daemon=True)
            for index, target in enumerate(targets)
            if target is not None
        ]
        for copier in copiers:
            copier.start()
        for copier in copiers:
            copier.join()
        ws.close()
        ws.peer_closed.wait(bounds.FINISH_TIMEOUT)
    except StreamClosed:
        pass
    finally:
        for target in targets:
            if target is not None:
                _shutdown(target, socket.SHUT_RDWR)
                target.close()


def _channel_reader(ws: WebSocket, targets: list[socket.socket | None]) -> None:
    """Client data on channel 2i goes to port i; the stream's end cuts every connection."""
    while (message := ws.receive()) is not None:
        if not message or message[0] % 2 or message[0] // 2 >= len(targets):
            continue
        target = targets[message[0] // 2]
        if target is not None:
            try:
                target.sendall(message[1:])
            except OSError:
                continue
    for target in targets:
        if target is not None:
            _shutdown(target, socket.SHUT_RDWR)


def _channel_copy_out(ws: WebSocket, target: socket.socket, channel: int) -> None:
    prefix = bytes((channel,))
    with contextlib.suppress(StreamClosed):
        copy_out(target, lambda chunk: ws.send(prefix + chunk))
    _shutdown(target, socket.SHUT_RDWR)


class Tunnel:
    """SPDY's byte stream inside WebSocket binary messages (client-go's TunnelingConnection): a message
    boundary means nothing, a frame may span messages and a message may hold several frames."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self._buffer = bytearray()

    def recv_exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            message = self.ws.receive()
            if message is None:
                raise StreamClosed("the tunnel's WebSocket closed")
            self._buffer += message
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def send(self, data: bytes) -> None:
        self.ws.send(data)
