"""Kubernetes Events on our resources, for what users must see in `kubectl describe`.

Recorded through `events.k8s.io/v1` by default; a recorder made with `api=CORE_EVENT` writes core `v1`
Events instead, as client-go's `record` package (and so controller-runtime, and Kubeflow Trainer) does:
`firstTimestamp`, `lastTimestamp` and `count`, which events.k8s.io may not set and clients such as
Kubeflow's SDK require.

A reconcile may run hundreds of times for one object, so two filters stand between it and the API server,
as in client-go's event recorders:
- repeats of the same event (same object, type, reason, action and note) within `series_window` become one
  Event whose `series.count` grows; the count is written on the first repeat, then at most every
  `series_flush_seconds` (and by `flush()`), never once per repeat;
- new events per object and reason pass a token bucket (`burst`, one more every `refill_seconds`);
  beyond it they are dropped and counted in `dropped`.
Recording never raises: an Event is a courtesy, and a failure to write one must not fail a reconcile.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .client import KubeClient, get_client
from .errors import AlreadyExists, ApiError, NotFound
from .resources import CORE_EVENT, EVENT, ResourceType
from .times import format_time

logger = logging.getLogger(__name__)

NORMAL, WARNING = "Normal", "Warning"
CONTROLLER_PREFIX = "argoml.io/"
MAX_NOTE_BYTES = 1024  # the API server rejects longer notes
MAX_WORD_LENGTH = 128  # reason, action, reportingInstance
MAX_NAME_LENGTH = 253
_CONTROLLER = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")

ObjectRef = dict[str, str]


@dataclass
class _Series:
    """One Event object in the cluster and how often its event happened."""

    body: dict[str, Any]  # the Event as first created, to recreate it if it expires
    subject: str  # the name of the object the Event is about, which the Event's name starts with
    name: str  # set once created
    namespace: str
    count: int
    last_seen: float  # monotonic
    last_observed: datetime
    written_count: int  # the count the cluster has
    written_at: float  # monotonic


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass(frozen=True)
class _Write:
    """An API write decided under the lock and carried out outside it: create the series' Event, or
    patch it with `series_patch`."""

    series: _Series
    series_patch: dict[str, Any] | None = None


class EventRecorder:
    """Records Events for one controller; one per controller and process (see `recorder_for`).

    `api` is EVENT (events.k8s.io/v1: eventTime, series) or CORE_EVENT (core v1: firstTimestamp,
    lastTimestamp, count, source); the spam filter and the series logic are the same for both.
    """

    def __init__(
        self,
        controller: str,
        *,
        api: ResourceType = EVENT,
        client: KubeClient | None = None,
        instance: str | None = None,
        burst: int = 25,
        refill_seconds: float = 300.0,
        series_window: float = 360.0,
        series_flush_seconds: float = 30.0,
        max_keys: int = 4096,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        if not _CONTROLLER.match(controller):
            raise ValueError(
                f"controller must be lowercase letters, digits, '-' and '.', got {controller!r} "
                f"(it becomes reportingController {CONTROLLER_PREFIX}<controller>)"
            )
        if burst < 1 or refill_seconds <= 0:
            raise ValueError("the spam filter needs burst >= 1 and refill_seconds > 0")
        if api not in (EVENT, CORE_EVENT):
            raise ValueError(f"api must be {EVENT} or {CORE_EVENT}, not {api}")
        self.api = api
        self.controller = controller
        self.reporting_controller = CONTROLLER_PREFIX + controller
        self.instance = (instance or f"{controller}-{socket.gethostname()}")[:MAX_WORD_LENGTH]
        self._client = client
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.series_window = series_window
        self.series_flush_seconds = series_flush_seconds
        self.max_keys = max_keys
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._series: OrderedDict[tuple[Any, ...], _Series] = OrderedDict()
        self._buckets: OrderedDict[tuple[Any, ...], _Bucket] = OrderedDict()
        self.dropped = 0

    # -- recording -------------------------------------------------------------------------------------
    def normal(self, regarding: dict[str, Any], reason: str, note: str, *, action: str) -> bool:
        return self.event(regarding, NORMAL, reason, note, action=action)

    def warning(self, regarding: dict[str, Any], reason: str, note: str, *, action: str) -> bool:
        return self.event(regarding, WARNING, reason, note, action=action)

    def event(
        self,
        regarding: dict[str, Any],
        type_: str,
        reason: str,
        note: str,
        *,
        action: str,
        related: dict[str, Any] | None = None,
    ) -> bool:
        """Record an event about `regarding` (the object as a dict). False when the spam filter dropped it.

        `reason` says what happened in one CamelCase word (`SuccessfulCreatePod`); `action` what the
        controller did or failed to do (`Create`, `Delete`, `Reconcile`); `note` is for humans.
        """
        ref = reference(regarding)
        if type_ not in (NORMAL, WARNING):
            raise ValueError(f"type must be {NORMAL} or {WARNING}, not {type_!r}")
        for field, value in (("reason", reason), ("action", action)):
            if not value or len(value) > MAX_WORD_LENGTH:
                raise ValueError(f"{field} must be 1 to {MAX_WORD_LENGTH} characters, got {value!r}")
        note = truncate_note(note)
        related_ref = reference(related) if related else None
        identity = _identity(ref)
        key = (identity, type_, reason, action, note, _identity(related_ref) if related_ref else None)
        template = self._body(ref, type_, reason, note, action, related_ref)
        with self._lock:
            recorded, write = self._decide(key, identity, reason, template)
        if write is not None:
            self._carry_out(write)
        return recorded

    def flush(self) -> None:
        """Write every series count the cluster does not have yet (e.g. before a worker shuts down)."""
        with self._lock:
            due = [series for series in self._series.values() if series.count > series.written_count]
            now = self._clock()
            writes = [self._series_write(series, now) for series in due]
        for write in writes:
            self._carry_out(write)

    # -- deciding (under the lock) ---------------------------------------------------------------------
    def _decide(
        self, key: tuple[Any, ...], identity: tuple[str, ...], reason: str, template: dict[str, Any]
    ) -> tuple[bool, _Write | None]:
        """(recorded, the write to make, if any) for one occurrence of the event `key`."""
        now, wall = self._clock(), self._wall_clock()
        series = self._series.get(key)
        if series is not None and now - series.last_seen > self.series_window:
            del self._series[key]
            series = None
        if series is not None:
            series.count += 1
            series.last_seen, series.last_observed = now, wall
            self._series.move_to_end(key)
            first_repeat = series.written_count < 2
            if not first_repeat and now - series.written_at < self.series_flush_seconds:
                return True, None  # counted; written with a later repeat or by flush()
            return True, self._series_write(series, now)
        if not self._take_token((identity, reason), now):
            self.dropped += 1
            logger.debug("event %s on %s dropped by the spam filter", reason, "/".join(identity))
            return False, None
        body = {**template, **self._first_occurrence(wall)}
        subject = (body.get("regarding") or body["involvedObject"])["name"]
        series = _Series(body, subject, "", body["metadata"]["namespace"], 1, now, wall, 1, now)
        self._remember(self._series, key, series)
        return True, _Write(series)

    def _first_occurrence(self, wall: datetime) -> dict[str, Any]:
        if self.api is CORE_EVENT:
            return {"firstTimestamp": format_time(wall), "lastTimestamp": format_time(wall), "count": 1}
        return {"eventTime": micro_time(wall)}

    def _series_write(self, series: _Series, now: float) -> _Write:
        series.written_count, series.written_at = series.count, now
        return _Write(series, self.series_patch(series.count, series.last_observed))

    def series_patch(self, count: int, last_observed: datetime) -> dict[str, Any]:
        """The patch that brings an Event's repeat count up to `count`: client-go's `count` and
        `lastTimestamp` for core Events, the `series` of events.k8s.io."""
        if self.api is CORE_EVENT:
            return {"count": count, "lastTimestamp": format_time(last_observed)}
        return {"series": {"count": count, "lastObservedTime": micro_time(last_observed)}}

    def _take_token(self, key: tuple[Any, ...], now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
            self._remember(self._buckets, key, bucket)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) / self.refill_seconds)
        bucket.updated = now
        self._buckets.move_to_end(key)
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def _remember(self, table: OrderedDict[Any, Any], key: Any, value: Any) -> None:
        """Add to an LRU table bounded by `max_keys`, so memory stays flat however many objects pass."""
        table[key] = value
        while len(table) > self.max_keys:
            table.popitem(last=False)

    # -- writing (outside the lock) --------------------------------------------------------------------
    def _body(
        self,
        ref: ObjectRef,
        type_: str,
        reason: str,
        note: str,
        action: str,
        related: ObjectRef | None,
    ) -> dict[str, Any]:
        """The Event without its name and time, which each new occurrence gets. A core v1 Event is made as
        client-go's recorder makes it: `source.component` is what `kubectl describe` shows as From,
        `reportingComponent`/`reportingInstance` what newer readers look at."""
        body: dict[str, Any] = {
            "apiVersion": self.api.api_version,
            "kind": self.api.kind,
            # An event lives in its object's namespace; one about a cluster-scoped object in "default".
            "metadata": {"namespace": ref.get("namespace") or "default"},
        }
        if self.api is CORE_EVENT:
            body |= {
                "involvedObject": ref,
                "reason": reason,
                "message": note,
                "type": type_,
                "action": action,
                "source": {"component": self.reporting_controller},
                "reportingComponent": self.reporting_controller,
                "reportingInstance": self.instance,
            }
        else:
            body |= {
                "reportingController": self.reporting_controller,
                "reportingInstance": self.instance,
                "action": action,
                "reason": reason,
                "note": note,
                "type": type_,
                "regarding": ref,
            }
        if related is not None:
            body["related"] = related
        return body

    def _carry_out(self, write: _Write) -> None:
        series = write.series
        if write.series_patch is not None and not series.name:
            series.written_count = 1  # its creation is still under way: a later write carries the count
            return
        try:
            client = self._client or get_client()
        except RuntimeError as error:  # no cluster configured (e.g. a management command run locally)
            logger.warning("could not record event %s: %s", series.body["reason"], error)
            return
        try:
            if write.series_patch is None:
                series.name = _create(client, self.api, series)
                return
            try:
                client.patch(self.api, series.name, write.series_patch, series.namespace)
            except NotFound:
                # The Event expired (the API server keeps them about an hour) or its creation failed:
                # start anew, carrying the series, as client-go does.
                series.body = {**series.body, **write.series_patch}
                series.name = _create(client, self.api, series)
        except ApiError as error:
            logger.warning("could not record event %s on %s: %s", series.body["reason"], series.name, error)


def _create(client: KubeClient, api: ResourceType, series: _Series) -> str:
    """Create the series' Event under a fresh name; returns the name it got."""
    body = series.body
    for attempt in range(2):
        name = event_name(series.subject, time.time_ns() + attempt)
        body["metadata"] = {**body["metadata"], "name": name}
        try:
            client.create(api, body)
            return name
        except AlreadyExists:
            # Another process chose the same nanosecond for the same object; take the next one.
            continue
    raise AlreadyExists(f"event names for {series.subject} kept colliding")


