"""Container output kept by the simulated kubelet, served by `GET .../pods/{name}/log` (kubectl logs [-f]).

Each container keeps the lines of its current run and of the previous one (`previous=true`), stamped with
the simulator clock. A follow stream ends when the run it follows ends, as with a real kubelet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubesim.errors import bad_request, method_not_allowed
from kubesim.server.types import ApiRequest, Response
from kubesim.store import Store

LogKey = tuple[str, str, str]  # (namespace, pod name, container name)
_FOLLOW_POLL = 0.5


@dataclass(frozen=True)
class LogLine:
    at: float  # simulator epoch seconds
    text: str


@dataclass
class ContainerLog:
    current: list[LogLine] = field(default_factory=list)
    previous: list[LogLine] | None = None
    run: int = 0
    finished: bool = False


def log_timestamp(at: float) -> str:
    """RFC 3339 with nanoseconds, as the kubelet prefixes lines when asked for `timestamps=true`."""
    moment = datetime.fromtimestamp(at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond * 1000:09d}Z"


class LogStore:
    """Thread-safe output of every container the kubelet runs; followers wait on one condition."""

    def __init__(self) -> None:
        self._logs: dict[LogKey, ContainerLog] = {}
        self._changed = threading.Condition()
        self._closed = False

    def start_run(self, key: LogKey) -> None:
        """A container (re)starts: the current lines become the previous run's."""
        with self._changed:
            log = self._logs.get(key)
            if log is None:
                self._logs[key] = ContainerLog()
            else:
                log.previous, log.current, log.run, log.finished = log.current, [], log.run + 1, False
            self._changed.notify_all()

    def append(self, key: LogKey, at: float, text: str) -> None:
        with self._changed:
            self._logs.setdefault(key, ContainerLog()).current.append(LogLine(at, text))
            self._changed.notify_all()

    def finish_run(self, key: LogKey) -> None:
        with self._changed:
            self._logs.setdefault(key, ContainerLog()).finished = True
            self._changed.notify_all()

    def drop_pod(self, namespace: str, pod: str) -> None:
        with self._changed:
            for key in [k for k in self._logs if k[:2] == (namespace, pod)]:
                log = self._logs.pop(key)
                log.finished = True
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def snapshot(self, key: LogKey, previous: bool) -> list[LogLine] | None:
        """The lines of the current (or previous) run; None when there is no such run."""
        with self._changed:
            log = self._logs.get(key)
            if log is None:
                return None
            return (
                list(log.previous)
                if previous and log.previous is not None
                else (None if previous else list(log.current))
            )

    def text(self, namespace: str, pod: str, container: str, *, previous: bool = False) -> str:
        """The output as `kubectl logs` prints it (Python API convenience)."""
        lines = self.snapshot((namespace, pod, container), previous) or []
        return "".join(line.text + "\n" for line in lines)

    def follow(self, key: LogKey, start: int) -> Iterator[list[LogLine]]:
        """Batches of new lines of the current run from index `start` until that run finishes."""
        with self._changed:
            log = self._logs.get(key)
            run = log.run if log else 0
        position = start
        while True:
            with self._changed:
                log = self._logs.get(key)
                if log is None or log.run != run or self._closed:
                    return
                fresh = log.current[position:]
                if not fresh:
                    if log.finished:
                        return
                    self._changed.wait(_FOLLOW_POLL)
                    continue
                position += len(fresh)
            yield fresh


@dataclass(frozen=True)
class LogOptions:
    container: str
    follow: bool
    previous: bool
    timestamps: bool
    tail_lines: int | None
    since_seconds: int | None
    limit_bytes: int | None


def _options(request: ApiRequest, pod: dict[str, Any]) -> LogOptions:
    query = request.query
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    init_names = [c.get("name", "") for c in (pod.get("spec") or {}).get("initContainers") or []]
    container = query.get("container")
    pod_name = pod["metadata"]["name"]
    if not container:
        if len(names) != 1:
            raise bad_request(
                f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(names)}]"
            )
        container = names[0]
    if container not in names + init_names:
        raise bad_request(f"container {container} is not valid for pod {pod_name}")
    for name in ("tailLines", "sinceSeconds", "limitBytes"):
        value = query.integer(name)
        least = 0 if name == "tailLines" else 1
        if value is not None and value < least:
            raise bad_request(f"{name}: Invalid value: {value}: must be at least {least}")
    return LogOptions(
        container=container,
        follow=query.flag("follow"),
        previous=query.flag("previous"),
        timestamps=query.flag("timestamps"),
        tail_lines=query.integer("tailLines"),
        since_seconds=query.integer("sinceSeconds"),
        limit_bytes=query.integer("limitBytes"),
    )


def _waiting_reason(pod: dict[str, Any], container: str) -> str | None:
    status = pod.get("status") or {}
    for entry in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []):
        if entry.get("name") == container:
            waiting = (entry.get("state") or {}).get("waiting")
            return (waiting or {}).get("reason", "ContainerCreating") if waiting is not None else None
    return "ContainerCreating"


def _render(lines: list[LogLine], timestamps: bool) -> bytes:
    if timestamps:
        return "".join(f"{log_timestamp(line.at)} {line.text}\n" for line in lines).encode()
    return "".join(line.text + "\n" for line in lines).encode()


def log_handler(store: Store, logs: LogStore, now: Callable[[], float]) -> Callable[[ApiRequest], Response]:
    """The `pods/log` subresource: GET with container, follow, previous, timestamps, tailLines,
    sinceSeconds and limitBytes."""

    def handle(request: ApiRequest) -> Response:
        if request.method not in ("GET", "HEAD"):
            raise method_not_allowed(request.method)
        pod = store.get("pods", request.route.name, request.route.namespace)
        options = _options(request, pod)
        key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"], options.container)
        lines = logs.snapshot(key, options.previous)
        seen = len(lines or [])
        if lines is None:
            if options.previous:
                raise bad_request(
                    f'previous terminated container "{options.container}" in pod "{key[1]}" not found'
                )
            reason = _waiting_reason(pod, options.container) or "ContainerCreating"
            raise bad_request(
                f'container "{options.container}" in pod "{key[1]}" is waiting to start: {reason}'
            )
        if options.since_seconds is not None:
            cutoff = now() - options.since_seconds
            lines = [line for line in lines if line.at >= cutoff]
        if options.tail_lines is not None:
            lines = lines[len(lines) - options.tail_lines :] if options.tail_lines else []
        body = _render(lines, options.timestamps)
        if options.limit_bytes is not None:
            body = body[: options.limit_bytes]
        if not options.follow or options.previous:
            return Response(200, body, "text/plain")
        return Response(200, _stream(body, logs, key, seen, options), "text/plain")

    return handle


def _stream(first: bytes, logs: LogStore, key: LogKey, start: int, options: LogOptions) -> Iterator[bytes]:
    sent = len(first)
    yield first
    for batch in logs.follow(key, start):
        chunk = _render(batch, options.timestamps)
        if options.limit_bytes is not None:
            chunk = chunk[: max(options.limit_bytes - sent, 0)]
            if not chunk:
                return
        sent += len(chunk)
        yield chunk
