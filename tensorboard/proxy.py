"""The TensorBoard proxy's forwarding: a signed-in user's request for `<prefix>/<namespace>/<name>/<path>`
goes through the Kubernetes API server's service proxy to the TensorBoard pod, and its answer streams back
within the size and time bounds of `limits` (docs/security.md, "Limits").

Why through the API server: the web process always reaches the API server (kubesim on `make run`, the
in-cluster address in a cluster), never the pod network, and the API server checks our ServiceAccount's
RBAC on `services/proxy`. The view (dashboard/views/tensorboardproxy.py) decides who may read which
instance; this module decides what crosses: an allowlist of headers each way, so the user's cookies, CSRF
token and credentials never reach the pod, and a pod can set no cookie on our origin nor send a browser
elsewhere. Pure parts are functions; `forward` is the one I/O edge.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

import urllib3

from kube.client import KubeClient
from kube.errors import ServerError

logger = logging.getLogger(__name__)

#: What a browser's request may carry to the pod (lower case): content negotiation, caching, TensorBoard's
#: feature flags. Never Cookie, Authorization, X-CSRFToken, or Host (the API server's own).
REQUEST_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "if-modified-since", "if-none-match",
     "user-agent", "x-requested-with", "x-tensorboard-feature-flags"}
)  # fmt: skip
#: What a pod's answer may carry to the browser (lower case). Never Set-Cookie (a pod writing our origin's
#: cookies), CORS grants or HSTS; TensorBoard's own Content-Security-Policy for its pages is kept.
ANSWER_HEADERS = frozenset(
    {"cache-control", "content-disposition", "content-encoding", "content-length", "content-security-policy",
     "content-type", "etag", "expires", "last-modified", "location", "vary", "x-content-type-options"}
)  # fmt: skip
#: The longest one read from the API server may wait, whatever time the request has left.
READ_TIMEOUT_CAP = 30.0
CHUNK_BYTES = 64 * 1024
#: What a path segment may hold unescaped (RFC 3986 pchar), so a path Django decoded is sent as it came.
PATH_SAFE = "/:@!$&'()*+,;=-._~"
#: How much of an error answer is read to tell the API server's Status from the pod's own error page.
STATUS_PEEK_BYTES = 64 * 1024


class Unavailable(Exception):
    """The instance cannot answer this request (not ready, not reachable, refused, too large, too slow):
    `status` is what the browser gets (502, 503 or 504, or the API server's 403/404), `message` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class BoundExceeded(Exception):
    """An answer grew past its size bound, or ran past its time bound, after it had started: the stream is
    cut (the browser sees a broken answer, never a truncated one that reads as whole)."""


def upstream_path(prefix: str, path: str) -> str:
    """The pod's path for a request below the instance's `prefix` (TensorBoard's --path_prefix), escaped
    again as it was sent. A `.` or `..` segment is refused (ValueError): resolved by any client between us
    and the pod, it would climb out of the service proxy into the rest of the Kubernetes API."""
    segments = path.split("/")
    if any(segment in (".", "..") for segment in segments) or "\\" in path:
        raise ValueError(f"path: {path!r} may not contain '.' or '..' segments or backslashes.")
    return f"{prefix}/{quote(path, safe=PATH_SAFE)}"


def request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The browser's headers the pod may see (REQUEST_HEADERS)."""
    return {name: value for name, value in headers.items() if name.lower() in REQUEST_HEADERS}


def local_location(location: str, api_prefix: str) -> str | None:
    """A redirect of the pod's as the browser must follow it: a path on our origin. The API server rewrites
    a Location into the pod to go through its proxy (`/api/v1/…/proxy/<path>`): that prefix comes off. An
    address on another host is dropped (None): a TensorBoard never sends one, and passing it would make our
    origin an open redirect."""
    try:
        parts = urlsplit(location)
    except ValueError:
        return None
    path = parts.path
    if path.startswith(api_prefix + "/"):
        path = path[len(api_prefix) :]
    elif parts.netloc or parts.scheme:
        return None
    return urlunsplit(("", "", path, parts.query, parts.fragment))


def answer_headers(headers: Mapping[str, str], api_prefix: str) -> list[tuple[str, str]]:
    """The pod's headers the browser may see (ANSWER_HEADERS), a Location made local."""
    kept: list[tuple[str, str]] = []
    for name, value in headers.items():
        key = name.lower()
        if key not in ANSWER_HEADERS:
            continue
        if key == "location":
            local = local_location(value, api_prefix)
            if local is None:
                continue
            value = local
        kept.append((name, value))
    return kept


def api_status_message(content_type: str, body: bytes) -> str | None:
    """The message of a Kubernetes `Status` answer (the API server speaking, not the pod), else None."""
    if "json" not in content_type:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if isinstance(document, dict) and document.get("kind") == "Status":
        return str(document.get("message") or document.get("reason") or "no message")
    return None


@dataclass(frozen=True)
class Bounds:
    """`limits.current().tensorboard_proxy_bytes` and `…_seconds`, read once per request."""

    max_bytes: int
    max_seconds: float


@dataclass
class Forwarded:
    """The pod's answer: its status and the headers that may cross; `body` streams it, within the bounds."""

    status: int
    headers: list[tuple[str, str]]
    body: BoundedBody


class BoundedBody:
    """The answer's bytes, chunk by chunk, cut with BoundExceeded past the size or time bound. Closing it
    (Django does, once the response is sent or abandoned) closes the connection to the API server: a
    half-read answer is never handed back to the pool."""

    def __init__(
        self,
        response: urllib3.BaseHTTPResponse,
        bounds: Bounds,
        deadline: float,
        what: str,
        clock: Callable[[], float] = time.monotonic,
        first: bytes = b"",
    ) -> None:
        self.response = response
        self.bounds = bounds
        self.deadline = deadline
        self.what = what
        self.clock = clock
        self.first = first  # what was read already, to tell a Status from the pod's own error
        self.sent = 0

    def _chunks(self) -> Iterator[bytes]:
        if self.first:
            yield self.first
        yield from self.response.stream(CHUNK_BYTES, decode_content=False)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks():
            self.sent += len(chunk)
            if self.sent > self.bounds.max_bytes:
                logger.warning("cut %s past %d bytes (MAX_TENSORBOARD_PROXY_BYTES)", self.what, self.sent)
                raise BoundExceeded(f"{self.what}: more than {self.bounds.max_bytes} bytes")
            if self.clock() > self.deadline:
                seconds = self.bounds.max_seconds
                logger.warning("cut %s after %.0f s (MAX_TENSORBOARD_PROXY_SECONDS)", self.what, seconds)
                raise BoundExceeded(f"{self.what}: longer than {self.bounds.max_seconds:.0f} s")
            yield chunk

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.response.close()
        with contextlib.suppress(Exception):
            self.response.release_conn()


def forward(
    client: KubeClient,
    method: str,
    namespace: str,
    service: str,
    port: int,
    path: str,
    *,
    query_string: str,
    headers: dict[str, str],
    body: bytes | None,
    bounds: Bounds,
    clock: Callable[[], float] = time.monotonic,
) -> Forwarded:
    """Send one request to the instance's Service through the API server; Unavailable when the API server
    answers for the pod (no ready pod yet, RBAC, gone), when it does not answer, or when the answer says it
    is larger than the bound."""
    deadline = clock() + bounds.max_seconds
    what = f"{method} {namespace}/{service}{path}"
    try:
        response = client.proxy_service(
            method, namespace, service, port, path, query_string=query_string, headers=headers, body=body,
            read_timeout=min(READ_TIMEOUT_CAP, bounds.max_seconds),
        )  # fmt: skip
    except ServerError as error:
        raise Unavailable(503, f"The Kubernetes API did not answer: {error}") from error
    except urllib3.exceptions.HTTPError as error:
        raise Unavailable(504, f"The TensorBoard did not answer in time: {error}") from error
    content_type = response.headers.get("Content-Type", "")
    peek = b""
    if response.status >= 400 and "json" in content_type:
        peek = response.read(STATUS_PEEK_BYTES, decode_content=False)
        message = api_status_message(content_type, peek)
        if message is not None:
            _release(response)
            raise Unavailable(response.status if response.status in (403, 404) else 503, message)
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > bounds.max_bytes:
        _release(response)
        raise Unavailable(
            502, f"The answer is {length} bytes, more than {bounds.max_bytes} (MAX_TENSORBOARD_PROXY_BYTES)."
        )
    answer = answer_headers(response.headers, _api_prefix(namespace, service, port))
    return Forwarded(response.status, answer, BoundedBody(response, bounds, deadline, what, clock, peek))


def _api_prefix(namespace: str, service: str, port: int) -> str:
    return f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy"


def _release(response: urllib3.BaseHTTPResponse) -> None:
    with contextlib.suppress(Exception):
        response.close()
    with contextlib.suppress(Exception):
        response.release_conn()
