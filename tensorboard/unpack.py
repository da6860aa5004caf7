"""Unpack an artifact archive (tar, tar+gzip as Argo writes by default, or zip) into a folder, hostile by
default.

An archive comes from a bucket anyone with write access to it could fill, so nothing in it may land outside
the target: absolute names, `..`, links of any kind, devices and FIFOs are refused, and the number of
entries and the bytes written are bounded. Only regular files and folders are written, by us, never by
`tarfile.extractall`.
"""

from __future__ import annotations

import posixpath
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, BinaryIO

MAX_ENTRIES = 100_000
MAX_BYTES = 20 * 1024**3  # 20 GiB of event files is far past anything a TensorBoard pod can show
GZIP_MAGIC = b"\x1f\x8b"


class UnsafeArchive(ValueError):
    """The archive holds an entry we will not write, or is larger than the bounds; the message names it."""


@dataclass(frozen=True)
class Limits:
    max_entries: int = MAX_ENTRIES
    max_bytes: int = MAX_BYTES


DEFAULT_LIMITS = Limits()


def member_path(name: str) -> str:
    """The archive entry's path relative to the target, or UnsafeArchive naming why it is refused.

    Argo's archives start with the artifact's own base name (`logs/events…`); that first component is kept
    (stripping is the caller's choice), a leading `./` is dropped.
    """
    if not name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchive(f"entry {name!r}: absolute paths are refused")
    normal = posixpath.normpath(name)
    parts = normal.split("/")
    if ".." in parts or "\\" in name:
        raise UnsafeArchive(f"entry {name!r}: paths leaving the target ('..' or '\\') are refused")
    return "" if normal == "." else normal


def check_member(member: tarfile.TarInfo) -> str | None:
    """The relative path to write a file or folder at, None for an entry to skip (the archive's root), or
    UnsafeArchive for links, devices and FIFOs."""
    path = member_path(member.name)
    if member.issym() or member.islnk():
        raise UnsafeArchive(f"entry {member.name!r}: links are refused (to {member.linkname!r})")
    if not (member.isfile() or member.isdir()):
        raise UnsafeArchive(f"entry {member.name!r}: only regular files and folders are unpacked")
    return path or None


class _Target:
    """The folder an archive is unpacked into: where each entry lands (never outside), and the files and
    bytes written so far, the bytes bounded by `limits.max_bytes`."""

    def __init__(self, target: Path, limits: Limits) -> None:
        target.mkdir(parents=True, exist_ok=True)
        self.root = target.resolve()
        self.limits = limits
        self.files = self.written = 0

    def add(
        self,
        relative: str | None,
        entry: str,
        *,
        folder: bool,
        size: int,
        open_entry: Callable[[], IO[bytes] | None],
    ) -> None:
        """Write the entry `entry` at `relative` (None: the archive's root, nothing to write): a folder, or a
        file of `size` bytes read from what `open_entry` opens (None: no data to write)."""
        if relative is None:
            return
        destination = inside(self.root, relative, entry)
        if folder:
            destination.mkdir(parents=True, exist_ok=True)
            return
        self.written += size
        if self.written > self.limits.max_bytes:
            raise UnsafeArchive(f"more than {self.limits.max_bytes} bytes once unpacked")
        destination.parent.mkdir(parents=True, exist_ok=True)
        stream = open_entry()
        if stream is None:  # pragma: no cover - isfile() members always have data
            return
        with stream, destination.open("wb") as out:
            shutil.copyfileobj(stream, out)
        self.files += 1


def extract(source: BinaryIO, target: Path, limits: Limits = DEFAULT_LIMITS) -> int:
    """Unpack a tar or tar.gz stream into `target` (created); returns the number of files written.

    Raises UnsafeArchive (nothing is left half-checked: the caller discards `target` on error) or
    tarfile.TarError for what is not a tar archive at all.
    """
    unpacked = _Target(target, limits)
    entries = 0
    # "r|*": a stream, gzip detected from its magic bytes; members are read in order, once.
    with tarfile.open(fileobj=source, mode="r|*") as archive:
        for member in archive:
            entries += 1
            if entries > limits.max_entries:
                raise UnsafeArchive(f"more than {limits.max_entries} entries")
            unpacked.add(
                check_member(member),
                member.name,
                folder=member.isdir(),
                size=member.size,
                open_entry=partial(archive.extractfile, member),
            )
    return unpacked.files


def inside(root: Path, relative: str, entry: str) -> Path:
    """Where an entry lands under the (resolved) target; UnsafeArchive when it would land outside."""
    destination = (root / relative).resolve()
    if root not in destination.parents:
        raise UnsafeArchive(f"entry {entry!r}: resolves outside the target")
    return destination


def check_zip_member(member: zipfile.ZipInfo) -> str | None:
    """As `check_member`, for a zip entry: the Unix mode in its external attributes tells links and special
    files apart (zip has no other way to say so); encrypted entries are refused, not guessed at."""
    path = member_path(member.filename)
    mode = member.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise UnsafeArchive(f"entry {member.filename!r}: links are refused")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise UnsafeArchive(f"entry {member.filename!r}: only regular files and folders are unpacked")
    if member.flag_bits & 0x1:
        raise UnsafeArchive(f"entry {member.filename!r}: encrypted entries are refused")
    return path or None


def extract_zip(source: BinaryIO, target: Path, limits: Limits = DEFAULT_LIMITS) -> int:
    """Unpack a zip archive (a seekable file: zip keeps its index at the end) into `target`; returns the
    number of files written. Raises UnsafeArchive or zipfile.BadZipFile, as `extract` does."""
    unpacked = _Target(target, limits)
    with zipfile.ZipFile(source) as archive:
        members = archive.infolist()
        if len(members) > limits.max_entries:
            raise UnsafeArchive(f"more than {limits.max_entries} entries")
        for member in members:
            # zipfile stops reading an entry at its declared size (and checks its CRC), so the declared sizes
            # bound what is written.
            unpacked.add(
                check_zip_member(member),
                member.filename,
                folder=member.is_dir(),
                size=member.file_size,
                open_entry=partial(archive.open, member),
            )
    return unpacked.files


def single_root(target: Path) -> Path:
    """The folder an Argo archive wraps its content in (`logs/` for an artifact saved from `/logs`), or the
    target itself when the archive holds several top-level entries or a single file."""
    entries = list(target.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return target
