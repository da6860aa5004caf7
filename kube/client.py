"""The one door to the Kubernetes API: a few verbs over raw dicts.

Hot paths (watches, lists of thousands of pods) decode JSON straight into dicts, with orjson (a few times
faster than the json module; every call and watch event of the operator goes through it); the typed
models of the official client are ~10x slower. The official client is still used for what it is good at:
reading kubeconfigs and in-cluster credentials, TLS and auth headers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import orjson
import urllib3
from django.conf import settings
from kubernetes import client as k8s

import fields

from . import metrics
from .config import new_api_client
from .errors import ApiError, ServerError, error_from_response
from .ratelimit import TokenBucket
from .resources import POD, SERVICE, ResourceType

logger = logging.getLogger(__name__)

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
CONNECT_TIMEOUT_SECONDS = 5.0
# Client read timeout of a watch = its server timeout + this margin; silence past it restarts the watch.
WATCH_READ_MARGIN_SECONDS = 15.0
MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 0.2
RETRY_CAP_SECONDS = 10.0
#: A write held back this long by the rate limiter is logged, as client-go logs "Waited for …" (it uses 1 s).
THROTTLE_LOG_SECONDS = 1.0
DEFAULT_FIELD_MANAGER = "argoml"


class KubeClient:
    """Raw-dict verbs with server and client timeouts, typed errors, write rate limiting and retries."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        write_limiter: TokenBucket,
        request_timeout: float,
        max_attempts: int = MAX_ATTEMPTS,
    ):
        if max_attempts < 1:
            raise ValueError(f"max_attempts: {max_attempts} must be at least 1.")
        self.api_client = api_client
        self.max_attempts = max_attempts
        self.host = api_client.configuration.host.rstrip("/")
        self.write_limiter = write_limiter
        self.request_timeout = request_timeout
        manager = api_client.rest_client.pool_manager
        if isinstance(manager, urllib3.ProxyManager):  # it rewrites each request for the proxy
            self._pool: urllib3.PoolManager | urllib3.HTTPConnectionPool = manager
            self._base = self.host
        else:
            # One server: its connection pool (with the manager's TLS settings), asked directly, instead of
            # a manager that parses the URL and looks the pool up on every request.
            self._pool = manager.connection_from_url(self.host)
            self._base = urllib3.util.parse_url(self.host).path or ""  # a server behind a path prefix
        self._timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=request_timeout)

    # -- transport -------------------------------------------------------------------------------
    def _headers(self, method: str, path: str, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "argoml"}
        if content_type:
            headers["Content-Type"] = content_type
        # Refreshes exec/OIDC tokens when the kubeconfig's provider says they expired.
        if self.api_client.configuration.refresh_api_key_hook is not None:
            self.api_client.configuration.refresh_api_key_hook(self.api_client.configuration)
        self.api_client.update_params_for_auth(headers, [], ["BearerToken"], path, method, None)
        return headers

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        read_timeout: float | None = None,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        url = self._base + path
        if query:
            url += "?" + urlencode({key: value for key, value in query.items() if value is not None})
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else orjson.dumps(body)
            content_type = content_type or "application/json"
        timeout = self._timeout
        if read_timeout:
            timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=read_timeout)
        try:
            response = self._pool.request(
                method,
                url,
                body=payload,
                headers=self._headers(method, path, content_type),
                timeout=timeout,
                preload_content=not stream,
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ServerError(f"{method} {path}: no answer from the API server: {exc}", status=0) from exc
        if response.status >= 400:
            data = response.data if not stream else response.read()
            raise error_from_response(response.status, data, response.headers)
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> fields.RawDict:
        """One API call, retried with backoff while the error is transient and the verb is safe to repeat.

        POST is retried only on 429 (the server did not act on it); everything else here is idempotent.
        """
        is_write = method != "GET"
        for attempt in range(1, self.max_attempts + 1):
            if is_write:
                waited = self.write_limiter.acquire()
                metrics.rate_limiter_duration_seconds.labels(verb=method).observe(waited)
                if waited >= THROTTLE_LOG_SECONDS:
                    logger.info("Waited for %.2fs due to client-side throttling (KUBE_WRITE_QPS)", waited)
            try:
                response = self._send(method, path, **kwargs)
                return orjson.loads(response.data) if response.data else {}
            except ApiError as error:
                retryable = error.transient and (method != "POST" or error.status == 429)
                if not retryable or attempt == self.max_attempts:
                    raise
                delay = error.retry_after or min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempt - 1))
                delay *= random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not cryptography
                logger.warning(
                    "retrying %s %s after %s (attempt %d, %.2fs)", method, path, error.status, attempt, delay
                )
                time.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- verbs -----------------------------------------------------------------------------------
    def get(
        self, rtype: ResourceType, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> fields.RawDict:
        return self.request("GET", rtype.path(namespace, name, subresource))

    def list(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> fields.RawDict:
        """One page of a list; `metadata.continue` says whether there is another."""
        query = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": limit,
            "continue": continue_token,
            "resourceVersion": resource_version,
            "timeoutSeconds": int(self.request_timeout),
        }
        return self.request("GET", rtype.path(namespace), query=query)

    def list_pages(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
    ) -> Iterator[fields.RawDict]:
        """Every page of a list, so memory stays bounded by one page however many objects exist."""
        token: str | None = None
        while True:
            page = self.list(
                rtype,
                namespace,
                label_selector=label_selector,
                field_selector=field_selector,
                limit=page_size,
                continue_token=token,
            )
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def create(
        self, rtype: ResourceType, body: fields.RawDict, namespace: str | None = None
    ) -> fields.RawDict:
        namespace = namespace or (body.get("metadata") or {}).get("namespace")
        return self.request("POST", rtype.path(namespace), body=body)

    def replace(
        self, rtype: ResourceType, body: fields.RawDict, *, subresource: str | None = None
    ) -> fields.RawDict:
        """PUT: fails with Conflict when metadata.resourceVersion is stale."""
        metadata = body["metadata"]
        return self.request(
            "PUT", rtype.path(metadata.get("namespace"), metadata["name"], subresource), body=body
        )

    def patch(
        self,
        rtype: ResourceType,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        force: bool = False,
    ) -> fields.RawDict:
        if patch_type not in PATCH_CONTENT_TYPES:
            raise ValueError(f"patch_type must be one of {sorted(PATCH_CONTENT_TYPES)}, not {patch_type!r}")
        query: dict[str, Any] = {"fieldManager": field_manager}
        if patch_type == "apply" and force:
            query["force"] = "true"
        return self.request(
            "PATCH",
            rtype.path(namespace, name, subresource),
            query=query,
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )

    def patch_status(
        self, rtype: ResourceType, name: str, status: fields.RawDict, namespace: str | None = None
    ) -> fields.RawDict:
        return self.patch(rtype, name, {"status": status}, namespace, subresource="status")

    def delete(
        self,
        rtype: ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> fields.RawDict:
        """Delete; `uid` makes it a precondition, so a newer object of the same name is never deleted."""
        body: fields.RawDict = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        return self.request("DELETE", rtype.path(namespace, name), body=body)

    def watch(
        self,
        rtype: ResourceType,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        silence_timeout: float | None = None,
        allow_bookmarks: bool = True,
    ) -> WatchStream:
        """Open a watch; iterate it for {type, object} dicts until the server ends it after `timeout_seconds`.

        A stream silent for `silence_timeout` seconds (default: the server timeout plus a margin) raises
        ServerError, so a dead connection never hangs a watcher; `close()` from another thread ends it.
        """
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "timeoutSeconds": timeout_seconds,
            "allowWatchBookmarks": "true" if allow_bookmarks else None,
        }
        response = self._send(
            "GET",
            rtype.path(namespace),
            query=query,
            read_timeout=silence_timeout or timeout_seconds + WATCH_READ_MARGIN_SECONDS,
            stream=True,
        )
        return WatchStream(response, description=str(rtype))

    def raw_get(self, path: str) -> fields.RawDict:
        """GET any path (discovery, /version)."""
        return self.request("GET", path)

    def proxy_service(
        self,
        method: str,
        namespace: str,
        service: str,
        port: int | str,
        path: str,
        *,
        query_string: str = "",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        read_timeout: float,
    ) -> urllib3.BaseHTTPResponse:
        """One request through the API server's service proxy
        (`/api/v1/namespaces/<ns>/services/<service>:<port>/proxy<path>`), answered unread: the caller streams
        the body and must close the response. Whatever the status (the pod's own, or the API server's
        Status when the Service has no ready pod or RBAC refuses `services/proxy`): only a server that does
        not answer at all raises (ServerError). `path` must start with "/"; `headers` go to the pod as given,
        besides our own credentials, which the API server removes."""
        if not path.startswith("/"):
            raise ValueError(f"path: {path!r} must start with '/'.")
        url = f"{self._base}{SERVICE.path(namespace, service)}:{port}/proxy{path}"
        if query_string:
            url += f"?{query_string}"
        own = self._headers(method, url, None)
        del own["Accept"]  # the pod answers in whatever the caller accepts
        sent = {**(headers or {}), **own}  # our credentials win over any the caller named
        try:
            return self._pool.request(
                method,
                url,
                body=body,
                headers=sent,
                timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=read_timeout),
                preload_content=False,
                decode_content=False,
                redirect=False,
                retries=False,
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ServerError(f"{method} {url}: no answer from the API server: {exc}", status=0) from exc

    def logs(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        previous: bool = False,
    ) -> str:
        """A pod's output (`kubectl logs`), read once from the pods/log subresource; bounded by
        `tail_lines` and `limit_bytes` so a chatty pod never fills the caller's memory. Not a follow:
        callers that follow a running pod read again."""
        query = {
            "container": container,
            "tailLines": tail_lines,
            "limitBytes": limit_bytes,
            "previous": "true" if previous else None,
        }
        response = self._send("GET", POD.path(namespace, name, "log"), query=query)
        return response.data.decode("utf-8", errors="replace")


class WatchStream:
    """The events of one watch request, read line by line from the chunked response.

    The connection is released once, by the thread that reads the stream when one does: urllib3 closes and
    pools a failed response's connection from the reading thread, so a second release from the thread that
    called `close()` could close a connection already handed to another request.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, description: str):
        self._response = response
        self._description = description
        self._lock = threading.Lock()
        self._reader: int | None = None
        self._released = False
        self.closed = False

    def __iter__(self) -> Iterator[fields.RawDict]:
        with self._lock:
            if self.closed:
                return
            self._reader = threading.get_ident()
        buffer = b""
        try:
            for chunk in self._response.stream(65536, decode_content=True):
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)
            if buffer.strip():
                yield orjson.loads(buffer)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            if not self.closed:
                raise ServerError(f"watch of {self._description} interrupted: {exc}", status=0) from exc
        finally:
            with self._lock:
                self.closed = True
                self._reader = None
            self._release()

    def close(self) -> None:
        """End the stream now, even while another thread is blocked reading it.

        Shutting the socket down wakes a blocked reader in another thread, which then releases the
        connection; a stream no other thread reads is released here. Closing the connection keeps a
        half-read stream from ever being reused for another request.

        Both directions are shut, not only reading (urllib3's `shutdown()`): over TLS, the reader's OpenSSL
        answers the end of its input with a fatal `decode_error` alert, which an open write side would
        carry to the API server (kubesim logged one traceback per watch at every Ctrl-C of `make run`).
        """
        with self._lock:
            if self.closed:
                return
            self.closed = True
            read_elsewhere = self._reader not in (None, threading.get_ident())
        connection = getattr(self._response, "connection", None)
        sock = getattr(connection, "sock", None)
        with contextlib.suppress(ValueError, RuntimeError, OSError):
            if isinstance(sock, socket.socket):
                sock.shutdown(socket.SHUT_RDWR)
            else:
                self._response.shutdown()
        if not read_elsewhere:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._response.close()
        self._response.release_conn()


_clients: dict[int, KubeClient] = {}
_clients_lock = threading.Lock()


def get_client() -> KubeClient:
    """The process's client for the configured cluster. Per pid: a forked worker never shares sockets."""
    pid = os.getpid()
    with _clients_lock:
        existing = _clients.get(pid)
        if existing is None:
            existing = KubeClient(
                new_api_client(),
                write_limiter=TokenBucket(settings.KUBE_WRITE_QPS, settings.KUBE_WRITE_BURST),
                request_timeout=settings.KUBE_REQUEST_TIMEOUT_SECONDS,
            )
            _clients.clear()
            _clients[pid] = existing
        return existing


def reset_client() -> None:
    """Forget the cached client (after the configuration changed, e.g. in tests)."""
    with _clients_lock:
        _clients.clear()
