"""The body of a watch response: newline-delimited JSON events, streamed as they are committed.

Ends after timeoutSeconds, sends BOOKMARKs when asked, and can be cut abruptly by an injected fault.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from kubesim.errors import ApiError
from kubesim.jsonutil import dumps
from kubesim.store import BOOKMARK, ERROR, Store, Watcher

Encode = Callable[[str, dict[str, Any]], dict[str, Any]]


class DropConnection(Exception):
    """Raised by a stream to make the server close the socket without ending the chunked body."""


def error_event(error: ApiError) -> bytes:
    return dumps({"type": ERROR, "object": error.status()}) + b"\n"


def bookmark_event(
    kind: str, api_version: str, resource_version: str, initial_events_end: bool = False
) -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if initial_events_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    return (
        dumps({"type": BOOKMARK, "object": {"kind": kind, "apiVersion": api_version, "metadata": metadata}})
        + b"\n"
    )


def stream_events(
    store: Store,
    watcher: Watcher,
    encode: Encode,
    *,
    timeout: float,
    bookmarks: bool,
    bookmark_interval: float,
    drop_after: int | None = None,
    initial_events_end: bool = False,
) -> Iterator[bytes]:
    """Yield chunks of events until the timeout, a closed watcher, or an injected drop."""
    resource = watcher.resource
    deadline = time.monotonic() + timeout
    next_bookmark = time.monotonic() + bookmark_interval
    sent = 0
    pending_initial_end = initial_events_end
    try:
        if drop_after == 0:
            raise DropConnection
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            wait = min(deadline - now, max(next_bookmark - now, 0.0)) if bookmarks else deadline - now
            batch = watcher.take(0 if pending_initial_end else wait)
            if watcher.closed and not batch:
                if watcher.error is not None:
                    yield error_event(watcher.error)
                return
            chunk: list[bytes] = []
            for event_type, obj in batch:
                if drop_after is not None and sent >= drop_after:
                    if chunk:
                        yield b"".join(chunk)
                    raise DropConnection
                chunk.append(dumps({"type": event_type, "object": encode(event_type, obj)}) + b"\n")
                sent += 1
            if pending_initial_end or (bookmarks and time.monotonic() >= next_bookmark):
                rv = store.resource_version
                for event_type, obj in watcher.take(0):  # everything up to rv is queued by now
                    chunk.append(dumps({"type": event_type, "object": encode(event_type, obj)}) + b"\n")
                    sent += 1
                chunk.append(bookmark_event(resource.kind, resource.api_version(), rv, pending_initial_end))
                pending_initial_end = False
                next_bookmark = time.monotonic() + bookmark_interval
            if chunk:
                yield b"".join(chunk)
    finally:
        watcher.close()
