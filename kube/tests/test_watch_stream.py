"""A watch stream gives its connection back to the pool exactly once, from the thread that reads it.

urllib3 closes and pools a failed response's connection from the thread reading it; a second release from the
thread that stopped the watch could close a connection the pool had already handed to another request.
"""

from __future__ import annotations

import threading

import urllib3

from kube.client import WatchStream


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
