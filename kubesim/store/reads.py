"""Reads: get, list with selectors and limit/continue pagination, and watch registration with replay."""

from __future__ import annotations

import bisect
from typing import Any

from kubesim.errors import ApiError, bad_request, gone, not_found
from kubesim.jsonutil import clone, decode_token, encode_token
from kubesim.resources import ResourceType
from kubesim.selectors import Selector, parse_field_selector, parse_label_selector
from kubesim.store.base import StoreBase
from kubesim.store.events import ADDED, Watcher


class Page:
    """One page of a list: stored snapshots (not copies) plus the list metadata."""

    def __init__(
        self,
        items: list[dict[str, Any]],
        resource_version: str,
        continue_token: str = "",
        remaining: int | None = None,
    ) -> None:
        self.items = items
        self.resource_version = resource_version
        self.continue_token = continue_token
        self.remaining = remaining

    def list_metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"resourceVersion": self.resource_version}
        if self.continue_token:
            metadata["continue"] = self.continue_token
        if self.remaining is not None:
            metadata["remainingItemCount"] = self.remaining
        return metadata


class ReadsMixin(StoreBase):
    def get(self, resource: str | ResourceType, name: str, namespace: str | None = None) -> dict[str, Any]:
        """A copy of one object; 404 ApiError if it does not exist."""
        return clone(self.get_snapshot(self.resource(resource), name, namespace))

    def get_or_none(
        self, resource: str | ResourceType, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """A copy of one object, or None when there is none: how a controller reads what may be gone."""
        try:
            return self.get(resource, name, namespace)
        except ApiError:
            return None

    def get_snapshot(self, resource: ResourceType, name: str, namespace: str | None) -> dict[str, Any]:
        """The stored object itself (read-only!): the HTTP layer serialises it without copying."""
        namespace = (namespace or "default") if resource.namespaced else ""
        with self.lock:
            found = self._snapshot(resource, namespace, name)
        if found is None:
            raise not_found(resource.plural, resource.group, name)
        return found

    def exists(self, resource: str | ResourceType, name: str, namespace: str | None = None) -> bool:
        try:
            self.get_snapshot(self.resource(resource), name, namespace)
        except ApiError:
            return False
        return True

    def list(
        self,
        resource: str | ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        """A List object (copies), as GET on a collection returns it."""
        resource = self.resource(resource)
        page = self.list_page(
            resource,
            namespace,
            parse_label_selector(label_selector),
            parse_field_selector(field_selector, resource.field_labels),
            limit,
            continue_token,
        )
        return {
            "apiVersion": resource.api_version(),
            "kind": resource.list_kind,
            "metadata": page.list_metadata(),
            "items": [clone(item) for item in page.items],
        }

    def list_page(
        self,
        resource: ResourceType,
        namespace: str | None,
        labels: Selector,
        fields: Selector,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Page:
        if not resource.namespaced:
            namespace = None
        start: tuple[str, str] | None = None
        if continue_token:
            start = self._decode_continue(continue_token)
        with self.lock:
            keys = self._ordered_keys(resource, namespace or None)
            position = bisect.bisect_right(keys, start) if start else 0
            buckets = self._objects.get(resource.key, {})
            filtered = not (labels.empty and fields.empty)
            items: list[dict[str, Any]] = []
            index = position
            while index < len(keys) and (not limit or len(items) < limit):
                ns, name = keys[index]
                obj = buckets[ns][name]
                if not filtered or (labels.matches(obj) and fields.matches(obj)):
                    items.append(obj)
                index += 1
            rv = str(self._rv)
        if not limit or index >= len(keys):
            return Page(items, rv)
        last = items[-1]["metadata"]
        token = encode_token(
            {"start": [last.get("namespace", ""), last["name"]], "rv": rv, "issued": self.clock.time()}
        )
        return Page(items, rv, token, None if filtered else len(keys) - index)

    def _decode_continue(self, token: str) -> tuple[str, str]:
        try:
            payload = decode_token(token)
            start = payload["start"]
            issued = float(payload["issued"])
        except (ValueError, KeyError, TypeError):
            raise bad_request("continue key is not valid: malformed continue token") from None
        if self.clock.time() - issued > self.continue_ttl:
            raise gone(
                "The provided continue parameter is too old to display a consistent "
                "list result. You can start a new list without the continue parameter."
            )
        return (str(start[0]), str(start[1]))

    def watch(
        self,
        resource: str | ResourceType,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Watcher:
        """Open a watch. Without a resourceVersion (or "0") it starts with ADDED for every current object;
        with one it replays the logged events after it (410 ApiError if they were compacted away)."""
        resource = self.resource(resource)
        return self.open_watch(
            resource,
            namespace,
            resource_version,
            parse_label_selector(label_selector),
            parse_field_selector(field_selector, resource.field_labels),
        )

    def open_watch(
        self,
        resource: ResourceType,
        namespace: str | None,
        resource_version: str | None,
        labels: Selector,
        fields: Selector,
    ) -> Watcher:
        namespace = namespace if resource.namespaced else None
        watcher = Watcher(resource, namespace or None, labels, fields)
        with self.lock:
            if resource_version in (None, "", "0"):
                keys = self._ordered_keys(resource, namespace or None)
                buckets = self._objects.get(resource.key, {})
                initial = [
                    (ADDED, buckets[ns][name]) for ns, name in keys if watcher.matches(buckets[ns][name])
                ]
            else:
                try:
                    since = int(resource_version or 0)
                except ValueError:
                    raise bad_request(f'invalid resource version "{resource_version}"') from None
                initial = []
                for event in self._log.since(since, resource.key):
                    single = Watcher(resource, namespace or None, labels, fields)
                    single.offer(event)
                    initial.extend(single.take(0))
            watcher.preload(initial)
            self._register_watcher(watcher)
        return watcher
