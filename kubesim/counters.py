"""Per-route request counters, so tests can assert how a client used the API (e.g. "one list, then watch")."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class RouteKey:
    method: str
    route: str  # e.g. /api/v1/namespaces/{namespace}/pods/{name}
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection, discovery
    resource: str  # e.g. pods, jobs.batch, pods/status ("" for non-resource paths)
    code: int


class Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[RouteKey] = Counter()

    def record(self, key: RouteKey) -> None:
        with self._lock:
            self._counts[key] += 1

    def count(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        method: str | None = None,
        route: str | None = None,
        code: int | None = None,
    ) -> int:
        """How many requests matched every given criterion."""
        with self._lock:
            return sum(
                n
                for key, n in self._counts.items()
                if (verb is None or key.verb == verb)
                and (resource is None or key.resource == resource)
                and (method is None or key.method == method.upper())
                and (route is None or key.route == route)
                and (code is None or key.code == code)
            )

    def by_route(self) -> dict[str, int]:
        """`"GET /api/v1/namespaces/{namespace}/pods"` → count."""
        totals: Counter[str] = Counter()
        with self._lock:
            for key, n in self._counts.items():
                totals[f"{key.method} {key.route}"] += n
        return dict(totals)

    def by_verb(self) -> dict[str, int]:
        """`"list pods"` → count."""
        totals: Counter[str] = Counter()
        with self._lock:
            for key, n in self._counts.items():
                totals[f"{key.verb} {key.resource}".strip()] += n
        return dict(totals)

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
