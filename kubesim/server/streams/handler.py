"""pods/exec, pods/attach and pods/portforward: what the API server checks before it upgrades the
connection, the protocol it negotiates, and the session it runs once the HTTP layer hands the socket over.

Authorization is the API server's: the gate has checked the request's own verb (`get` for a WebSocket
handshake, which is a GET; `create` for a SPDY upgrade, a POST) and a GET is also checked for `create`
(AuthorizePodWebsocketUpgradeCreatePermission, on by default since Kubernetes 1.35), so both verbs are
needed to exec over WebSocket. A client refused there gets 403; kubectl then falls back to SPDY (a POST),
which `create` alone allows.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from kubesim.errors import ApiError, method_not_allowed
from kubesim.server.streams import bounds, channels, portforward, spdycommand, websocket
from kubesim.server.streams.backend import StreamBackend, StreamSession
from kubesim.server.streams.command import CommandOptions, CommandRun, command_options
from kubesim.server.streams.spdy import SpdyConnection
from kubesim.server.streams.transport import StreamClosed, Transport
from kubesim.server.types import ApiRequest, Gate, Response, SubresourceHandler, Upgraded
from kubesim.store import Store

#: the streaming subresources of pods
STREAMS = ("exec", "attach", "portforward")
SPDY = "SPDY/3.1"

#: what runs on the upgraded connection
Session = Callable[[Transport], None]


def is_spdy_upgrade(headers: dict[str, str]) -> bool:
    connection = {token.strip().lower() for token in headers.get("connection", "").split(",")}
    return "upgrade" in connection and SPDY.lower() in headers.get("upgrade", "").lower()


def container_name(pod: dict[str, Any], asked: str) -> str:
    """The container a request addresses, checked and defaulted as the API server's validateContainer."""
    spec = pod.get("spec") or {}
    name = pod["metadata"]["name"]
    every = [
        c.get("name", "")
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or []
    ]
    if asked:
        if asked not in every:
            raise ApiError(400, "BadRequest", f"container {asked} is not valid for pod {name}")
        return asked
    containers = spec.get("containers") or []
    if len(containers) == 1:
        return str(containers[0].get("name", ""))
    if not containers:
        raise ApiError(400, "BadRequest", f"a container name must be specified for pod {name}")
    raise ApiError(
        400,
        "BadRequest",
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]",
    )


def negotiate(offered: list[str], supported: tuple[str, ...]) -> str | None:
    """The first protocol the client offers that the server speaks (upstream honours the client's order)."""
    return next((protocol for protocol in offered if protocol in supported), None)


def _abandon(session: StreamSession, *, attach: bool) -> None:
    """Release a session whose stream never started (the client left before the switch)."""
    if not attach:
        session.kill()
    for fd in {session.stdout, session.stderr, *([session.stdin] if session.stdin is not None else [])}:
        os.close(fd)


