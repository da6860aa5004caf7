"""Listeners whose connections are relayed, byte for byte, to a connection dialled for each.

The agent uses them for Services (a TCP listener in the node, dialling pods in turn) and exposed host ports
(a TCP listener in the node, dialling the kubelet's unix socket); the kubelet's side for the other half of an
exposed host port (a unix listener, dialling the host's loopback). Two threads per connection: the dev
cluster's connections are few and mostly idle.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Sequence

BUFFER_BYTES = 65536


class Forwarder:
    """Accepts on `listener` until closed; each connection is relayed to what `dial()` returns."""

    def __init__(self, listener: socket.socket, dial: Callable[[], socket.socket], name: str) -> None:
        self.listener = listener
        self.dial = dial
        self._thread = threading.Thread(target=self._accept, name=f"forward {name}", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _address = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = self.dial()
        except OSError as error:
            print(f"kubesim sandbox: {self._thread.name}: {error}", file=sys.stderr)
            client.close()
            return
        relay(client, upstream)

    def close(self) -> None:
        """Stops accepting (connections already relayed carry on until either end closes)."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes accept(); close() alone does not
        self.listener.close()
        self._thread.join(timeout=5)


class RoundRobin:
    """Dials the backends in turn, skipping any that does not answer (kube-proxy's userspace mode)."""

    def __init__(self, backends: Sequence[tuple[str, int]], connect_timeout: float = 2.0) -> None:
        self._lock = threading.Lock()
        self._backends = list(backends)
        self._next = 0
        self._connect_timeout = connect_timeout

    def replace(self, backends: Sequence[tuple[str, int]]) -> None:
        with self._lock:
            self._backends = list(backends)

    def dial(self) -> socket.socket:
        with self._lock:
            count = len(self._backends)
            turn = [self._backends[(self._next + step) % count] for step in range(count)]
            self._next = (self._next + 1) % max(len(self._backends), 1)
        last_error: OSError = ConnectionRefusedError("the Service has no backends")
        for backend in turn:
            try:
                connection = socket.create_connection(backend, timeout=self._connect_timeout)
            except OSError as error:
                last_error = error
                continue
            connection.settimeout(None)
            return connection
        raise last_error


def relay(first: socket.socket, second: socket.socket) -> None:
    """Copies both ways until both directions have ended, then closes both sockets."""
    other = threading.Thread(target=_copy, args=(second, first), daemon=True)
    other.start()
    _copy(first, second)
    other.join()
    first.close()
    second.close()


def _copy(source: socket.socket, destination: socket.socket) -> None:
    try:
        while data := source.recv(BUFFER_BYTES):
            destination.sendall(data)
    except OSError:
        # A reset on one side ends both directions, or the other copy would wait forever.
        for sock in (source, destination):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return
    with contextlib.suppress(OSError):
        destination.shutdown(socket.SHUT_WR)  # pass the end of one direction on, keep the other open
