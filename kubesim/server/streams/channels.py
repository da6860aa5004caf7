"""exec and attach over WebSocket: the channel protocols `v5.channel.k8s.io` (kubectl 1.29+, the Python
client) and `v4.channel.k8s.io` (older clients).

Every binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 error (the Status the stream
ends with, JSON), 4 resize (TerminalSize JSON). v5 adds a close signal, [255, channel], which is how a
client says its input has ended (kubectl cp to a pod depends on it); v4 has none, so there the process's
input stays open until the stream ends.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from kubesim.server.streams import bounds
from kubesim.server.streams.command import CommandRun
from kubesim.server.streams.transport import StreamClosed
from kubesim.server.streams.websocket import WebSocket

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
#: in the order the server prefers them when a client offers both
PROTOCOLS = (V5, V4)

STDIN, STDOUT, STDERR, ERROR, RESIZE = 0, 1, 2, 3, 4
CLOSE_SIGNAL = 255


class ChannelOutlet:
    """Writes a command's output and Status as channel messages."""

    def __init__(self, ws: WebSocket, *, finish_timeout: float = bounds.FINISH_TIMEOUT) -> None:
        self.ws = ws
        self.finish_timeout = finish_timeout

    def stdout(self, data: bytes) -> None:
        self.ws.send(bytes((STDOUT,)) + data)

    def stderr(self, data: bytes) -> None:
        self.ws.send(bytes((STDERR,)) + data)

    def finish(self, status: dict[str, Any]) -> None:
        """The Status on the error channel, then the close frame; the client reads to the end of its
        output and closes (upstream's translator does the same, so a slow reader loses nothing)."""
        self.ws.send(bytes((ERROR,)) + json.dumps(status, separators=(",", ":")).encode())
        self.ws.close()
        self.ws.peer_closed.wait(self.finish_timeout)


def announce(ws: WebSocket, stdout: bool, stderr: bool) -> None:
    """An empty message on the lowest channel the server writes, which tells the client the streams are
    up (the kubelet and the API server both send it)."""
    ws.send(bytes((STDOUT if stdout else STDERR if stderr else ERROR,)))


def read_client(ws: WebSocket, run: CommandRun, protocol: str) -> None:
    """Feed what the client sends into the run until it closes or hangs up."""
    while (message := ws.receive()) is not None:
        if not message:
            continue
        channel, data = message[0], message[1:]
        if channel == STDIN:
            run.stdin(data)
        elif channel == RESIZE:
            run.resize(data)
        elif channel == CLOSE_SIGNAL and protocol == V5 and data[:1] == bytes((STDIN,)):
            run.close_stdin()
    run.client_gone()


def serve(
    ws: WebSocket, run: CommandRun, protocol: str, *, finish_timeout: float = bounds.FINISH_TIMEOUT
) -> None:
    """Run an exec or attach session over an open WebSocket; returns once it is over."""
    try:
        announce(ws, run.options.stdout, run.options.stderr)
    except StreamClosed:
        run.client_gone()  # the run still cleans up: kills the exec'd process, closes the descriptors
    reader = threading.Thread(
        target=read_client, args=(ws, run, protocol), name="kubesim-ws-reader", daemon=True
    )
    reader.start()
    run.run(ChannelOutlet(ws, finish_timeout=finish_timeout))
