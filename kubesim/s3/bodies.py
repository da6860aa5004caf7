"""Pure pieces of a request: the body of a PUT as chunks (a plain body with its SHA-256 checked, or an
aws-chunked one with each chunk's signature checked), and a byte range; failures carry S3's code."""

from __future__ import annotations

import hashlib
import hmac
import io
import re
from collections.abc import Iterator

from kubesim.s3 import sigv4

MAX_CHUNK_LINE = 4096
READ_SIZE = 1024 * 1024
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class S3Failure(Exception):
    """A request S3 would refuse: `status` and `code` are its answer, the message says why."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def byte_range(text: str, size: int) -> tuple[int, int]:
    match = _RANGE.match(text.strip())
    if not match or match.groups() == ("", ""):
        raise S3Failure(416, "InvalidRange", f"the range {text!r} is not one bytes=start-end range")
    first, last = match.groups()
    if first == "":
        start, end = max(0, size - int(last)), size - 1
    else:
        start, end = int(first), min(size - 1, int(last)) if last else size - 1
    if start >= size or start > end:
        raise S3Failure(416, "InvalidRange", "the requested range is not satisfiable")
    return start, end


def plain_chunks(stream: io.BufferedIOBase, length: int, sha256: str) -> Iterator[bytes]:
    """The body in pieces; when a SHA-256 was signed, the last step checks it (before the store keeps it)."""
    digest = hashlib.sha256()
    remaining = length
    while remaining > 0:
        chunk = stream.read(min(READ_SIZE, remaining))
        if not chunk:
            raise S3Failure(400, "IncompleteBody", "the body ended before Content-Length bytes")
        digest.update(chunk)
        remaining -= len(chunk)
        yield chunk
    if sha256 and not hmac.compare_digest(digest.hexdigest(), sha256):
        raise S3Failure(
            400, "XAmzContentSHA256Mismatch", "the provided x-amz-content-sha256 does not match the body"
        )


def signed_chunks(
    stream: io.BufferedIOBase,
    length: int,
    size: int,
    signing_key: bytes,
    headers: dict[str, str],
    credential: sigv4.Credential,
) -> Iterator[bytes]:
    """An aws-chunked body (`<hex size>;chunk-signature=<sig>\\r\\n<data>\\r\\n`…, a 0-size chunk last), each
    chunk's signature checked against the chain started by the request's."""
    previous = credential.signature
    remaining, decoded = length, 0
    while True:
        line = stream.readline(MAX_CHUNK_LINE)
        remaining -= len(line)
        header, _, signature = line.strip().decode("ascii", "replace").partition(";chunk-signature=")
        try:
            chunk_size = int(header, 16)
        except ValueError:
            raise S3Failure(400, "InvalidChunkSizeError", "a chunk does not start with its size") from None
        if chunk_size < 0 or decoded + chunk_size > size or chunk_size + 2 > remaining:
            raise S3Failure(400, "IncompleteBody", "the chunks do not add up to the declared lengths")
        data = stream.read(chunk_size)
        ending = stream.read(2)
        remaining -= chunk_size + 2
        if len(data) != chunk_size or ending != b"\r\n":
            raise S3Failure(400, "IncompleteBody", "a chunk is shorter than its size")
        expected = sigv4.chunk_signature(
            signing_key, headers.get("x-amz-date", ""), credential.scope, previous,
            hashlib.sha256(data).hexdigest(),
        )  # fmt: skip
        if not hmac.compare_digest(expected, signature):
            raise S3Failure(403, "SignatureDoesNotMatch", "a chunk's signature does not match")
        previous = signature
        if chunk_size == 0:
            break
        decoded += chunk_size
        yield data
    if decoded != size or remaining != 0:
        raise S3Failure(400, "IncompleteBody", "the chunks do not add up to x-amz-decoded-content-length")
