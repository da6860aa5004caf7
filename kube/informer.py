"""List-then-watch mirror of one resource type, with an in-memory cache by key (KubeSpawner's reflector,
client-go's informer).

It lists in pages, then watches from the list's resourceVersion with bookmarks. A stream that ends or drops
is resumed from the last resourceVersion seen; a 410 (too old) means relist, and the relist is compared with
the cache so that objects changed or deleted while the watch was down still reach the handler. Nothing here
decodes typed models: events are raw dicts.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .client import KubeClient
from .errors import ApiError, Gone
from .resources import ResourceType

logger = logging.getLogger(__name__)

ObjectKey = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped objects
Handler = Callable[[str, dict[str, Any]], None]  # (ADDED | MODIFIED | DELETED, object)

INITIAL_BACKOFF_SECONDS = 0.2
MAX_BACKOFF_SECONDS = 30.0


def object_key(obj: dict[str, Any]) -> ObjectKey:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata["name"]


@dataclass
class Informer:
    client: KubeClient
    rtype: ResourceType
    handler: Handler
    namespace: str | None = None
    label_selector: str | None = None
    page_size: int = 500
    watch_timeout_seconds: int = 300
    # A watch that delivers nothing, not even a bookmark, for this long is presumed dead and restarted.
    silence_timeout_seconds: float = 120.0
    cache: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    resource_version: str | None = None
    synced: threading.Event = field(default_factory=threading.Event)
    relists: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _stream: Any = None

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
            except ApiError as error:
                if self._stop.is_set():
                    break
                logger.warning("watch of %s failed: %s; retrying in %.1fs", self.rtype, error, backoff)
                self._stop.wait(backoff * random.uniform(0.8, 1.2))  # noqa: S311 - jitter
                backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)

    def stop(self) -> None:
        """Stop now: also interrupts a watch blocked on the network."""
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cache.get((namespace, name))

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
                fresh[object_key(item)] = item
            resource_version = (page.get("metadata") or {}).get("resourceVersion") or resource_version
        previous, self.cache = self.cache, fresh
        self.resource_version = resource_version
        self.relists += 1
        for key, obj in fresh.items():
            old = previous.get(key)
            if old is None:
                self.handler("ADDED", obj)
            elif _rv(old) != _rv(obj):
                self.handler("MODIFIED", obj)
        for key, old in previous.items():
            if key not in fresh:
                self.handler("DELETED", old)
        self.synced.set()

    def watch_once(self) -> None:
        """One watch request, until the server ends it, the stream drops, or `stop()`."""
        self._stream = self.client.watch(
            self.rtype,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=self.watch_timeout_seconds,
            silence_timeout=self.silence_timeout_seconds,
        )
        try:
            for event in self._stream:
                if self._stop.is_set():
                    return
                self.apply(event)
        finally:
            self._stream.close()
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
        if kind == "DELETED":
            self.cache.pop(key, None)
        else:
            self.cache[key] = obj
        self.resource_version = resource_version or self.resource_version
        self.handler(kind, obj)


def _rv(obj: dict[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion")
