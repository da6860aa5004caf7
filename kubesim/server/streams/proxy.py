"""pods/{name}/proxy and services/{name}/proxy: an HTTP request passed through the API server to a pod.

As kube-apiserver serves them (the pod and Service registries' ResourceLocation, apimachinery's
UpgradeAwareHandler and proxy.Transport):
- the name is `name`, `name:port` or `scheme:name:port` (scheme http or https); anything else is a 400;
- a pod's port is a number (a name is looked up as Go's dialer does, in /etc/services), or the pod's first
  declared container port when none is given; a pod without a unicast IP is a 400 "address not allowed";
- a Service's port is its port's name, or its number (turned into that port's name); the request goes to
  one ready endpoint pod picked at random, on the port the Service's targetPort resolves to in that pod; no
  such endpoint is a 503 "no endpoints available for service";
- the method, the path below `/proxy`, the query and the headers pass through, less hop-by-hop headers and
  the caller's Authorization and Impersonate-* (which the authentication and impersonation filters
  remove), with X-Forwarded-For and X-Forwarded-Uri added; the Host header stays the caller's;
- the answer's status, headers and body come back as the pod sent them (streamed), less hop-by-hop headers
  and CORS grants, with a Location that points into the pod rewritten to go through the proxy again;
- a pod that cannot be dialled or does not answer is a 503 "error trying to reach service: <why>".

The dial is the stream backend's `connect` (the process kubelet's reaches the pod's network); a simulator
without one, or a pod it does not run (a scripted pod), answers as a cluster does for a pod whose port
nothing listens on. Not done (docs/kubesim.md, Differences): rewriting links inside HTML answers, nodes'
proxy, and Upgrade (WebSocket) requests through the proxy.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import posixpath
import random
import socket
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kubesim.errors import ApiError, method_not_allowed
from kubesim.selectors import match_labels_selector
from kubesim.server.streams.backend import StreamBackend
from kubesim.server.types import PROXY_VERBS, ApiRequest, Response
from kubesim.server.watchstream import DropConnection
from kubesim.store import Store

#: How long the pod has to accept the connection and then to send each part of its answer; the API
#: server's proxy transport dials with a 30 s timeout and waits on the backend as long as the client does.
DIAL_TIMEOUT = 30.0
READ_TIMEOUT = 5 * 60.0
CHUNK_BYTES = 64 * 1024
#: RFC 9110 7.6.1, and what Go's ReverseProxy drops both ways
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
     "trailer", "transfer-encoding", "upgrade"}
)  # fmt: skip
#: the caller's credentials, removed by the API server's filters once they have done their work
CREDENTIALS = ("authorization",)
#: corsRemovingTransport: a pod's CORS grants would otherwise apply to the API server's origin
CORS_GRANTS = frozenset(
    {"access-control-allow-credentials", "access-control-allow-headers", "access-control-allow-methods",
     "access-control-allow-origin"}
)  # fmt: skip

Dial = Callable[[str, str, int], socket.socket]


@dataclass(frozen=True)
class Location:
    """Where a proxy request goes: a pod (by name, for the backend's dial), its IP and port, the scheme."""

    scheme: str
    pod: str
    ip: str
    port: int

    @property
    def host(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


def split_scheme_name_port(identifier: str) -> tuple[str, str, str] | None:
    """(scheme, name, port) of `name`, `name:port` or `scheme:name:port` (utilnet.SplitSchemeNamePort)."""
    parts = identifier.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in ("", "http", "https"):
        return None
    return scheme, name, port


def is_global_unicast(ip: str) -> bool:
    """Go's net.IP.IsGlobalUnicast: not unspecified, loopback, multicast, link-local or broadcast."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    broadcast = isinstance(address, ipaddress.IPv4Address) and address == ipaddress.IPv4Address(
        "255.255.255.255"
    )
    return (
        not (address.is_unspecified or address.is_loopback or address.is_multicast or address.is_link_local)
        and not broadcast
    )


def named_port(port: str) -> int | None:
    """A port as Go's dialer reads it: a number, else a service name of /etc/services."""
    if port.isdigit():
        return int(port) if 0 < int(port) < 65536 else None
    try:
        return socket.getservbyname(port, "tcp")
    except OSError:
        return None


def _is_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return ready and bool(status.get("podIP")) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def _target_port(target: Any, pod: Mapping[str, Any]) -> int | None:
    """A Service port's targetPort in one pod: a number, or the pod's container port of that name."""
    if isinstance(target, int):
        return target
    if str(target).isdigit():
        return int(str(target))
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared["containerPort"])
    return None


def service_endpoints(
    service: Mapping[str, Any], port_name: str, pods: list[Mapping[str, Any]]
) -> list[tuple[str, str, int]]:
    """(pod name, IP, port) of every ready pod the Service selects, for its port named `port_name`: what
    the Endpoints controller would list under that port's name."""
    spec = service.get("spec") or {}
    selector = spec.get("selector")
    if not selector:
        return []
    matcher = match_labels_selector({"matchLabels": dict(selector)})
    ports = [p for p in spec.get("ports") or [] if str(p.get("name") or "") == port_name]
    found = []
    for pod in pods:
        if not _is_ready(pod) or not matcher.matches(
            {"metadata": {"labels": pod["metadata"].get("labels") or {}}}
        ):
            continue
        for port in ports:
            number = _target_port(port.get("targetPort", port.get("port")), pod)
            if number is not None:
                found.append((str(pod["metadata"]["name"]), str(pod["status"]["podIP"]), number))
    return found


def rewrite_location(target: str, prefix: str, backend_host: str, request_host: str) -> str:
    """A Location header pointing into the pod, made to go through the proxy again (proxy.Transport's
    rewriteURL with the API server's empty scheme and host)."""
    try:
        url = urlsplit(target)
    except ValueError:
        return target
    if (url.netloc and url.netloc not in (backend_host, request_host)) or not url.path.startswith("/"):
        return target
    scheme, netloc = (url.scheme, url.netloc) if url.netloc == request_host else ("", "")
    if url.path.startswith(prefix):
        return urlunsplit((scheme, netloc, url.path, url.query, url.fragment))
    path = posixpath.normpath(posixpath.join(prefix, url.path.lstrip("/")))
    if url.path.endswith("/"):
        path += "/"
    return urlunsplit((scheme, netloc, path, url.query, url.fragment))


def unreachable(why: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", f"error trying to reach service: {why}")


class Proxies:
    """The proxy subresources of one simulator; `backend()` is the kubelet that dials pods (or None)."""

    def __init__(self, store: Store, backend: Callable[[], StreamBackend | None]) -> None:
        self.store = store
        self.backend = backend

    def serve_pod(self, request: ApiRequest) -> Response:
        return self._forward(request, self._pod_location(request))

    def serve_service(self, request: ApiRequest) -> Response:
        return self._forward(request, self._service_location(request))

    # --- where the request goes ---------------------------------------------------------------------

    def _addressed(self, request: ApiRequest, kind: str) -> tuple[str, str, str, dict[str, Any]]:
        """Scheme, name and port of the URL's `[scheme:]name[:port]`, and the pod or service it names."""
        identifier = request.route.name
        split = split_scheme_name_port(identifier)
        if split is None:
            raise ApiError(400, "BadRequest", f'invalid {kind} request "{identifier}"')
        scheme, name, port = split
        return scheme, name, port, self.store.get(f"{kind}s", name, request.route.namespace or "")

    def _pod_location(self, request: ApiRequest) -> Location:
        scheme, name, port, pod = self._addressed(request, "pod")
        if not port:
            declared = [
                p for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or []
            ]
            port = str(declared[0]["containerPort"]) if declared else ""
        ip = str((pod.get("status") or {}).get("podIP") or "")
        if not is_global_unicast(ip):
            raise ApiError(400, "BadRequest", "address not allowed")
        number = named_port(port) if port else 80
        if number is None:
            raise unreachable(f"dial tcp: lookup tcp/{port}: unknown port")
        return Location(scheme or "http", name, ip, number)

    def _service_location(self, request: ApiRequest) -> Location:
        scheme, name, port, service = self._addressed(request, "service")
        if port.isdigit():
            numbered = [
                p for p in (service.get("spec") or {}).get("ports") or [] if p.get("port") == int(port)
            ]
            if not numbered:
                raise ApiError(
                    503, "ServiceUnavailable", f'no service port {port} found for service "{name}"'
                )
            port = str(numbered[0].get("name") or "")
        pods = self.store.list("pods", request.route.namespace or "")["items"]
        endpoints = service_endpoints(service, port, pods)
        if not endpoints:
            raise ApiError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
        pod, ip, number = random.choice(endpoints)  # noqa: S311 - load spreading, as upstream's rand.Intn
        return Location(scheme or "http", pod, ip, number)

    # --- the request and its answer -----------------------------------------------------------------

    def _forward(self, request: ApiRequest, location: Location) -> Response:
        if request.method not in PROXY_VERBS:
            raise method_not_allowed(request.method)
        if "upgrade" in request.headers:
            raise ApiError(400, "BadRequest", "kubesim does not proxy Upgrade requests (docs/kubesim.md)")
        path = request.route.proxy_path or ""
        if not path and request.method in ("GET", "HEAD"):
            query = f"?{request.query_string}" if request.query_string else ""
            return Response(301, b"", "", headers=[("Location", f"{request.path}/{query}")])
        prefix = request.path[: len(request.path) - len(path)]
        connection = self._dial(request.route.namespace or "", location)
        try:
            answer = _exchange(connection, request, path or "/")
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise unreachable(_dial_error(location, error) if isinstance(error, OSError) else "EOF") from None
        headers = []
        for name, value in answer.getheaders():
            key = name.lower()
            if (
                key in HOP_BY_HOP
                or key in CORS_GRANTS
                or key in _connection_tokens(answer.getheader("connection"))
            ):
                continue
            if key == "location":
                value = rewrite_location(value, prefix, location.host, request.headers.get("host", ""))
            headers.append((name, value))
        content_type = answer.getheader("content-type") or ""
        headers = [(n, v) for n, v in headers if n.lower() != "content-type"]
        if request.method == "HEAD":
            connection.close()
            return Response(answer.status, b"", content_type, headers=headers)
        return Response(answer.status, _Body(answer, connection), content_type, headers=headers)

    def _dial(self, namespace: str, location: Location) -> socket.socket:
        backend = self.backend()
        if backend is None:
            raise unreachable(
                f"dial tcp {location.host}: connect: connection refused (kubesim runs no process)"
            )
        try:
            connection = backend.connect(namespace, location.pod, location.port)
        except ApiError as error:  # the kubelet does not run this pod (a scripted one)
            raise unreachable(
                f"dial tcp {location.host}: connect: connection refused ({error.message})"
            ) from None
        except OSError as error:
            raise unreachable(_dial_error(location, error)) from None
        connection.settimeout(READ_TIMEOUT)
        if location.scheme == "https":
            # The API server does not verify a backend's certificate when it proxies to a pod.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            try:
                return context.wrap_socket(connection)
            except (OSError, ssl.SSLError) as error:
                connection.close()
                raise unreachable(f"tls: {error}") from None
        return connection


def _dial_error(location: Location, error: OSError) -> str:
    """Go's words for a failed dial; a backend that already worded it (`dial tcp …`) is quoted as is."""
    if error.strerror:
        return f"dial tcp {location.host}: connect: {error.strerror.lower()}"
    text = str(error) or type(error).__name__
    return text if text.startswith("dial tcp") else f"dial tcp {location.host}: connect: {text}"


def _connection_tokens(header: str | None) -> set[str]:
    return {token.strip().lower() for token in (header or "").split(",") if token.strip()}


def _exchange(connection: socket.socket, request: ApiRequest, path: str) -> http.client.HTTPResponse:
    """Send the request on the pod's connection and read the answer's head."""
    client = http.client.HTTPConnection("pod", timeout=READ_TIMEOUT)
    client.sock = connection
    dropped = HOP_BY_HOP | _connection_tokens(request.headers.get("connection"))
    headers = {
        name: value
        for name, value in request.headers.items()
        if name not in dropped and name not in CREDENTIALS and not name.startswith("impersonate-")
        and name != "content-length"
    }  # fmt: skip
    forwarded_for = request.headers.get("x-forwarded-for")
    if request.client_address:
        headers["x-forwarded-for"] = (
            f"{forwarded_for}, {request.client_address}" if forwarded_for else request.client_address
        )
    headers["x-forwarded-uri"] = request.path
    target = path + (f"?{request.query_string}" if request.query_string else "")
    client.putrequest(request.method, target, skip_host=True, skip_accept_encoding=True)
    for name, value in headers.items():
        client.putheader(name, value)
    if request.body or request.method in ("POST", "PUT", "PATCH"):
        client.putheader("content-length", str(len(request.body)))
    client.endheaders(request.body or None)
    return client.getresponse()


class _Body:
    """The pod's answer, read as it arrives; closing it (the HTTP layer does) closes the pod's connection."""

    def __init__(self, answer: http.client.HTTPResponse, connection: socket.socket) -> None:
        self.answer = answer
        self.connection = connection

    def __iter__(self) -> Iterator[bytes]:
        try:
            while chunk := self.answer.read1(CHUNK_BYTES):
                yield chunk
            if self.answer.length:  # the pod hung up before the length it announced (read1 says nothing)
                raise http.client.IncompleteRead(b"", self.answer.length)
        except (OSError, http.client.HTTPException):
            # The pod hung up mid-answer: the client's connection is cut, as a cluster's ReverseProxy aborts
            # it, so a truncated body never reads as a whole one.
            raise DropConnection from None

    def close(self) -> None:
        self.answer.close()
        with contextlib.suppress(OSError):
            self.connection.close()
