"""Request and response values passed between the HTTP layer, the verbs and subresource plug-ins."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesim.faults import Faults, RequestFacts
from kubesim.identity import User
from kubesim.jsonutil import dumps
from kubesim.resources import ResourceType
from kubesim.server.negotiation import Accept, Query
from kubesim.server.routing import Route
from kubesim.store import Store

#: the verb the API server authorizes for each method a proxy request may use (RequestInfoFactory)
PROXY_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass
class ApiRequest:
    method: str
    path: str
    route: Route
    query: Query
    headers: dict[str, str]
    body: bytes
    accept: Accept = field(default_factory=Accept)
    resource: ResourceType | None = None
    #: the verified TLS client certificate (`ssl.SSLSocket.getpeercert()`), if the client sent one
    peer_certificate: dict[str, Any] | None = None
    #: who sent it, once the gate authenticated it (None when the server runs without a gate)
    user: User | None = None
    #: the raw query, for the parameters that repeat (exec's `command`, port-forward's `ports`)
    query_string: str = ""
    #: the caller's IP address (the proxy subresources add it to X-Forwarded-For)
    client_address: str = ""

    @property
    def facts(self) -> RequestFacts:
        return RequestFacts(
            self.method, self.path, self.verb, self.resource_name, self.route.namespace or "", self.route.name
        )

    @property
    def resource_name(self) -> str:
        if self.route.kind != "resource":
            return ""
        base = self.resource.key if self.resource else self.route.plural
        return f"{base}/{self.route.subresource}" if self.route.subresource else base

    @property
    def verb(self) -> str:
        """The Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection)."""
        if self.route.kind != "resource":
            return self.route.kind
        if self.route.proxy_path is not None:  # a connect verb: the method alone names it (no list, no watch)
            return PROXY_VERBS.get(self.method, "")
        named = bool(self.route.name)
        if self.method == "GET":
            if self.route.legacy_watch or self.query.flag("watch"):
                return "watch"
            return "get" if named else "list"
        return {
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if named else "deletecollection",
        }.get(self.method, self.method.lower())


@dataclass(frozen=True)
class Upgraded:
    """The connection after `101 Switching Protocols`: the socket, and what the HTTP layer had already read
    past the request (a client may send its first frames right behind the handshake)."""

    socket: socket.socket
    pending: bytes


@dataclass
class Response:
    """A status and a body: bytes, or an iterator of chunks for streamed responses (watch, follow).

    With `upgrade`, the status is 101 and the connection is handed over once the head is written: the HTTP
    layer calls `upgrade(Upgraded)` on the connection's thread and closes the socket when it returns, or
    `upgrade(None)` if the client is gone before the switch (so the handler releases what it holds)."""

    status: int
    body: bytes | Iterable[bytes]
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)
    upgrade: Callable[[Upgraded | None], None] | None = None


def json_response(status: int, document: Any, headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status, dumps(document), headers=headers or [])


SubresourceHandler = Callable[[ApiRequest], Response]


class Backend(Protocol):
    """What the verbs need from the server that dispatches to them (the store, faults, plug-ins), declared
    here so `verbs` does not import `app` and the arrows run one way: app → verbs → types."""

    store: Store
    faults: Faults
    bookmark_interval: float

    def subresource_handler(self, resource: ResourceType, name: str) -> SubresourceHandler | None: ...


class Gate(Protocol):
    """Authentication and authorization in front of dispatch: `admit` sets `request.user` or raises the
    ApiError the client gets (401 Unauthorized, 403 Forbidden). kubesim.auth.gate implements it."""

    def admit(self, request: ApiRequest) -> None: ...
