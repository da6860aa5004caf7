"""A small S3-compatible server for the tests and the benchmark: path-style buckets in memory, Signature V4
checked against one access key, the calls an artifact reader makes (bucket location, ListObjectsV2, HEAD
and GET of an object) plus PUT to fill it.

Written here because the usual test servers (moto, MinIO) could not join this environment: moto pins
botocore, whose python-dateutil<3 clashes with the kubernetes client's >=3; MinIO's server is not on PyPI.
Every request must be signed with the configured keys, so a test proves the fetcher sent the credentials
the pod's Secret held, not merely that it reached the port.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

REGION = "us-east-1"
PAGE_SIZE = 1000


@dataclass
class Store:
    access_key: str
    secret_key: str
    buckets: dict[str, dict[str, bytes]] = field(default_factory=dict)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, bucket: str, key: str, body: bytes) -> None:
        with self.lock:
            self.buckets.setdefault(bucket, {})[key] = body


def _etag(body: bytes) -> str:
    return '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'


def _sign(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def expected_signature(secret_key: str, method: str, raw_path: str, raw_query: str, headers: dict[str, str],
                       authorization: str) -> tuple[str, str]:  # fmt: skip
    """(access key named, signature a client holding `secret_key` would send) for an AWS4 Authorization."""
    fields = dict(
        part.strip().split("=", 1) for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(",")
    )
    access_key, date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    pairs = sorted(
        (quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
        for k, v in parse_qsl(raw_query, keep_blank_values=True)
    )
    canonical = "\n".join(
        [
            method,
            raw_path or "/",
            "&".join(f"{k}={v}" for k, v in pairs),
            "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n" for name in signed),
            ";".join(signed),
            headers.get("x-amz-content-sha256", ""),
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            headers.get("x-amz-date", ""),
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = _sign(_sign(_sign(_sign(f"AWS4{secret_key}".encode(), date), region), service), "aws4_request")
    return access_key, hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


class Handler(BaseHTTPRequestHandler):
    server: S3Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = f"<Error><Code>{code}</Code><Message>{escape(message)}</Message></Error>".encode()
        self._send(status, body, {"Content-Type": "application/xml"})

    def _authorized(self) -> bool:
        store = self.server.store
        authorization = self.headers.get("Authorization", "")
        if not authorization.startswith("AWS4-HMAC-SHA256 "):
            self._error(403, "AccessDenied", "anonymous requests are refused")
            return False
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        access, signature = expected_signature(
            store.secret_key, self.command, parts.path, parts.query, headers, authorization
        )
        sent = authorization.rsplit("Signature=", 1)[-1].strip()
        if access != store.access_key:
            self._error(403, "InvalidAccessKeyId", f"unknown access key {access}")
            return False
        if not hmac.compare_digest(sent, signature):
            self._error(403, "SignatureDoesNotMatch", "the signature does not match")
            return False
        return True

    def _target(self) -> tuple[str, str, dict[str, str]]:
        parts = urlsplit(self.path)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        return bucket, key, dict(parse_qsl(parts.query, keep_blank_values=True))

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if not self._authorized():
            return
        bucket, key, _ = self._target()
        if key:
            self.server.store.put(bucket, key, body)
            self._send(200, headers={"ETag": _etag(body)})
        else:
            self.server.store.buckets.setdefault(bucket, {})
            self._send(200)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        with self.server.store.lock:
            self.server.store.requests += 1
        if not self._authorized():
            return
        bucket, key, query = self._target()
        objects = self.server.store.buckets.get(bucket)
        if objects is None:
            self._error(404, "NoSuchBucket", f"bucket {bucket} does not exist")
        elif "location" in query:
            location = f'<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{REGION}</LocationConstraint>'
            self._send(200, location.encode(), {"Content-Type": "application/xml"})
        elif not key:
            self._list(bucket, objects, query)
        elif key not in objects:
            self._error(404, "NoSuchKey", f"no object {key}")
        else:
            body = objects[key]
            headers = {"ETag": _etag(body), "Content-Type": "application/octet-stream",
                       "Last-Modified": formatdate(usegmt=True)}  # fmt: skip
            self._send(200, body, headers)

    def _list(self, bucket: str, objects: dict[str, bytes], query: dict[str, str]) -> None:
        prefix = query.get("prefix", "")
        after = query.get("continuation-token") or query.get("start-after") or ""
        keys = sorted(key for key in objects if key.startswith(prefix) and key > after)
        page, more = keys[:PAGE_SIZE], len(keys) > PAGE_SIZE
        encode = (lambda text: quote(text, safe="/")) if query.get("encoding-type") == "url" else escape
        contents = "".join(
            f"<Contents><Key>{encode(key)}</Key><ETag>{escape(_etag(objects[key]))}</ETag>"
            f"<Size>{len(objects[key])}</Size><LastModified>2025-01-01T00:00:00.000Z</LastModified>"
            "<StorageClass>STANDARD</StorageClass></Contents>"
            for key in page
        )
        token = f"<NextContinuationToken>{escape(page[-1])}</NextContinuationToken>" if more else ""
        body = (
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>{escape(bucket)}</Name><Prefix>{encode(prefix)}</Prefix><KeyCount>{len(page)}</KeyCount>"
            f"<MaxKeys>{PAGE_SIZE}</MaxKeys><IsTruncated>{'true' if more else 'false'}</IsTruncated>"
            f"{'<EncodingType>url</EncodingType>' if query.get('encoding-type') == 'url' else ''}"
            f"{contents}{token}</ListBucketResult>"
        )
        self._send(200, body.encode(), {"Content-Type": "application/xml"})


class S3Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: Store) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.store = store

    @property
    def endpoint(self) -> str:
        """host:port, as an Argo repository's `endpoint` names it."""
        return f"127.0.0.1:{self.server_address[1]}"


@contextmanager
def running_s3(access_key: str = "test-access", secret_key: str = "test-secret") -> Iterator[S3Server]:  # noqa: S107
    """A server on a free local port for the duration of the block."""
    server = S3Server(Store(access_key, secret_key))
    thread = threading.Thread(target=server.serve_forever, name="s3server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
