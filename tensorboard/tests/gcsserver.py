"""A small GCS JSON API server for the tests: buckets in memory, objects listed page by page and read with
`alt=media`, and an OAuth token endpoint that checks the service account's signed JWT assertion.

Every storage request must carry a bearer token this server issued, and a token is issued only for an
assertion signed by the key of the service account it was made for (`service_account_key` writes that key,
with `token_uri` pointing here), so a test proves the fetcher authenticated with the key the pod's Secret
held, not merely that it reached the port.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

CLIENT_EMAIL = "tensorboard-reader@argoml-test.iam.gserviceaccount.com"
READ_ONLY_SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
# google-auth addresses its assertion to Google's token endpoint whatever `token_uri` says; Google's endpoint
# accepts that audience, so this one does too (besides its own address).
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Store:
    public_key: rsa.RSAPublicKey
    token_uri: str = ""
    page_size: int = 1000
    buckets: dict[str, dict[str, tuple[bytes, int]]] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)  # "GET <path>?<query>" of every storage request
    generation: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def put(self, bucket: str, name: str, body: bytes) -> None:
        """Write an object; like GCS, every write gets a new generation."""
        with self.lock:
            self.generation += 1
            self.buckets.setdefault(bucket, {})[name] = (body, self.generation)

    def issue(self, assertion: str) -> str | None:
        """A new access token for a valid assertion (RS256, our account, our token URI, read-only scope)."""
        try:
            header, claims, signature = assertion.split(".")
            self.public_key.verify(
                _unb64(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
            payload = json.loads(_unb64(claims))
        except (ValueError, InvalidSignature):
            return None
        if json.loads(_unb64(header)).get("alg") != "RS256":
            return None
        if payload.get("iss") != CLIENT_EMAIL or payload.get("aud") not in (self.token_uri, GOOGLE_TOKEN_URI):
            return None
        if READ_ONLY_SCOPE not in str(payload.get("scope", "")).split():
            return None
        token = secrets.token_urlsafe(16)
        with self.lock:
            self.tokens.add(token)
        return token


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._answer(status, json.dumps(value).encode())

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"code": status, "message": message}})

    def do_POST(self) -> None:
        store = self.server.store
        if urlsplit(self.path).path != "/token":
            return self._error(404, "Not Found")
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return self._json(400, {"error": "unsupported_grant_type"})
        token = store.issue((form.get("assertion") or [""])[0])
        if token is None:
            return self._json(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
        self._json(200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"})

    def do_GET(self) -> None:
        store = self.server.store
        parts = urlsplit(self.path)
        with store.lock:
            store.requests.append(f"GET {parts.path}?{parts.query}")
        authorization = self.headers.get("Authorization", "")
        if authorization.removeprefix("Bearer ") not in store.tokens:
            return self._error(401, "Anonymous caller does not have storage.objects.get access.")
        segments = parts.path.split("/")
        # /storage/v1/b/<bucket>/o[/<object>]
        if segments[:4] != ["", "storage", "v1", "b"] or len(segments) < 6 or segments[5] != "o":
            return self._error(404, "Not Found")
        bucket = store.buckets.get(unquote(segments[4]))
        if bucket is None:
            return self._error(404, "The specified bucket does not exist.")
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if len(segments) == 6:
            return self._list(bucket, query)
        name = unquote("/".join(segments[6:]))
        if name not in bucket:
            return self._error(404, f"No such object: {segments[4]}/{name}")
        body, generation = bucket[name]
        if query.get("alt") == "media":
            return self._answer(200, body, "application/octet-stream")
        self._json(200, {"name": name, "generation": str(generation), "size": str(len(body))})

    def _list(self, bucket: dict[str, tuple[bytes, int]], query: dict[str, str]) -> None:
        store = self.server.store
        size = min(int(query.get("maxResults") or 1000), store.page_size)
        names = sorted(name for name in bucket if name.startswith(query.get("prefix", "")))
        start = int(query.get("pageToken") or 0)
        page: dict[str, Any] = {
            "kind": "storage#objects",
            "items": [
                {"name": name, "generation": str(bucket[name][1])} for name in names[start : start + size]
            ],
        }
        if start + size < len(names):
            page["nextPageToken"] = str(start + size)
        self._json(200, page)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: Store) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.store = store
        store.token_uri = f"{self.endpoint}/token"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def service_account_key(key: rsa.RSAPrivateKey, token_uri: str) -> dict[str, str]:
    """A service-account key file as Google issues them, for our private key and token endpoint."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "type": "service_account",
        "project_id": "argoml-test",
        "private_key_id": "test-key-1",
        "private_key": pem.decode(),
        "client_email": CLIENT_EMAIL,
        "client_id": "1",
        "token_uri": token_uri,
    }


@contextmanager
def running_gcs(key: rsa.RSAPrivateKey) -> Iterator[Server]:
    """The server on a free port, trusting assertions signed by `key`."""
    server = Server(Store(key.public_key()))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