class PodStreams:
    """The streaming subresources of one simulator. `backend` is the kubelet that runs containers; without
    one every request is refused with the simulator's 400, as before it ran any."""

    def __init__(self, store: Store, gate: Gate | None) -> None:
        self.store = store
        self.gate = gate
        self.backend: StreamBackend | None = None
        self.idle_timeout = bounds.IDLE_TIMEOUT
        self._open: set[Transport] = set()
        self._lock = threading.Lock()

    def handler(self, subresource: str) -> SubresourceHandler:
        def handle(request: ApiRequest) -> Response:
            return self.serve(subresource, request)

        return handle

    def stop(self) -> None:
        """End every open stream (an exec'd process is killed when its stream ends)."""
        with self._lock:
            transports = list(self._open)
        for transport in transports:
            transport.close()

    # --- one request --------------------------------------------------------------------------------

    def serve(self, subresource: str, request: ApiRequest) -> Response:
        if request.method not in ("GET", "POST"):
            raise method_not_allowed(request.method)
        if request.method == "GET" and self.gate is not None:
            self.gate.admit(dataclasses.replace(request, method="POST"))
        namespace, name = request.route.namespace or "", request.route.name
        pod = self.store.get("pods", name, namespace)
        backend = self.backend
        if backend is None:
            raise ApiError(
                400,
                "BadRequest",
                f"pods/{subresource} is not supported by the simulator (kubesim): it runs no containers, "
                "so there is no stream to connect to",
            )
        ws = websocket.is_upgrade(request.headers)
        if not ws and not is_spdy_upgrade(request.headers):
            raise ApiError(400, "BadRequest", "Upgrade request required")
        if ws and (problem := websocket.handshake_error(request.method, request.headers)) is not None:
            raise ApiError(400, "BadRequest", problem)
        query = parse_qs(request.query_string, keep_blank_values=True)
        if subresource == "portforward":
            self._bound(pod)
            return self._portforward(request, backend, pod, query, ws)
        options = command_options(query, exec_=subresource == "exec")
        options = dataclasses.replace(options, container=container_name(pod, options.container))
        self._bound(pod)
        return self._command(request, backend, subresource == "attach", options, ws)

    @staticmethod
    def _bound(pod: dict[str, Any]) -> None:
        if not (pod.get("spec") or {}).get("nodeName"):
            raise ApiError(400, "BadRequest", f"pod {pod['metadata']['name']} does not have a host assigned")

    def _command(
        self, request: ApiRequest, backend: StreamBackend, attach: bool, options: CommandOptions, ws: bool
    ) -> Response:
        """Over WebSocket the backend starts the session once the stream is up (its refusals reach the client
        on the error channel, as upstream's translator reports the kubelet's); over SPDY before the upgrade
        (its refusals are the HTTP answer, as the kubelet's are when the API server proxies SPDY)."""
        route = request.route
        namespace, pod = route.namespace or "", route.name

        def start() -> StreamSession:
            if attach:
                return backend.attach(namespace, pod, options.container, stdin=options.stdin, tty=options.tty)
            return backend.exec(
                namespace, pod, options.container, options.command, stdin=options.stdin, tty=options.tty
            )

        if ws:
            protocol = self._websocket_protocol(request, channels.PROTOCOLS)

            def over_websocket(transport: Transport) -> None:
                run = CommandRun(
                    start,
                    options,
                    attach=attach,
                    idle_for=transport.idle_for,
                    idle_timeout=self.idle_timeout,
                    first_size_wait=bounds.FIRST_SIZE_WAIT,
                )
                channels.serve(self._websocket(transport), run, protocol)

            headers = websocket.handshake_headers(request.headers["sec-websocket-key"], protocol)
            return Response(101, b"", headers=headers, upgrade=self._upgrade(over_websocket))

        protocol = self._spdy_protocol(request, spdycommand.PROTOCOLS)
        session = start()

        def over_spdy(transport: Transport) -> None:
            run = CommandRun(
                lambda: session,
                options,
                attach=attach,
                idle_for=transport.idle_for,
                idle_timeout=self.idle_timeout,
            )
            connection = SpdyConnection(transport, max_streams=spdycommand.MAX_STREAMS)
            spdycommand.SpdyCommand(connection, run).serve()

        abandon = functools.partial(_abandon, session, attach=attach)
        return Response(101, b"", headers=_spdy_headers(protocol), upgrade=self._upgrade(over_spdy, abandon))

    def _portforward(
        self,
        request: ApiRequest,
        backend: StreamBackend,
        pod: dict[str, Any],
        query: dict[str, list[str]],
        ws: bool,
    ) -> Response:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        full_name = f"{name}_{namespace}"

        def connect(port: int) -> Any:
            return backend.connect(namespace, name, port)

        def spdy_session(pipe_of: Callable[[Transport], Any]) -> Session:
            def run(transport: Transport) -> None:
                connection = SpdyConnection(
                    pipe_of(transport), max_streams=2 * bounds.MAX_FORWARDED_CONNECTIONS
                )
                portforward.SpdyForwarding(connection, connect, full_name).serve()

            return run

        if not ws:
            self._spdy_protocol(request, (portforward.PROTOCOL,))
            run = spdy_session(lambda transport: transport)
            return Response(101, b"", headers=_spdy_headers(portforward.PROTOCOL), upgrade=self._upgrade(run))
        offered = websocket.offered_protocols(request.headers)
        key = request.headers["sec-websocket-key"]
        if portforward.TUNNEL_PROTOCOL in offered:
            run = spdy_session(lambda transport: portforward.Tunnel(self._websocket(transport)))
            headers = websocket.handshake_headers(key, portforward.TUNNEL_PROTOCOL)
            return Response(101, b"", headers=headers, upgrade=self._upgrade(run))
        protocol = "" if not offered else self._websocket_protocol(request, (portforward.CHANNEL_PROTOCOL,))
        ports = portforward.parse_ports(query.get("ports", []))

        def channel_session(transport: Transport) -> None:
            portforward.serve_channels(self._websocket(transport), ports, connect, full_name)

        headers = websocket.handshake_headers(key, protocol)
        return Response(101, b"", headers=headers, upgrade=self._upgrade(channel_session))

    @staticmethod
    def _websocket(transport: Transport) -> websocket.WebSocket:
        return websocket.WebSocket(transport, max_message=bounds.MAX_MESSAGE_BYTES)

    @staticmethod
    def _websocket_protocol(request: ApiRequest, supported: tuple[str, ...]) -> str:
        offered = websocket.offered_protocols(request.headers)
        protocol = negotiate(offered, supported)
        if protocol is None:
            wanted, spoken = " ".join(offered), " ".join(supported)
            raise ApiError(
                400, "BadRequest", f"requested protocol(s) are not supported: [{wanted}]; supports [{spoken}]"
            )
        return protocol

    @staticmethod
    def _spdy_protocol(request: ApiRequest, supported: tuple[str, ...]) -> str:
        """httpstream.Handshake: X-Stream-Protocol-Version is required and must name one we speak."""
        header = request.headers.get("x-stream-protocol-version", "")
        offered = [p.strip() for p in header.split(",") if p.strip()]
        if not offered:
            raise ApiError(403, "Forbidden", "unable to upgrade: X-Stream-Protocol-Version is required")
        protocol = negotiate(offered, supported)
        if protocol is None:
            raise ApiError(
                403,
                "Forbidden",
                "unable to upgrade: unable to negotiate protocol: "
                f"client supports [{' '.join(offered)}], server accepts [{' '.join(supported)}]",
            )
        return protocol

    def _upgrade(
        self, session: Session, abandon: Callable[[], None] | None = None
    ) -> Callable[[Upgraded | None], None]:
        def upgraded(connection: Upgraded | None) -> None:
            if connection is None:
                if abandon is not None:
                    abandon()
                return
            transport = Transport(connection.socket, connection.pending, idle_timeout=self.idle_timeout)
            with self._lock:
                self._open.add(transport)
            try:
                session(transport)
            except StreamClosed:
                pass
            finally:
                with self._lock:
                    self._open.discard(transport)
                transport.close()

        return upgraded


def _spdy_headers(protocol: str) -> list[tuple[str, str]]:
    return [("Connection", "Upgrade"), ("Upgrade", SPDY), ("X-Stream-Protocol-Version", protocol)]
