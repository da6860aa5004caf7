"""The byte pipe under an upgraded connection: one reader thread and any number of writer threads on one
socket, TLS or not, with an idle timeout in both directions.

OpenSSL does not allow one SSL object to be read and written by two threads at once, and a stream is full
duplex (a command's output flows out while its input flows in). So the socket is non-blocking: each thread
waits for readiness on its own (poll, no lock held) and takes a short lock only around the non-blocking
`recv`/`send` itself. A writer holds a second lock for a whole `send`, so one frame is never interleaved
with another thread's.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

#: the most a single non-blocking send hands to the socket (a TLS write must be retried with the same bytes)
_SEND_CHUNK = 64 * 1024
#: how often a waiting thread looks at the clock and at `close()` (poll also wakes on the close pipe)
_TICK = 1.0

_Result = TypeVar("_Result")


class StreamClosed(ConnectionError):
    """The peer hung up, the stream was closed here, or the idle timeout passed."""


class Transport:
    """A full-duplex connection: `recv` from one thread, `send` from many, `close` from anywhere."""

    def __init__(self, sock: socket.socket, pending: bytes, *, idle_timeout: float) -> None:
        self.idle_timeout = idle_timeout
        self._sock = sock
        self._pending = pending
        self._io_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._wake_read, self._wake_write = os.pipe()
        self._closed = False
        self._last_activity = time.monotonic()
        sock.setblocking(False)

    def idle_for(self) -> float:
        """Seconds since a byte last moved either way."""
        return time.monotonic() - self._last_activity

    def recv(self, limit: int = 64 * 1024) -> bytes:
        """Up to `limit` bytes; b"" once the peer has closed. Raises StreamClosed after `close()` or when
        nothing moved either way for `idle_timeout` seconds."""
        if self._pending:
            data, self._pending = self._pending[:limit], self._pending[limit:]
            return data
        while True:
            received, wait_for = self._attempt(partial(self._sock.recv, limit), select.POLLIN)
            if received is not None:
                self._last_activity = time.monotonic()
                return received
            if self.idle_for() >= self.idle_timeout:
                raise StreamClosed(f"idle for {self.idle_timeout:g}s")
            self._wait(wait_for)

    def recv_exactly(self, size: int) -> bytes:
        """Exactly `size` bytes; StreamClosed if the peer hangs up first."""
        chunks: list[bytes] = []
        while size:
            data = self.recv(size)
            if not data:
                raise StreamClosed("connection closed by the peer")
            chunks.append(data)
            size -= len(data)
        return b"".join(chunks)

    def send(self, data: bytes) -> None:
        """Write all of `data` as one unit. Raises StreamClosed once closed, when the peer is gone, or when
        the peer took nothing for `idle_timeout` seconds."""
        view = memoryview(data)
        with self._write_lock:
            stalled_since = time.monotonic()
            while view:
                sent, wait_for = self._attempt(partial(self._sock.send, view[:_SEND_CHUNK]), select.POLLOUT)
                if sent:
                    view = view[sent:]
                    stalled_since = self._last_activity = time.monotonic()
                    continue
                if time.monotonic() - stalled_since >= self.idle_timeout:
                    raise StreamClosed(f"the peer read nothing for {self.idle_timeout:g}s")
                self._wait(wait_for)

    def _attempt(self, operation: Callable[[], _Result], ready_for: int) -> tuple[_Result | None, int]:
        """One non-blocking `recv` or `send` under the I/O lock: its result, or None and what readiness to
        wait for: `ready_for` when the socket is not ready, the other way when TLS must first read to
        write or write to read. StreamClosed once closed or when the peer is gone."""
        with self._io_lock:
            if self._closed:
                raise StreamClosed("stream closed")
            try:
                return operation(), ready_for
            except (BlockingIOError, InterruptedError):
                return None, ready_for
            except ssl.SSLWantReadError:
                return None, select.POLLIN
            except ssl.SSLWantWriteError:
                return None, select.POLLOUT
            except OSError as error:
                raise StreamClosed(str(error)) from error

    def close(self) -> None:
        """End the stream: wake both directions, then close the socket. Safe to call twice."""
        with self._io_lock:
            if self._closed:
                return
            self._closed = True
            os.write(self._wake_write, b"x")
        with self._write_lock:  # a writer mid-frame notices `_closed` at its next chunk
            try:
                self._sock.close()
            finally:
                os.close(self._wake_write)
                os.close(self._wake_read)

    def _wait(self, events: int) -> None:
        """Until the socket is ready, `close()` is called, or a tick passes (the caller re-checks both)."""
        poller = select.poll()
        try:
            poller.register(self._sock.fileno(), events)
            poller.register(self._wake_read, select.POLLIN)
            poller.poll(_TICK * 1000)
        except (ValueError, OSError):  # closed meanwhile: the caller sees `_closed` under the lock
            return
