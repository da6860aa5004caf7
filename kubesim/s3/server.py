"""An S3-compatible HTTP server over an ObjectStore: path-style buckets, Signature V4 checked against one
access key, and the calls artifact readers and writers make (Argo's executor, the `minio` client, `mc`,
boto3): ListBuckets, HeadBucket, GetBucketLocation, ListObjects (V1 and V2: prefix, delimiter, pages),
HEAD, GET (with a byte range), PUT (a signed, unsigned or aws-chunked streaming payload) and DELETE of an
object. Anything else (multipart uploads, presigned URLs, versions, ACLs) is answered `NotImplemented`.

Every request is bounded: headers by http.server (100 lines of at most 64 KiB), an object by
`max_object_bytes`, a chunk header line, the connections served at once, and an idle connection's time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

from kubesim.s3 import bodies, sigv4
from kubesim.s3.stores import MemoryStore, ObjectInfo, ObjectStore, StoreError

REGION = "us-east-1"
NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/"
MAX_KEYS = 1000  # S3's page size, and the most max-keys may ask for
DEFAULT_MAX_OBJECT_BYTES = 1024**3
MAX_CONNECTIONS = 64
IDLE_SECONDS = 60.0  # a connection silent this long is closed
# Sub-resources of buckets and objects this server does not implement (multipart, versions, policies…).
UNSUPPORTED_SUBRESOURCES = frozenset(
    ("uploads", "uploadId", "versionId", "versions", "acl", "policy", "tagging", "delete", "lifecycle",
     "cors", "website", "select", "retention", "legal-hold", "encryption", "replication", "notification")
)  # fmt: skip


class Handler(BaseHTTPRequestHandler):
    server: S3Server
    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS
    server_version = "kubesim-s3"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:
        pass

    # --- answers ---------------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("x-amz-request-id", self._request_id)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _xml(self, status: int, body: str) -> None:
        document = '<?xml version="1.0" encoding="UTF-8"?>\n' + body
        self._send(status, document.encode(), {"Content-Type": "application/xml"})

    def _error(self, failure: bodies.S3Failure | StoreError | sigv4.SignatureError) -> None:
        status = getattr(failure, "status", 403)
        resource = escape(urlsplit(self.path).path)
        self._xml(
            status,
            f"<Error><Code>{failure.code}</Code><Message>{escape(str(failure))}</Message>"
            f"<Resource>{resource}</Resource><RequestId>{self._request_id}</RequestId></Error>",
        )

    # --- the request -----------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        self._request_id = secrets.token_hex(8).upper()
        self._body_read = False
        try:
            self._dispatch()
        except (bodies.S3Failure, StoreError, sigv4.SignatureError) as failure:
            self._error(failure)
        if not self._body_read and self._content_length() > 0:
            self.close_connection = True  # the unread body would be taken for the next request

    def _content_length(self) -> int:
        try:
            return max(0, int(self.headers.get("Content-Length") or 0))
        except ValueError:
            return 0

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        headers = {name.lower(): value for name, value in self.headers.items()}
        signing_key, credential = self._authenticate(parts.path, parts.query, headers)
        store = self.server.store
        unsupported = sorted(set(query) & UNSUPPORTED_SUBRESOURCES)
        if self.command == "POST" or unsupported:
            what = ", ".join(unsupported) or "POST"
            raise bodies.S3Failure(501, "NotImplemented", f"this dev server does not implement {what}")
        if not bucket:
            if self.command != "GET":
                raise bodies.S3Failure(405, "MethodNotAllowed", "only GET (ListBuckets) is allowed on /")
            return self._list_buckets()
        if not key:
            return self._bucket(bucket, query)
        if not store.has_bucket(bucket):
            raise bodies.S3Failure(404, "NoSuchBucket", f"the bucket {bucket} does not exist")
        if self.command == "PUT":
            return self._put(bucket, key, headers, signing_key, credential)
        if self.command == "DELETE":
            store.delete(bucket, key)
            return self._send(204)
        return self._get(bucket, key, headers)

    def _authenticate(
        self, raw_path: str, raw_query: str, headers: dict[str, str]
    ) -> tuple[bytes, sigv4.Credential]:
        if "X-Amz-Signature" in raw_query or "X-Amz-Credential" in raw_query:
            raise bodies.S3Failure(
                501, "NotImplemented", "presigned URLs are not supported by this dev server"
            )
        authorization = headers.get("authorization", "")
        if not authorization:
            raise bodies.S3Failure(
                403, "AccessDenied", "anonymous requests are refused: sign them (Signature V4)"
            )
        credential = sigv4.parse_authorization(authorization)
        if not hmac.compare_digest(credential.access_key, self.server.access_key):
            raise bodies.S3Failure(
                403, "InvalidAccessKeyId", "the access key ID you provided does not exist in our records"
            )
        key = sigv4.verify(
            credential, self.server.secret_key, self.command, raw_path, raw_query, headers,
            self.server.clock(), self.server.region,
        )  # fmt: skip
        return key, credential

    # --- buckets ---------------------------------------------------------------------------------------

    def _list_buckets(self) -> None:
        buckets = "".join(
            f"<Bucket><Name>{escape(name)}</Name><CreationDate>2025-01-01T00:00:00.000Z</CreationDate></Bucket>"
            for name in self.server.store.bucket_names()
        )
        owner = "<Owner><ID>kubesim</ID><DisplayName>kubesim</DisplayName></Owner>"
        self._xml(200, f'<ListAllMyBucketsResult xmlns="{NAMESPACE}">{owner}<Buckets>{buckets}</Buckets>'
                       "</ListAllMyBucketsResult>")  # fmt: skip

    def _bucket(self, bucket: str, query: dict[str, str]) -> None:
        store = self.server.store
        if self.command == "PUT":
            store.create_bucket(bucket)
            return self._send(200, headers={"Location": f"/{bucket}"})
        if self.command == "DELETE":
            raise bodies.S3Failure(501, "NotImplemented", "this dev server does not delete buckets")
        if not store.has_bucket(bucket):
            raise bodies.S3Failure(404, "NoSuchBucket", f"the bucket {bucket} does not exist")
        if self.command == "HEAD":
            return self._send(200, headers={"x-amz-bucket-region": self.server.region})
        if "location" in query:
            region = "" if self.server.region == REGION else escape(self.server.region)
            return self._xml(200, f'<LocationConstraint xmlns="{NAMESPACE}">{region}</LocationConstraint>')
        self._list(bucket, query)

    def _list(self, bucket: str, query: dict[str, str]) -> None:
        version2 = query.get("list-type") == "2"
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        try:
            max_keys = min(MAX_KEYS, int(query.get("max-keys", MAX_KEYS)))
        except ValueError:
            raise bodies.S3Failure(400, "InvalidArgument", "max-keys must be an integer") from None
        if max_keys < 0:
            raise bodies.S3Failure(400, "InvalidArgument", "max-keys must not be negative")
        if version2:
            token = query.get("continuation-token")
            after = _decode_token(token) if token else query.get("start-after", "")
        else:
            after = query.get("marker", "")
        page = list_page(self.server.store.listing(bucket, prefix), prefix, delimiter, after, max_keys)
        url = query.get("encoding-type") == "url"

        def text(value: str) -> str:
            return escape(quote(value, safe="/")) if url else escape(value)

        contents = "".join(
            f"<Contents><Key>{text(info.key)}</Key><LastModified>{_iso(info.modified)}</LastModified>"
            f"<ETag>{escape(info.etag)}</ETag><Size>{info.size}</Size>"
            "<StorageClass>STANDARD</StorageClass></Contents>"
            for info in page.objects
        )
        prefixes = "".join(
            f"<CommonPrefixes><Prefix>{text(common)}</Prefix></CommonPrefixes>" for common in page.prefixes
        )
        fields = [
            f"<Name>{escape(bucket)}</Name>",
            f"<Prefix>{text(prefix)}</Prefix>",
            f"<MaxKeys>{max_keys}</MaxKeys>",
            f"<Delimiter>{text(delimiter)}</Delimiter>" if delimiter else "",
            f"<IsTruncated>{'true' if page.truncated else 'false'}</IsTruncated>",
            "<EncodingType>url</EncodingType>" if url else "",
        ]
        if version2:
            fields.append(f"<KeyCount>{len(page.objects) + len(page.prefixes)}</KeyCount>")
            if "continuation-token" in query:
                fields.append(f"<ContinuationToken>{escape(query['continuation-token'])}</ContinuationToken>")
            if "start-after" in query:
                fields.append(f"<StartAfter>{text(query['start-after'])}</StartAfter>")
            if page.truncated:
                fields.append(f"<NextContinuationToken>{_encode_token(page.last)}</NextContinuationToken>")
        else:
            fields.append(f"<Marker>{text(after)}</Marker>")
            if page.truncated and delimiter:
                fields.append(f"<NextMarker>{text(page.last)}</NextMarker>")
        self._xml(200, f'<ListBucketResult xmlns="{NAMESPACE}">{"".join(fields)}{contents}{prefixes}'
                       "</ListBucketResult>")  # fmt: skip

    # --- objects ---------------------------------------------------------------------------------------

    def _get(self, bucket: str, key: str, headers: dict[str, str]) -> None:
        found = self.server.store.open(bucket, key)
        if found is None:
            raise bodies.S3Failure(404, "NoSuchKey", "The specified key does not exist.")
        info, handle = found
        with handle:
            start, end = 0, info.size - 1
            status = 200
            answer = {
                "ETag": info.etag,
                "Last-Modified": formatdate(info.modified, usegmt=True),
                "Content-Type": "application/octet-stream",
                "Accept-Ranges": "bytes",
            }
            wanted = headers.get("range")
            if wanted:
                start, end = bodies.byte_range(wanted, info.size)
                status = 206
                answer["Content-Range"] = f"bytes {start}-{end}/{info.size}"
            length = max(0, end - start + 1)
            self.send_response(status)
            self.send_header("x-amz-request-id", self._request_id)
            for name, value in answer.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            if self.command == "HEAD":
                return
            handle.seek(start)
            remaining = length
            while remaining > 0 and (chunk := handle.read(min(bodies.READ_SIZE, remaining))):
                self.wfile.write(chunk)
                remaining -= len(chunk)

    def _put(
        self, bucket: str, key: str, headers: dict[str, str], signing_key: bytes, credential: sigv4.Credential
    ) -> None:
        if "x-amz-copy-source" in headers:
            raise bodies.S3Failure(501, "NotImplemented", "this dev server does not implement CopyObject")
        if "content-length" not in headers:
            raise bodies.S3Failure(
                411, "MissingContentLength", "you must provide the Content-Length HTTP header"
            )
        if headers.get("transfer-encoding"):
            raise bodies.S3Failure(
                501, "NotImplemented", "Transfer-Encoding is not supported; send Content-Length"
            )
        length = self._content_length()
        payload = headers.get("x-amz-content-sha256", "")
        limit = self.server.max_object_bytes
        if payload == sigv4.STREAMING_PAYLOAD:
            try:
                size = int(headers.get("x-amz-decoded-content-length", ""))
            except ValueError:
                raise bodies.S3Failure(
                    411, "MissingContentLength", "a streaming upload needs x-amz-decoded-content-length"
                ) from None
            if size > limit:
                raise bodies.S3Failure(400, "EntityTooLarge", f"an object is at most {limit} bytes here")
            chunks = bodies.signed_chunks(self.rfile, length, size, signing_key, headers, credential)
        elif payload == sigv4.UNSIGNED_PAYLOAD or re.fullmatch(r"[0-9a-f]{64}", payload):
            if length > limit:
                raise bodies.S3Failure(400, "EntityTooLarge", f"an object is at most {limit} bytes here")
            chunks = bodies.plain_chunks(
                self.rfile, length, "" if payload == sigv4.UNSIGNED_PAYLOAD else payload
            )
        else:
            raise bodies.S3Failure(
                501, "NotImplemented", f"x-amz-content-sha256 {payload!r} is not supported"
            )
        self._body_read = True  # from here on the body is consumed, or the connection closed
        try:
            info = self.server.store.write(bucket, key, chunks)
        except (bodies.S3Failure, StoreError, OSError):
            self.close_connection = True
            raise
        self._send(200, headers={"ETag": info.etag})


class Page:
    """One page of a listing: objects and common prefixes in key order, whether more follow, the last
    entry (where the next page starts)."""

    def __init__(self) -> None:
        self.objects: list[ObjectInfo] = []
        self.prefixes: list[str] = []
        self.truncated = False
        self.last = ""


def list_page(objects: list[ObjectInfo], prefix: str, delimiter: str, after: str, max_keys: int) -> Page:
    """Pure: S3's listing of sorted `objects` (all starting with `prefix`) after `after`: keys sharing the
    part up to the first `delimiter` past the prefix roll up into one common prefix, which counts as one
    entry and is never listed twice across pages."""
    page = Page()
    count = 0
    for info in objects:
        if info.key.encode() <= after.encode():
            continue
        entry = info.key
        common = ""
        if delimiter:
            cut = info.key.find(delimiter, len(prefix))
            if cut >= 0:
                common = info.key[: cut + len(delimiter)]
                if common == after or common == page.last:
                    continue
                entry = common
        if count == max_keys:
            page.truncated = True
            break
        if common:
            page.prefixes.append(common)
        else:
            page.objects.append(info)
        page.last = entry
        count += 1
    return page


def _encode_token(last: str) -> str:
    return base64.urlsafe_b64encode(last.encode()).decode()


def _decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bodies.S3Failure(
            400, "InvalidArgument", "the continuation token is not one this server gave"
        ) from None


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class S3Server(ThreadingHTTPServer):
    """The server on (host, port); at most MAX_CONNECTIONS connections are served at once."""

    daemon_threads = True

    def __init__(
        self,
        store: ObjectStore,
        access_key: str,
        secret_key: str,
        *,
        address: tuple[str, int] = ("127.0.0.1", 0),
        region: str = REGION,
        max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if not access_key or not secret_key:
            raise ValueError("the S3 server needs an access key and a secret key")
        self.store = store
        self.access_key, self.secret_key = access_key, secret_key
        self.region = region
        self.max_object_bytes = max_object_bytes
        self.clock = clock  # what x-amz-date is checked against (a test may fix it)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, Handler)

    @property
    def endpoint(self) -> str:
        """host:port, as an Argo repository's `endpoint` names it."""
        host, port = self.server_address[:2]
        return f"{host!s}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # too many at once: the client retries
            return
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is not worth a traceback; anything else is."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


@contextmanager
def running(
    store: ObjectStore | None = None,
    access_key: str = "test-access",
    secret_key: str = "test-secret",  # noqa: S107 - tests' credentials
) -> Iterator[S3Server]:
    """A server on a free loopback port for the duration of the block (an in-memory store by default)."""
    server = S3Server(store if store is not None else MemoryStore(), access_key, secret_key)
    thread = threading.Thread(target=server.serve_forever, name="kubesim-s3", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
