"""The HTTP server: a threaded stdlib server speaking HTTP/1.1 keep-alive, chunked for watches.

`ApiServer.serve()` turns one parsed request into a Response (routing, faults, discovery, verbs);
`_Handler` does the socket work and never lets a traceback reach the client.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kubesim.counters import Counters, RouteKey
from kubesim.errors import ApiError, internal_error, path_not_found
from kubesim.faults import Faults
from kubesim.jsonutil import dumps
from kubesim.resources import ResourceType
from kubesim.server import discovery, routing, verbs
from kubesim.server.negotiation import Query, parse_accept
from kubesim.server.types import ApiRequest, Gate, Response, SubresourceHandler, Upgraded, json_response
from kubesim.server.watchstream import DropConnection
from kubesim.store import Store

log = logging.getLogger(__name__)


class ApiServer:
    """The simulated apiserver in front of a Store, on 127.0.0.1:`port` (0 picks a free port)."""

    def __init__(
        self,
        store: Store,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        faults: Faults | None = None,
        counters: Counters | None = None,
        bookmark_interval: float = 1.0,
        tls: ssl.SSLContext | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.store = store
        self.tls = tls
        self.gate = gate
        self.faults = faults or Faults()
        self.counters = counters or Counters()
        self.bookmark_interval = bookmark_interval
        self._subresources: dict[tuple[str, str], SubresourceHandler] = {}
        self._host = host
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.api = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}"

    @property
    def address(self) -> str:
        return f"{self._host}:{self._httpd.server_port}"

    def add_subresource(self, resource: str, name: str, handler: SubresourceHandler) -> None:
        """Serve /<resource>/<name>/<subresource> (e.g. pods/log) with `handler(ApiRequest) -> Response`;
        `name=""` answers a create-only resource that is never stored (the review kinds)."""
        self._subresources[(self.store.resource(resource).key, name)] = handler

    def subresource_handler(self, resource: ResourceType, name: str) -> SubresourceHandler | None:
        return self._subresources.get((resource.key, name))

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="kubesim-http", daemon=True
        )
        self._thread.start()

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        """Stop serving, and drop every open connection as a stopped apiserver process does: a keep-alive
        connection left open would go on answering (and acknowledging writes) after the state is saved."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.drop_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- one request -------------------------------------------------------------------------------

    def serve(self, request: ApiRequest) -> Response:
        route = request.route
        if route.kind == "resource":
            request.resource = self.store.registry.lookup(route.group, route.version, route.plural)
        if self.gate is not None:
            self.gate.admit(request)
        if (latency := self.faults.take("latency", request.facts)) is not None:
            time.sleep(latency.seconds)
        if (failure := self.faults.take("error", request.facts)) is not None:
            raise failure.error(request.facts)
        if route.kind == "resource":
            if request.resource is None:
                raise path_not_found(request.path)
            request.accept = parse_accept(request.headers.get("accept"))
            return verbs.dispatch(self, request)
        if request.method not in ("GET", "HEAD"):
            raise path_not_found(request.path)
        return self._non_resource(request)

    def _non_resource(self, request: ApiRequest) -> Response:
        route, registry = request.route, self.store.registry
        document: Any = None
        if route.kind == "version":
            document = discovery.version_info()
        elif route.kind == "health":
            return Response(200, b"ok", "text/plain; charset=utf-8")
        elif route.kind == "discovery":
            document = {
                "": lambda: {
                    "paths": sorted(
                        [
                            "/api",
                            "/api/v1",
                            "/apis",
                            "/version",
                            "/openapi/v3",
                            "/healthz",
                            "/readyz",
                            "/livez",
                        ]
                    )
                },
                "api": lambda: discovery.api_versions(self.address),
                "api_version": lambda: discovery.resource_list(registry, "", route.version),
                "apis": lambda: discovery.group_list(registry),
                "group": lambda: discovery.group(registry, route.group),
                "group_version": lambda: discovery.resource_list(registry, route.group, route.version),
            }[route.document]()
        elif route.kind == "openapi" and route.document == "v2":
            if discovery.OPENAPI_V2_PROTOBUF in request.headers.get("accept", ""):
                return Response(200, discovery.openapi_v2_protobuf(), "application/octet-stream")
            document = discovery.openapi_v2_json()
        elif route.kind == "openapi":
            document = self._openapi(route.document)
        if document is None:
            raise path_not_found(request.path)
        return json_response(200, document)

    def _openapi(self, document: str) -> Any:
        parts = document.split("/")
        if parts[0] != "v3":
            return None
        if len(parts) == 1:
            return discovery.openapi_index(self.store.registry)
        if parts[1] == "api" and len(parts) == 3:
            return discovery.openapi_document(self.store.registry, "", parts[2])
        if parts[1] == "apis" and len(parts) == 4:
            return discovery.openapi_document(self.store.registry, parts[2], parts[3])
        return None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True
    api: ApiServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._connections_lock:
            connections, self._connections = list(self._connections), set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """With TLS, the handshake happens here, on the connection's own thread, not in accept()."""
        context = self.api.tls
        if context is not None:
            try:
                request = context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as error:
                log.debug("kubesim: TLS handshake with %s failed: %s", client_address, error)
                request.close()
                return
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up (a stopped watch, a killed kubectl) are normal; anything else is logged."""
        error = sys.exc_info()[1]
        if client_went_away(error):
            log.debug("kubesim: client %s went away: %s", client_address, error)
            return
        log.exception("kubesim: error on connection from %s", client_address)


def client_went_away(error: BaseException | None) -> bool:
    """Whether `error` is a client leaving, as an API server hears it (Go's closes such a connection
    without a word): a reset or broken TCP connection, or, over TLS, its end without a close_notify (a
    killed process, a socket shut down mid-watch), a close_notify, or the alert a client sent as it
    dropped the session."""
    if isinstance(error, (ConnectionError, TimeoutError, ssl.SSLEOFError, ssl.SSLZeroReturnError)):
        return True
    return isinstance(error, ssl.SSLError) and "_ALERT_" in (error.reason or "")


def _header_map(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Header names lower-cased; a header sent on several lines becomes one comma-separated value (RFC 9110
    5.3), so none is lost (SPDY clients send one X-Stream-Protocol-Version line per protocol)."""
    headers: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def _buffered(rfile: Any, connection: socket.socket) -> bytes:
    """What the request's reader holds past the request, without waiting for more."""
    connection.setblocking(False)
    try:
        return bytes(rfile.read(len(rfile.peek(1 << 16))))
    except (BlockingIOError, ssl.SSLWantReadError):
        return b""


