"""Calling a webhook over HTTPS as the apiserver does: TLS verified against `caBundle`, a deadline, JSON.

`clientConfig.url` is called as written. `clientConfig.service` is reached at the local address registered
for it (`Webhooks.route_service`) while the certificate is still verified for `<name>.<namespace>.svc`,
the name a real apiserver would use.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubesim.admission.review import WebhookCallError


@dataclass(frozen=True)
class Endpoint:
    """Where to connect (`address`), which name the certificate must carry (`host`), and the path."""

    url: str  # as the apiserver would name it in errors
    host: str
    address: tuple[str, int]
    path: str


class _PinnedConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed socket address, verifying the certificate for `host` (SNI and hostname)."""

    def __init__(self, endpoint: Endpoint, context: ssl.SSLContext, timeout: float) -> None:
        super().__init__(endpoint.host, endpoint.address[1], context=context, timeout=timeout)
        self._pinned = endpoint.address
        self._tls = context

    def connect(self) -> None:
        raw = socket.create_connection(self._pinned, self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """Trust exactly the caBundle (base64 PEM) when given, else the system roots."""
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as error:
        raise WebhookCallError(f"caBundle is not base64 PEM: {error}") from None
    try:
        return ssl.create_default_context(cadata=pem)
    except ssl.SSLError as error:
        raise WebhookCallError(f"caBundle holds no usable certificate: {error}") from None


def endpoint_for(client_config: dict[str, Any], services: dict[tuple[str, str, int], str]) -> Endpoint:
    """Resolve a clientConfig; a service without a registered local address cannot be reached."""
    if client_config.get("url"):
        url = str(client_config["url"])
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise WebhookCallError(f"webhook url {url!r} must be an https URL")
        path = parts.path or "/"
        return Endpoint(url, parts.hostname, (parts.hostname, parts.port or 443), path)
    service = client_config.get("service") or {}
    namespace, name = service.get("namespace", ""), service.get("name", "")
    port = int(service.get("port") or 443)
    path = service.get("path") or "/"
    host = f"{name}.{namespace}.svc"
    url = f"https://{host}:{port}{path}"
    local = services.get((namespace, name, port))
    if local is None:
        raise WebhookCallError(
            f'Post "{url}": service "{namespace}/{name}" port {port} has no local address '
            "(register one with simulator.webhooks.route_service)"
        )
    local_host, _, local_port = local.rpartition(":")
    return Endpoint(url, host, (local_host or "127.0.0.1", int(local_port)), path)


def post_review(endpoint: Endpoint, context: ssl.SSLContext, review: dict[str, Any], timeout: int) -> Any:
    """POST the review and return the decoded JSON answer; any failure is a WebhookCallError."""
    connection = _PinnedConnection(endpoint, context, float(timeout))
    target = f"{endpoint.path}?timeout={timeout}s"
    where = f'Post "{endpoint.url}?timeout={timeout}s"'
    try:
        connection.request(
            "POST",
            target,
            body=json.dumps(review).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        response = connection.getresponse()
        body = response.read()
    except TimeoutError:
        raise WebhookCallError(f"failed to call webhook: {where}: context deadline exceeded") from None
    except (OSError, http.client.HTTPException) as error:
        raise WebhookCallError(f"failed to call webhook: {where}: {error}") from None
    finally:
        connection.close()
    if response.status != 200:
        raise WebhookCallError(f"received invalid webhook response: the server responded {response.status}")
    try:
        return json.loads(body)
    except ValueError as error:
        raise WebhookCallError(f"received invalid webhook response: {error}") from None
