"""A watch stream gives its connection back to the pool exactly once, from the thread that reads it, and
a closed TLS watch ends without a word to the server.

urllib3 closes and pools a failed response's connection from the thread reading it; a second release from the
thread that stopped the watch could close a connection the pool had already handed to another request.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import urllib3

from kube.client import WatchStream
from kubesim.auth.pki import CertificateAuthority


class BlockedResponse:
    """A watch response whose read blocks until its socket is shut down, recording who releases it."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.shut = threading.Event()
        self.reading = threading.Event()
        self.releases: list[str] = []
        self.closes: list[str] = []

    def stream(self, amount: int, decode_content: bool = True):
        yield from self.lines
        self.reading.set()
        self.shut.wait(10)
        raise urllib3.exceptions.ProtocolError("connection broken: shut down")

    def shutdown(self) -> None:
        self.shut.set()

    def close(self) -> None:
        self.closes.append(threading.current_thread().name)

    def release_conn(self) -> None:
        self.releases.append(threading.current_thread().name)


def read_in_thread(stream: WatchStream) -> tuple[threading.Thread, list[dict]]:
    events: list[dict] = []
    reader = threading.Thread(target=lambda: events.extend(stream), name="reader")
    reader.start()
    return reader, events


def test_closing_a_stream_another_thread_reads_leaves_the_release_to_the_reader():
    response = BlockedResponse([b'{"type": "ADDED", "object": {}}\n'])
    stream = WatchStream(response, "configmaps")  # type: ignore[arg-type]
    reader, events = read_in_thread(stream)
    assert response.reading.wait(5)

    stream.close()
    reader.join(5)

    assert not reader.is_alive()
    assert events == [{"type": "ADDED", "object": {}}]
    assert response.releases == ["reader"]
    stream.close()
    assert response.releases == ["reader"]


def test_a_stream_no_thread_reads_is_released_by_close():
    response = BlockedResponse([])
    stream = WatchStream(response, "configmaps")  # type: ignore[arg-type]

    stream.close()

    assert response.shut.is_set()
    assert response.releases == [threading.current_thread().name]
    assert list(stream) == []
    assert len(response.releases) == 1


def test_the_reading_thread_that_stops_early_releases_at_once():
    response = BlockedResponse([b'{"type": "ADDED", "object": {}}\n', b'{"type": "ADDED", "object": {}}\n'])
    stream = WatchStream(response, "configmaps")  # type: ignore[arg-type]
    events = iter(stream)
    assert next(events) == {"type": "ADDED", "object": {}}

    stream.close()

    assert response.releases == [threading.current_thread().name]
    events.close()
    assert len(response.releases) == 1


# --- Over TLS, a closed watch says nothing more to the server ---------------------------------------------


@contextlib.contextmanager
def tls_watch_server(tmp_path: Path) -> Iterator[tuple[int, Path, queue.Queue[str]]]:
    """A TLS server answering one watch with one event, then waiting; once the client is gone it reports
    what its next read of the connection found: "eof", or the TLS error the client's last record raised.
    An API server reads so when a watch ends on its side (its timeout, its own shutdown) and the
    connection goes back to waiting for the next request."""
    ca = CertificateAuthority()
    pair = ca.serving()
    (tmp_path / "ca.crt").write_bytes(ca.certificate)
    (tmp_path / "tls.crt").write_bytes(pair.certificate)
    (tmp_path / "tls.key").write_bytes(pair.key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    found: queue.Queue[str] = queue.Queue()

    def serve() -> None:
        raw, _ = listener.accept()
        with context.wrap_socket(raw, server_side=True) as connection:
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(4096)
            event = b'{"type": "ADDED", "object": {}}\n'
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n%s\r\n" % (len(event), event)
            )
            time.sleep(1)  # the client closes its watch meanwhile
            try:
                found.put("eof" if connection.recv(4096) == b"" else "data")
            except ssl.SSLError as error:
                found.put(f"TLS error: {error.reason}")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], tmp_path / "ca.crt", found
    finally:
        thread.join(10)
        listener.close()


def test_closing_a_tls_watch_another_thread_reads_sends_the_server_no_tls_alert(tmp_path):
    """Shutting only the read side made the reader's OpenSSL send a fatal `decode_error` alert down the
    still-open write side; the API server logged one traceback per watch at every Ctrl-C of `make run`."""
    with tls_watch_server(tmp_path) as (port, ca, found):
        pool = urllib3.HTTPSConnectionPool("127.0.0.1", port, ca_certs=str(ca), cert_reqs="CERT_REQUIRED")
        response = pool.urlopen("GET", "/api/v1/configmaps?watch=true", preload_content=False)
        stream = WatchStream(response, "configmaps")
        events: list[dict] = []
        reader = threading.Thread(target=lambda: events.extend(stream), name="reader")
        reader.start()
        deadline = time.monotonic() + 5
        while not events and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # the reader is blocked in its next read

        stream.close()
        reader.join(5)

        assert events == [{"type": "ADDED", "object": {}}]
        assert found.get(timeout=10) == "eof"
        pool.close()
