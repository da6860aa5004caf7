"""Pure: AWS Signature Version 4 as S3 checks it (the Authorization header and aws-chunked uploads).

The server recomputes what a client holding the secret key would have signed and compares; nothing here
talks to the network. Canonical forms follow AWS's "Create a canonical request": the path decoded and
encoded again with only the unreserved characters and `/` left as they are (as MinIO does, so clients
that encode a little more or less than needed still verify), the query sorted by encoded name and value,
the signed headers trimmed with inner spaces folded.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote, unquote

ALGORITHM = "AWS4-HMAC-SHA256"
CHUNK_ALGORITHM = "AWS4-HMAC-SHA256-PAYLOAD"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
STREAMING_PAYLOAD = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_CLOCK_SKEW_SECONDS = 15 * 60  # S3 refuses a request dated further from its clock (RequestTimeTooSkewed)
_UNRESERVED = "-_.~"


class SignatureError(Exception):
    """A request whose signature cannot be accepted: `code` is S3's error code, the message says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Credential:
    """What an Authorization header names: the key, the scope (date/region/service) and the signature."""

    access_key: str
    date: str  # YYYYMMDD
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str

    @property
    def scope(self) -> str:
        return f"{self.date}/{self.region}/{self.service}/aws4_request"


def parse_authorization(header: str) -> Credential:
    """The fields of `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`."""
    if not header.startswith(ALGORITHM + " "):
        raise SignatureError("AccessDenied", "only AWS Signature Version 4 (AWS4-HMAC-SHA256) is accepted")
    fields: dict[str, str] = {}
    for part in header[len(ALGORITHM) + 1 :].split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    try:
        access_key, date, region, service, terminator = fields["Credential"].split("/")
        signed = tuple(fields["SignedHeaders"].split(";"))
        signature = fields["Signature"]
    except (KeyError, ValueError):
        raise SignatureError(
            "AuthorizationHeaderMalformed", "the Authorization header needs Credential, SignedHeaders and "
            "Signature, the credential as <key>/<date>/<region>/s3/aws4_request",
        ) from None  # fmt: skip
    if terminator != "aws4_request" or service != "s3":
        raise SignatureError(
            "AuthorizationHeaderMalformed", "the credential scope must end in s3/aws4_request"
        )
    if "host" not in signed:
        raise SignatureError("AccessDenied", "the Host header must be signed")
    return Credential(access_key, date, region, service, signed, signature)


def canonical_path(raw_path: str) -> str:
    return quote(unquote(raw_path or "/"), safe="/" + _UNRESERVED)


def canonical_query(raw_query: str) -> str:
    pairs = sorted(
        (quote(unquote(name), safe=_UNRESERVED), quote(unquote(value), safe=_UNRESERVED))
        for name, value in parse_qsl(raw_query, keep_blank_values=True)
    )
    return "&".join(f"{name}={value}" for name, value in pairs)


def canonical_request(
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Mapping[str, str],
    signed: tuple[str, ...],
    payload: str,
) -> str:
    """`headers` keyed by lower-case name; `payload` is x-amz-content-sha256 as sent."""
    lines = "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n" for name in signed)
    return "\n".join(
        [method, canonical_path(raw_path), canonical_query(raw_query), lines, ";".join(signed), payload]
    )


def signing_key(secret_key: str, date: str, region: str, service: str = "s3") -> bytes:
    key = _hmac(f"AWS4{secret_key}".encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def request_signature(key: bytes, amz_date: str, scope: str, canonical: str) -> str:
    to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def chunk_signature(key: bytes, amz_date: str, scope: str, previous: str, chunk_sha256: str) -> str:
    """The signature of one chunk of a STREAMING-AWS4-HMAC-SHA256-PAYLOAD body, chained to the previous
    chunk's (the first chunk's previous is the request's signature)."""
    to_sign = "\n".join([CHUNK_ALGORITHM, amz_date, scope, previous, EMPTY_SHA256, chunk_sha256])
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def request_time(amz_date: str) -> datetime:
    try:
        return datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise SignatureError("AccessDenied", f"x-amz-date {amz_date!r} is not YYYYMMDDTHHMMSSZ") from None


def verify(
    credential: Credential,
    secret_key: str,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: Mapping[str, str],
    now: datetime,
    region: str,
) -> bytes:
    """Check a request's signature (headers keyed by lower-case name); returns the signing key, which
    chunked uploads need for each chunk. Raises SignatureError with S3's code."""
    amz_date = headers.get("x-amz-date", "")
    when = request_time(amz_date)
    if abs((now - when).total_seconds()) > MAX_CLOCK_SKEW_SECONDS:
        raise SignatureError(
            "RequestTimeTooSkewed",
            "the difference between the request time and the server's time is too large",
        )
    if credential.date != amz_date[:8]:
        raise SignatureError("AuthorizationHeaderMalformed", "the credential date is not the x-amz-date's")
    if credential.region != region:
        raise SignatureError(
            "AuthorizationHeaderMalformed", f"the region {credential.region!r} is wrong; expecting {region!r}"
        )
    payload = headers.get("x-amz-content-sha256", "")
    if not payload:
        raise SignatureError("InvalidRequest", "missing required header x-amz-content-sha256")
    canonical = canonical_request(method, raw_path, raw_query, headers, credential.signed_headers, payload)
    key = signing_key(secret_key, credential.date, credential.region, credential.service)
    expected = request_signature(key, amz_date, credential.scope, canonical)
    if not hmac.compare_digest(expected, credential.signature):
        raise SignatureError(
            "SignatureDoesNotMatch",
            "the request signature we calculated does not match the signature you provided; check your key "
            "and signing method",
        )
    return key


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()
