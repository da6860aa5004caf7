"""Fault injection: latency, error responses, dropped watch streams and 410 on the next watch.

Faults match requests by verb (get, list, watch, create, update, patch, delete, deletecollection),
resource (`pods`, `tfjobs.argoml.io`; a bare plural matches any group), HTTP method, namespace and a path
regex; `times` bounds how often one fires (None: until removed).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from kubesim.errors import ApiError, conflict, internal_error, service_unavailable, too_many_requests


@dataclass(frozen=True)
class RequestFacts:
    """What a fault can match on, extracted by the server from each request."""

    method: str
    path: str
    verb: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass
class Fault:
    kind: str  # latency, error, drop_watch, expire_watch
    verb: str | None = None
    resource: str | None = None
    method: str | None = None
    namespace: str | None = None
    path: str | None = None
    times: int | None = 1
    status: int = 500
    retry_after: int = 1
    seconds: float = 0.0
    after_events: int = 0
    fired: int = field(default=0)

    def matches(self, facts: RequestFacts) -> bool:
        if self.verb and self.verb != facts.verb:
            return False
        if self.resource and self.resource not in (facts.resource, facts.resource.split(".", 1)[0]):
            return False
        if self.method and self.method.upper() != facts.method:
            return False
        if self.namespace is not None and self.namespace != facts.namespace:
            return False
        return not (self.path and not re.search(self.path, facts.path))

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.fired >= self.times

    def error(self, facts: RequestFacts) -> ApiError:
        if self.status == 429:
            return too_many_requests(self.retry_after)
        if self.status == 409:
            return conflict(facts.resource or "resource", "", facts.name or "object")
        if self.status == 503:
            error = service_unavailable(
                "injected fault: the server is currently unable to handle the request"
            )
            error.headers["Retry-After"] = str(self.retry_after)
            return error
        if self.status == 500:
            return internal_error("injected fault")
        return ApiError(self.status, "InjectedFault", f"injected fault with status {self.status}")


class Faults:
    """The registry of active faults; thread-safe, consulted by the server on every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def _add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def latency(self, seconds: float, *, times: int | None = None, **match: Any) -> Fault:
        """Delay matching requests by `seconds` (real time) before they are served."""
        return self._add(Fault("latency", seconds=seconds, times=times, **match))

    def fail(self, status: int, *, times: int | None = 1, retry_after: int = 1, **match: Any) -> Fault:
        """Answer matching requests with `status` (409, 429 with Retry-After, 500, 503, ...)."""
        return self._add(Fault("error", status=status, times=times, retry_after=retry_after, **match))

    def drop_watch(self, *, after_events: int = 0, times: int | None = 1, **match: Any) -> Fault:
        """Cut matching watch streams abruptly (no final chunk) after `after_events` events."""
        return self._add(Fault("drop_watch", verb="watch", after_events=after_events, times=times, **match))

    def expire_watch(self, *, times: int | None = 1, **match: Any) -> Fault:
        """Make the next matching watch answer with a 410 Expired ERROR event, as after compaction."""
        return self._add(Fault("expire_watch", verb="watch", times=times, **match))

    def remove(self, fault: Fault) -> None:
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def active(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def take(self, kind: str, facts: RequestFacts) -> Fault | None:
        """The first matching fault of `kind`, counted as fired (exhausted ones are dropped)."""
        with self._lock:
            for fault in self._faults:
                if fault.kind == kind and not fault.exhausted and fault.matches(facts):
                    fault.fired += 1
                    if fault.exhausted:
                        self._faults.remove(fault)
                    return fault
        return None
