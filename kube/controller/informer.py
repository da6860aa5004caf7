"""List-then-watch mirror of one resource type, with an in-memory cache by key (KubeSpawner's reflector,
client-go's informer).

It lists in pages, then watches from the list's resourceVersion with bookmarks. A stream that ends or drops
is resumed from the last resourceVersion seen; a 410 (too old) means relist, and the relist is compared with
the cache so that objects changed or deleted while the watch was down still reach the handler. A watch
silent for `silence_timeout_seconds` (not even a bookmark) is presumed dead: the read times out and the
watch is restarted (the watchdog). Nothing here decodes typed models: events are raw dicts.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kube.client import KubeClient, WatchStream
from kube.errors import ApiError, Gone, ServerError
from kube.logging import runtime_logger
from kube.resources import ResourceType

logger = runtime_logger(__name__)

ObjectKey = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped objects
Handler = Callable[[str, dict[str, Any]], None]  # (ADDED | MODIFIED | DELETED, object)
Transform = Callable[[dict[str, Any]], dict[str, Any]]
IndexFunc = Callable[[dict[str, Any]], Iterable[Hashable]]  # an object → the index values it is found under
Index = dict[Hashable, dict[ObjectKey, dict[str, Any]]]  # an index value → the objects filed under it

INITIAL_BACKOFF_SECONDS = 0.2
#: The longest wait between two attempts while the API server is away: once it is back, a watch resumes
#: within this (plus jitter), so the controllers recover within seconds of a restart, not half a minute.
#: Every informer tries once per wait meanwhile: a dozen light requests per 8 s. A 429's Retry-After is
#: honoured beyond it.
MAX_BACKOFF_SECONDS = 8.0
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"


def object_key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata["name"]


def strip_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop managedFields and kubectl's last-applied copy before caching: no controller reads them, and
    they are often half of an object's size (client-go's informers do the same with a transform)."""
    metadata = obj.get("metadata")
    if metadata:
        metadata.pop("managedFields", None)
        annotations = metadata.get("annotations")
        if annotations and LAST_APPLIED_ANNOTATION in annotations:
            del annotations[LAST_APPLIED_ANNOTATION]
    return obj


