"""Where the S3 server keeps objects: in memory (tests) or as files under a directory (the dev stack's
artifact repository, `.dev/pods/artifacts`, which the process kubelet's argoexec writes too).

A key is a path of the directory store, so keys are checked before they touch the disk: 1 to 1024 bytes of
UTF-8 without control characters, `/`-separated segments that are neither empty nor `.` or `..`, and none
starting with the store's own upload prefix. No symlink is ever followed: a key whose file or any parent
is a symlink does not exist, and the parents must resolve inside the store's directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import secrets
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

MAX_KEY_BYTES = 1024  # S3's limit on a key's length
MAX_LISTED_OBJECTS = 100_000  # one listing walks at most this many files (the directory store)
UPLOAD_PREFIX = ".kubesim-upload-"  # an upload in progress, renamed into place once complete
_ETAG_CACHE_SIZE = 10_000


class StoreError(Exception):
    """A request the store refuses: `code` and `status` are S3's, the message says why."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def check_key(key: str) -> str:
    """`key` if it is a key this server stores, else StoreError (InvalidArgument / KeyTooLongError)."""
    if not key:
        raise StoreError(400, "InvalidArgument", "an object key must not be empty")
    if len(key.encode()) > MAX_KEY_BYTES:
        raise StoreError(400, "KeyTooLongError", f"an object key is at most {MAX_KEY_BYTES} bytes")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in key):
        raise StoreError(400, "InvalidArgument", "an object key must not contain control characters")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise StoreError(
                400, "InvalidArgument", f"object key {key!r}: a segment between '/' is empty, '.' or '..'"
            )
        if segment.startswith(UPLOAD_PREFIX):
            raise StoreError(400, "InvalidArgument", f"object key {key!r}: {UPLOAD_PREFIX}* is reserved")
    return key


def etag_of(digest: str) -> str:
    return f'"{digest}"'


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    etag: str  # quoted MD5 of the content, as S3 gives a single-part object's
    modified: float  # seconds since the epoch


class ObjectStore(Protocol):
    """What the server needs of a store (one bucket or several)."""

    def bucket_names(self) -> list[str]: ...
    def has_bucket(self, bucket: str) -> bool: ...
    def create_bucket(self, bucket: str) -> None: ...
    def stat(self, bucket: str, key: str) -> ObjectInfo | None: ...
    def open(self, bucket: str, key: str) -> tuple[ObjectInfo, BinaryIO] | None: ...
    def write(self, bucket: str, key: str, chunks: Iterable[bytes]) -> ObjectInfo: ...
    def delete(self, bucket: str, key: str) -> None: ...
    def listing(self, bucket: str, prefix: str) -> list[ObjectInfo]: ...