def _status_response(error: ApiError) -> Response:
    return Response(error.code, dumps(error.status()), headers=list(error.headers.items()))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    server_version = "kubesim"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        api = self.server.api
        parts = urlsplit(self.path)
        route = routing.parse(parts.path)
        request = ApiRequest(
            self.command,
            parts.path,
            route,
            Query(dict(parse_qsl(parts.query, keep_blank_values=True))),
            _header_map(self.headers.items()),
            b"",
            peer_certificate=self._peer_certificate(),
            query_string=parts.query,
            client_address=str(self.client_address[0]) if self.client_address else "",
        )
        try:
            request.body = self._read_body()
            response = api.serve(request)
        except ApiError as error:
            response = _status_response(error)
        except (ValueError, json.JSONDecodeError) as error:
            response = _status_response(ApiError(400, "BadRequest", str(error)))
        except Exception as error:
            log.exception("kubesim: unhandled error serving %s %s", self.command, self.path)
            response = _status_response(internal_error(type(error).__name__))
        api.counters.record(
            RouteKey(self.command, route.template, request.verb, request.resource_name, response.status)
        )
        self._write(response)

    def _switch(self, response: Response, upgrade: Callable[[Upgraded | None], None]) -> None:
        """Write the 101 head, then hand the connection to `upgrade` for as long as the stream lasts."""
        self.close_connection = True
        lines = [f"HTTP/1.1 {response.status} {self.responses.get(response.status, ('',))[0]}"]
        lines += [f"{name}: {value}" for name, value in response.headers]
        try:
            self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace"))
        except OSError:
            upgrade(None)
            return
        upgrade(Upgraded(self.connection, _buffered(self.rfile, self.connection)))

    def _peer_certificate(self) -> dict[str, Any] | None:
        getpeercert = getattr(self.connection, "getpeercert", None)
        return getpeercert() or None if getpeercert is not None else None

    def _head(self, response: Response, extra: list[tuple[str, str]]) -> bytes:
        given = {name.lower() for name, _value in response.headers}
        lines = [f"HTTP/1.1 {response.status} {self.responses.get(response.status, ('',))[0]}"]
        if response.content_type:  # a proxied answer may have none
            lines.append(f"Content-Type: {response.content_type}")
        if "cache-control" not in given:  # the apiserver's WithCacheControl keeps one a handler set
            lines.append("Cache-Control: no-cache, private")
        lines += [f"{name}: {value}" for name, value in [*response.headers, *extra]]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")

    def _write(self, response: Response) -> None:
        if response.upgrade is not None:
            self._switch(response, response.upgrade)
            return
        try:
            if isinstance(response.body, bytes):
                body = b"" if self.command == "HEAD" else response.body
                given = any(name.lower() == "content-length" for name, _value in response.headers)
                length = [] if given else [("Content-Length", str(len(response.body)))]  # a proxied HEAD's
                self.wfile.write(self._head(response, length) + body)
                return
            if any(name.lower() == "content-length" for name, _value in response.headers):
                # a proxied answer of known length goes out as it came (a short one cuts the connection)
                self.wfile.write(self._head(response, []))
                for chunk in response.body:
                    self.wfile.write(chunk)
                return
            self.wfile.write(self._head(response, [("Transfer-Encoding", "chunked")]))
            for chunk in response.body:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except DropConnection:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):  # the client left mid-answer
            self.close_connection = True
        finally:
            close = getattr(response.body, "close", None)
            if close is not None:
                close()