def reference(obj: dict[str, Any] | None) -> ObjectRef:
    """An ObjectReference to `obj` (a raw dict); it must say its kind and name."""
    obj = obj or {}
    metadata = obj.get("metadata") or {}
    if not obj.get("kind") or not metadata.get("name"):
        raise ValueError(
            "regarding: the object must have kind and metadata.name to be referenced by an Event"
        )
    ref = {
        "apiVersion": obj.get("apiVersion") or "",
        "kind": obj["kind"],
        "namespace": metadata.get("namespace") or "",
        "name": metadata["name"],
        "uid": metadata.get("uid") or "",
        "resourceVersion": metadata.get("resourceVersion") or "",
    }
    return {field: value for field, value in ref.items() if value}


def _identity(ref: ObjectRef) -> tuple[str, ...]:
    """What makes two references the same object (the resourceVersion changes with every write)."""
    return (ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", ""), ref.get("uid", ""))


def truncate_note(note: str) -> str:
    """At most MAX_NOTE_BYTES of UTF-8, cut on a character boundary with an ellipsis."""
    encoded = note.encode()
    if len(encoded) <= MAX_NOTE_BYTES:
        return note
    return encoded[: MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."


def event_name(object_name: str, nanos: int) -> str:
    """client-go's naming: `<object>.<nanoseconds in hex>`, within the 253 characters a name may have."""
    suffix = f".{nanos:x}"
    return object_name[: MAX_NAME_LENGTH - len(suffix)] + suffix


def micro_time(moment: datetime) -> str:
    """A MicroTime as the API writes it: RFC 3339 in UTC with microseconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_recorders: dict[tuple[str, ResourceType], EventRecorder] = {}
_recorders_pid = os.getpid()
_recorders_lock = threading.Lock()


def recorder_for(controller: str, api: ResourceType = EVENT) -> EventRecorder:
    """The process's recorder for `controller` writing through `api` (EVENT or CORE_EVENT); a forked
    worker starts with its own, empty filters."""
    global _recorders_pid
    with _recorders_lock:
        if _recorders_pid != os.getpid():
            _recorders.clear()
            _recorders_pid = os.getpid()
        recorder = _recorders.get((controller, api))
        if recorder is None:
            recorder = _recorders[controller, api] = EventRecorder(controller, api=api)
        return recorder


def flush_all() -> None:
    """Write the pending series counts of every recorder of this process (at worker shutdown)."""
    with _recorders_lock:
        recorders = list(_recorders.values()) if _recorders_pid == os.getpid() else []
    for recorder in recorders:
        recorder.flush()