@dataclass
class Informer:
    """Keeps `cache` equal to the server's objects of one type and calls `handler` on every change.

    `run()` blocks until `stop()`; run it on a thread of its own. The handler runs on that thread, in
    event order, and must not raise (an exception is logged and the stream resumed).
    """

    client: KubeClient
    rtype: ResourceType
    handler: Handler
    namespace: str | None = None
    label_selector: str | None = None
    page_size: int = 500
    # The server ends each watch after about this long (jittered up to 2x, as client-go does).
    watch_timeout_seconds: int = 300
    # The watchdog: a watch that delivers nothing, not even a bookmark, for this long is restarted.
    silence_timeout_seconds: float = 120.0
    transform: Transform = strip_bookkeeping
    # Named indexes of the cache (client-go's Indexers): `by_index(name, value)` finds the objects whose
    # function returned `value` without scanning the cache, e.g. a job's pods by their owner.
    indexers: dict[str, IndexFunc] = field(default_factory=dict)
    # Called (on the watch thread) once a relist replaced the cache, before its differences are handled.
    on_relist: Callable[[], None] | None = None
    resource_version: str | None = None
    synced: threading.Event = field(default_factory=threading.Event)
    relists: int = 0
    watches: int = 0
    _cache: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    _indexes: dict[str, Index] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _stream: WatchStream | None = None

    # -- public --------------------------------------------------------------------------------------
    def run(self) -> None:
        """List, then watch until `stop()`; errors back off and resume, never end the loop."""
        backoff = INITIAL_BACKOFF_SECONDS
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self.relist()
                self.watch_once()
                backoff = INITIAL_BACKOFF_SECONDS
            except Gone:
                logger.info("watch of %s expired (410); relisting", self.rtype)
                self.resource_version = None
            except Exception as error:  # the loop must outlive any single failure
                if self._stop.is_set():
                    break
                delay = max(backoff, getattr(error, "retry_after", None) or 0.0)
                logger.warning("watch of %s failed: %s; retrying in %.1fs", self.rtype, error, delay)
                self._stop.wait(delay * random.uniform(0.8, 1.2))  # noqa: S311 - jitter
                backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)

    def stop(self) -> None:
        """Stop now: no event is handled after this returns, and a watch blocked on the network ends."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._cache.get((namespace, name))

    def by_index(self, index: str, value: Hashable) -> list[dict[str, Any]]:
        """The cached objects filed under `value` in the named index (shared with the cache: read only)."""
        if index not in self.indexers:
            raise KeyError(f"index: {index!r} is not one of this informer's indexes {sorted(self.indexers)}.")
        with self._lock:
            return list(self._indexes.get(index, {}).get(value, {}).values())

    def cached_keys(self) -> list[ObjectKey]:
        """A snapshot of the cached keys, safe to take from any thread."""
        with self._lock:
            return list(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    # -- steps ---------------------------------------------------------------------------------------
    def relist(self) -> None:
        """Replace the cache with a fresh paginated list; tell the handler what changed meanwhile."""
        fresh: dict[ObjectKey, dict[str, Any]] = {}
        resource_version = None
        for page in self.client.list_pages(
            self.rtype, self.namespace, label_selector=self.label_selector, page_size=self.page_size
        ):
            for item in page.get("items") or []:
                item.setdefault("kind", self.rtype.kind)
                item.setdefault("apiVersion", self.rtype.api_version)
                fresh[object_key(item)] = self.transform(item)
            # The watch starts from the first page's resourceVersion. An apiserver serves every page from
            # that one snapshot; a server that does not may show later pages newer, and the watch then
            # replays those changes again, which is harmless, where starting later would lose some.
            resource_version = resource_version or (page.get("metadata") or {}).get("resourceVersion")
            if self._stop.is_set():
                return
        indexes = {name: _build_index(fresh, function) for name, function in self.indexers.items()}
        with self._lock:
            previous, self._cache, self._indexes = self._cache, fresh, indexes
        self.resource_version = resource_version
        self.relists += 1
        if self.on_relist is not None:
            self.on_relist()
        for key, obj in fresh.items():
            old = previous.get(key)
            if old is None:
                self._handle("ADDED", obj)
            elif _rv(old) != _rv(obj):
                self._handle("MODIFIED", obj)
        for key, old in previous.items():
            if key not in fresh:
                self._handle("DELETED", old)
        self.synced.set()

    def watch_once(self) -> None:
        """One watch request, until the server ends it, the stream drops or goes silent, or `stop()`.

        A stream that drops or goes silent after it delivered events, or after it stayed open for the
        silence timeout, ended normally enough: the caller resumes at once. One that fails sooner is an
        error and backs off, so a server that cuts every stream is not hammered.
        """
        self.watches += 1
        opened = time.monotonic()
        delivered = False
        stream = self.client.watch(
            self.rtype,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=round(self.watch_timeout_seconds * random.uniform(1.0, 2.0)),  # noqa: S311
            silence_timeout=self.silence_timeout_seconds,
        )
        self._stream = stream
        try:
            # stop() may have run before _stream was set; it closes whatever it sees after setting _stop.
            if self._stop.is_set():
                return
            for event in stream:
                if self._stop.is_set():
                    return
                delivered = True
                self.apply(event)
        except ServerError as error:
            if not (delivered or time.monotonic() - opened >= self.silence_timeout_seconds):
                raise
            logger.info("watch of %s ended: %s; resuming from %s", self.rtype, error, self.resource_version)
        finally:
            stream.close()
            self._stream = None

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one watch event into the cache and pass it on."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise Gone(obj.get("message") or "resource version too old", status=410, body=obj)
            raise ApiError(obj.get("message") or f"watch error {code}", status=code or 0, body=obj)
        resource_version = _rv(obj)
        if kind == "BOOKMARK":
            self.resource_version = resource_version or self.resource_version
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            logger.warning("ignoring watch event of unknown type %r", kind)
            return
        key = object_key(obj)
        obj = self.transform(obj)
        with self._lock:
            old = self._cache.pop(key, None) if kind == "DELETED" else self._cache.get(key)
            if kind != "DELETED":
                self._cache[key] = obj
            for name, function in self.indexers.items():
                index = self._indexes.setdefault(name, {})
                if old is not None:
                    _unfile(index, function(old), key)
                if kind != "DELETED":
                    for value in function(obj):
                        index.setdefault(value, {})[key] = obj
        self.resource_version = resource_version or self.resource_version
        self._handle(kind, obj)

    def _handle(self, kind: str, obj: dict[str, Any]) -> None:
        if self._stop.is_set():
            return
        try:
            self.handler(kind, obj)
        except Exception:
            logger.exception("handler of %s failed on %s %s", self.rtype, kind, object_key(obj))


def _build_index(cache: dict[ObjectKey, dict[str, Any]], function: IndexFunc) -> Index:
    index: Index = {}
    for key, obj in cache.items():
        for value in function(obj):
            index.setdefault(value, {})[key] = obj
    return index


def _unfile(index: Index, values: Iterable[Hashable], key: ObjectKey) -> None:
    for value in values:
        entries = index.get(value)
        if entries is not None:
            entries.pop(key, None)
            if not entries:
                del index[value]


def _rv(obj: dict[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")
