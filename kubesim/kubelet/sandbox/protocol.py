"""JSON lines over unix stream sockets, file descriptors beside them (SCM_RIGHTS).

The kubelet talks to the node agent this way, and the agent to the programs it starts in the node (pause,
container init). Received descriptors are close-on-exec (MSG_CMSG_CLOEXEC: socket.recv_fds would leave them
inheritable, and a pipe's write end leaked into another container's process would keep the first one's
stream from ever ending).
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import socket

TYPE_CHECKING = False  # typing costs every container's init a MiB; the names below are for mypy only
if TYPE_CHECKING:
    from typing import Any

MAX_MESSAGE_BYTES = 8 << 20  # an environment and mounts; exec's argument list is capped at a few MiB anyway
MAX_FDS = 16
_FD_SPACE = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)


class ProtocolError(Exception):
    """The other end sent something that is not a message, or closed before sending one."""


class Channel:
    """One end of a connection: send a message with descriptors, receive the next message and its own."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()
        self._fds: list[int] = []

    def send(self, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        sent = socket.send_fds(self.sock, [data], list(fds)) if fds else 0
        if sent < len(data):  # sendall(b"") still calls send(): EPIPE once the other end has answered
            self.sock.sendall(data[sent:])

    def receive(self) -> tuple[dict[str, Any], list[int]]:
        """The next message and the descriptors that came with it (the caller owns and closes them)."""
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise ProtocolError(f"a message longer than {MAX_MESSAGE_BYTES} bytes")
            data, ancillary, _flags, _address = self.sock.recvmsg(65536, _FD_SPACE, socket.MSG_CMSG_CLOEXEC)
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    numbers = array.array("i")
                    numbers.frombytes(payload[: len(payload) - len(payload) % numbers.itemsize])
                    self._fds.extend(numbers)
            if not data:
                self.close_fds()
                raise ProtocolError("the connection closed before a whole message")
            self._buffer += data
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        fds, self._fds = self._fds, []
        try:
            message = json.loads(line)
        except ValueError as error:
            close_all(fds)
            raise ProtocolError(f"not JSON: {error}") from None
        if not isinstance(message, dict):
            close_all(fds)
            raise ProtocolError("a message must be a JSON object")
        return message, fds

    def close_fds(self) -> None:
        close_all(self._fds)
        self._fds = []

    def close(self) -> None:
        self.close_fds()
        self.sock.close()


def close_all(fds: list[int] | tuple[int, ...]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
