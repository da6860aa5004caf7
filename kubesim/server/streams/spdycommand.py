"""exec and attach over SPDY (`v5.channel.k8s.io` or `v4.channel.k8s.io` negotiated in the
X-Stream-Protocol-Version header), what kubectl falls back to when the WebSocket upgrade is refused.

The client opens one stream per channel, named by its `streamType` header (error, stdin, stdout, stderr,
resize); the session starts once all it asked for are open. The client half-closes stdin when its input
ends; the server half-closes stdout and stderr at the end of the output, writes the Status on the error
stream and closes it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from kubesim.server.streams import bounds
from kubesim.server.streams.command import CommandOptions, CommandRun
from kubesim.server.streams.spdy import GOAWAY_OK, SpdyConnection, Stream
from kubesim.server.streams.transport import StreamClosed

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
_TYPES = ("error", "stdin", "stdout", "stderr", "resize")
#: one stream of each type at most
MAX_STREAMS = len(_TYPES)


def expected_streams(options: CommandOptions) -> set[str]:
    """The stream types a client with these options opens (the kubelet counts them the same way)."""
    wanted = {"error"}
    wanted |= {name for name, asked in (("stdin", options.stdin), ("stdout", options.stdout)) if asked}
    if options.stderr:
        wanted.add("stderr")
    if options.tty:
        wanted.add("resize")
    return wanted


class SpdyOutlet:
    def __init__(
        self, connection: SpdyConnection, streams: dict[str, Stream], hung_up: threading.Event
    ) -> None:
        self.connection = connection
        self.streams = streams
        self.hung_up = hung_up

    def stdout(self, data: bytes) -> None:
        self.streams["stdout"].write(data)

    def stderr(self, data: bytes) -> None:
        self.streams["stderr"].write(data)

    def finish(self, status: dict[str, Any]) -> None:
        for name in ("stdout", "stderr"):
            if name in self.streams:
                self.streams[name].close()
        error = self.streams["error"]
        try:
            error.write(json.dumps(status, separators=(",", ":")).encode())
        except StreamClosed:
            return
        error.close()
        self.connection.go_away(GOAWAY_OK)
        self.hung_up.wait(bounds.FINISH_TIMEOUT)


class SpdyCommand:
    """One exec or attach session over a SPDY connection."""

    def __init__(
        self,
        connection: SpdyConnection,
        run: CommandRun,
        *,
        creation_timeout: float = bounds.STREAM_CREATION_TIMEOUT,
    ) -> None:
        self.connection = connection
        self.run = run
        self.creation_timeout = creation_timeout
        self.expected = expected_streams(run.options)
        self.streams: dict[str, Stream] = {}
        self._all_open = threading.Event()
        self._hung_up = threading.Event()

    def serve(self) -> None:
        reader = threading.Thread(target=self._read, name="kubesim-spdy-reader", daemon=True)
        reader.start()
        if not self._all_open.wait(self.creation_timeout) or self._hung_up.is_set():
            self.run.client_gone()  # "timed out waiting for client to create streams": nothing to run
        else:
            for name, consume in (("stdin", self._consume_stdin), ("resize", self._consume_resize)):
                if name in self.streams:
                    threading.Thread(target=consume, args=(self.streams[name],), daemon=True).start()
        self.run.run(SpdyOutlet(self.connection, self.streams, self._hung_up))

    def _read(self) -> None:
        self.connection.serve(self._on_stream)
        self._hung_up.set()
        self._all_open.set()
        self.run.client_gone()

    def _on_stream(self, stream: Stream) -> Callable[[], None] | None:
        kind = stream.header("streamType")
        if kind not in _TYPES or kind in self.streams:
            return None
        self.streams[kind] = stream
        if kind not in ("stdin", "resize"):
            stream.discard_input()
        return self._opened

    def _opened(self) -> None:
        if self.expected <= set(self.streams):
            self._all_open.set()

    def _consume_stdin(self, stream: Stream) -> None:
        while data := stream.read():
            self.run.stdin(data)
        self.run.close_stdin()

    def _consume_resize(self, stream: Stream) -> None:
        while data := stream.read():
            self.run.resize(data)