@dataclass
class MemoryStore:
    """Buckets of bytes in memory, for tests (`buckets[name][key] = body` fills one directly)."""

    buckets: dict[str, dict[str, bytes]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bucket_names(self) -> list[str]:
        return sorted(self.buckets)

    def has_bucket(self, bucket: str) -> bool:
        return bucket in self.buckets

    def create_bucket(self, bucket: str) -> None:
        with self.lock:
            if bucket in self.buckets:
                raise StoreError(409, "BucketAlreadyOwnedByYou", f"bucket {bucket} exists")
            self.buckets[bucket] = {}

    def put(self, bucket: str, key: str, body: bytes) -> None:
        with self.lock:
            self.buckets.setdefault(bucket, {})[check_key(key)] = body

    def _info(self, key: str, body: bytes) -> ObjectInfo:
        return ObjectInfo(key, len(body), etag_of(hashlib.md5(body, usedforsecurity=False).hexdigest()), 0.0)

    def stat(self, bucket: str, key: str) -> ObjectInfo | None:
        body = self.buckets.get(bucket, {}).get(key)
        return None if body is None else self._info(key, body)

    def open(self, bucket: str, key: str) -> tuple[ObjectInfo, BinaryIO] | None:
        body = self.buckets.get(bucket, {}).get(key)
        return None if body is None else (self._info(key, body), io.BytesIO(body))

    def write(self, bucket: str, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        body = b"".join(chunks)  # raises before anything is stored when a chunk is refused
        self.put(bucket, key, body)
        return self._info(key, body)

    def delete(self, bucket: str, key: str) -> None:
        with self.lock:
            self.buckets.get(bucket, {}).pop(key, None)

    def listing(self, bucket: str, prefix: str) -> list[ObjectInfo]:
        objects = dict(self.buckets.get(bucket, {}))
        return [self._info(key, objects[key]) for key in sorted(objects) if key.startswith(prefix)]


class DirectoryStore:
    """One bucket whose objects are the regular files under `root` (a key is the file's relative path)."""

    def __init__(self, root: Path, bucket: str) -> None:
        self.root = root
        self.bucket = bucket
        self._etags: OrderedDict[tuple[str, int, int, int], str] = OrderedDict()
        self._lock = threading.Lock()
        root.mkdir(parents=True, exist_ok=True)
        self._real_root = os.path.realpath(root)

    def bucket_names(self) -> list[str]:
        return [self.bucket]

    def has_bucket(self, bucket: str) -> bool:
        return bucket == self.bucket

    def create_bucket(self, bucket: str) -> None:
        if bucket == self.bucket:
            raise StoreError(409, "BucketAlreadyOwnedByYou", f"bucket {bucket} exists")
        raise StoreError(403, "AccessDenied", f"this server keeps one bucket, {self.bucket}")

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.write(bucket, key, [body])

    # --- paths -------------------------------------------------------------------------------------

    def _path(self, key: str) -> str:
        """The file of a checked key, its parents resolved inside the root (StoreError otherwise)."""
        path = os.path.join(self._real_root, *check_key(key).split("/"))
        parent = os.path.realpath(os.path.dirname(path))
        if parent != self._real_root and not parent.startswith(self._real_root + os.sep):
            raise StoreError(400, "InvalidArgument", f"object key {key!r} leaves the store")
        return path

    def _open_regular(self, path: str) -> BinaryIO | None:
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # missing, a symlink (ELOOP), a parent that is a file (ENOTDIR)
            return None
        handle = os.fdopen(descriptor, "rb")
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            handle.close()
            return None
        return handle

    def _info(self, key: str, path: str, handle: BinaryIO | None = None) -> ObjectInfo:
        status = os.fstat(handle.fileno()) if handle is not None else os.lstat(path)
        identity = (path, status.st_ino, status.st_size, status.st_mtime_ns)
        with self._lock:
            digest = self._etags.get(identity)
            if digest is not None:
                self._etags.move_to_end(identity)
        if digest is None:
            digest = _md5_of(path) if handle is None else _md5_of_handle(handle)
            with self._lock:
                self._etags[identity] = digest
                while len(self._etags) > _ETAG_CACHE_SIZE:
                    self._etags.popitem(last=False)
        return ObjectInfo(key, status.st_size, etag_of(digest), status.st_mtime)

    # --- objects -----------------------------------------------------------------------------------

    def stat(self, bucket: str, key: str) -> ObjectInfo | None:
        found = self.open(bucket, key)
        if found is None:
            return None
        found[1].close()
        return found[0]

    def open(self, bucket: str, key: str) -> tuple[ObjectInfo, BinaryIO] | None:
        if bucket != self.bucket:
            return None
        try:
            path = self._path(key)
        except StoreError:
            return None
        handle = self._open_regular(path)
        if handle is None:
            return None
        return self._info(key, path, handle), handle

    def write(self, bucket: str, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        path = self._path(key)
        parent = os.path.dirname(path)
        try:
            os.makedirs(parent, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise StoreError(
                400,
                "XMinioParentIsObject",
                f"{key}: a parent of this key is an object, so it cannot be stored",
            ) from None
        if os.path.realpath(parent) != parent:
            raise StoreError(400, "InvalidArgument", f"object key {key!r} leaves the store")
        temporary = os.path.join(parent, UPLOAD_PREFIX + secrets.token_hex(8))
        digest = hashlib.md5(usedforsecurity=False)
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(descriptor, "wb") as out:
                for chunk in chunks:
                    digest.update(chunk)
                    out.write(chunk)
            if os.path.isdir(path) and not os.path.islink(path):
                raise StoreError(
                    409, "XMinioObjectExistsAsDirectory", f"{key}: the key is a prefix of others"
                )
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        status = os.lstat(path)
        identity = (path, status.st_ino, status.st_size, status.st_mtime_ns)
        with self._lock:
            self._etags[identity] = digest.hexdigest()
        return ObjectInfo(key, status.st_size, etag_of(digest.hexdigest()), status.st_mtime)

    def delete(self, bucket: str, key: str) -> None:
        """Remove the object (S3 answers 204 whether or not it existed), then the directories it leaves
        empty: S3 has no directories, so none may outlive their last object."""
        if bucket != self.bucket:
            return
        try:
            path = self._path(key)
        except StoreError:
            return
        if not os.path.islink(path) and os.path.isfile(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        directory = os.path.dirname(path)
        while directory != self._real_root and directory.startswith(self._real_root + os.sep):
            try:
                os.rmdir(directory)
            except OSError:
                break
            directory = os.path.dirname(directory)

    def listing(self, bucket: str, prefix: str) -> list[ObjectInfo]:
        """Every object whose key starts with `prefix`, sorted by key; walks only the prefix's directory."""
        if bucket != self.bucket:
            return []
        directory = prefix.rpartition("/")[0]
        if directory:
            try:
                start = os.path.dirname(self._path(directory + "/x"))
            except StoreError:
                return []
        else:
            start = self._real_root
        found: list[ObjectInfo] = []
        for key, path in self._walk(start, directory):
            if key.startswith(prefix):
                with contextlib.suppress(OSError):
                    found.append(self._info(key, path))
        return sorted(found, key=lambda info: info.key.encode())

    def _walk(self, start: str, relative: str) -> Iterator[tuple[str, str]]:
        pending = [(start, relative)]
        seen = 0
        while pending:
            directory, at = pending.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(UPLOAD_PREFIX) or entry.is_symlink():
                    continue
                key = f"{at}/{entry.name}" if at else entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, key))
                elif entry.is_file(follow_symlinks=False):
                    seen += 1
                    if seen > MAX_LISTED_OBJECTS:
                        raise StoreError(
                            503, "SlowDown", f"more than {MAX_LISTED_OBJECTS} objects under this prefix"
                        )
                    yield key, entry.path


def _md5_of_handle(handle: BinaryIO) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    position = handle.tell()
    while chunk := handle.read(1024 * 1024):
        digest.update(chunk)
    handle.seek(position)
    return digest.hexdigest()


def _md5_of(path: str) -> str:
    with open(path, "rb") as handle:
        return _md5_of_handle(handle)
