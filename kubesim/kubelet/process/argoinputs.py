"""Argo's executor `init` for a process pod: each input artifact loaded at its path before `main` starts.

An artifact comes from the dev stack's artifact repository (an `s3` key, wherever Argo's resolution put
it: another step's output, or a key the template names; the repository is the only bucket, so a bucket
name is not looked at) or is a `raw` artifact's text. As Argo's executor: an archive is unpacked unless the
artifact says `archive: {none: {}}` (a gzipped tar is detected, `archive: {tar: {}}` / `{zip: {}}` force
one), a tarball of one entry becomes that entry at the path, `mode` (and `recurseMode`) is applied, a
missing optional artifact is skipped, and what cannot be loaded is an error in Argo's words
(`artifact <name> failed to load: The specified key does not exist.`). Unpacking never writes outside the
artifact's directory and is bounded in bytes and entries.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tarfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubesim.kubelet.sandbox import Mount
from kubesim.s3 import stores

INPUT_ARTIFACTS_ANNOTATION = "kubesim.argoml.io/input-artifacts"
MAX_UNPACKED_BYTES = 4 * 1024**3  # one artifact unpacked, at most
MAX_UNPACKED_ENTRIES = 100_000
NO_SUCH_KEY = "The specified key does not exist."


class InputArtifactError(Exception):
    """An input artifact that cannot be loaded; the message is what Argo's executor says."""


def declared(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(INPUT_ARTIFACTS_ANNOTATION)
    found = json.loads(text) if text else []
    return [artifact for artifact in found if isinstance(artifact, dict)]


def load(pod: Mapping[str, Any], directory: Path, repository: Path) -> list[Mount]:
    """Each input artifact under `directory` (made fresh), as mounts at their paths; InputArtifactError
    for the first that cannot be loaded."""
    shutil.rmtree(directory, ignore_errors=True)
    mounts = []
    for index, artifact in enumerate(declared(pod)):
        name, path = str(artifact.get("name", "")), str(artifact.get("path") or "")
        if not path.startswith("/"):
            raise InputArtifactError(f"artifact {name} failed to load: its path {path!r} is not absolute")
        staged = directory / str(index)
        staged.mkdir(parents=True)
        destination = staged / "artifact"
        if not _fetch(artifact, name, staged / "download", repository):
            continue
        _unpack(artifact, name, staged / "download", destination)
        mode = artifact.get("mode")
        if isinstance(mode, int):
            _chmod(destination, mode, bool(artifact.get("recurseMode")))
        mounts.append(Mount(str(destination), path, False))
    return mounts


def _fetch(artifact: dict[str, Any], name: str, download: Path, repository: Path) -> bool:
    """The artifact's bytes (a file, or a folder saved with `archive: none`) at `download`; False when an
    optional artifact is missing."""
    optional = bool(artifact.get("optional"))
    raw = artifact.get("raw")
    if isinstance(raw, dict):
        download.write_text(str(raw.get("data", "")))
        return True
    s3 = artifact.get("s3")
    if not isinstance(s3, dict) or not s3.get("key"):
        storage = next(
            (key for key in ("gcs", "http", "git", "oss", "hdfs", "azure", "artifactory") if key in artifact),
            "",
        )
        if storage:
            raise InputArtifactError(
                f"artifact {name} failed to load: kubesim loads artifacts from the dev stack's repository "
                f"(s3) and raw ones only, not {storage}"
            )
        if optional:
            return False
        raise InputArtifactError(f"required artifact '{name}' not supplied")
    key = str(s3["key"]).strip("/")
    try:
        source = repository / stores.check_key(key)
    except stores.StoreError:
        source = None
    inside = os.path.realpath(repository).rstrip("/") + "/"
    if source is None or not os.path.realpath(source).startswith(inside) or source.is_symlink():
        source = None
    if source is not None and source.is_file():
        shutil.copyfile(source, download)
        return True
    if source is not None and source.is_dir():  # saved with `archive: none`: the objects under <key>/
        shutil.copytree(source, download, symlinks=True)
        return True
    if optional:
        return False
    raise InputArtifactError(f"artifact {name} failed to load: {NO_SUCH_KEY}")


def _unpack(artifact: dict[str, Any], name: str, download: Path, destination: Path) -> None:
    archive = artifact.get("archive") or {}
    if download.is_dir() or "none" in archive:
        download.rename(destination)
        return
    try:
        if "zip" in archive:
            _unpack_into(download, destination, _extract_zip)
        elif "tar" in archive or _is_tarball(download):
            _unpack_into(download, destination, _extract_tar)
        else:
            download.rename(destination)
    except (OSError, tarfile.TarError, zipfile.BadZipFile, ValueError) as error:
        raise InputArtifactError(f"artifact {name} failed to load: {error}") from None


def _is_tarball(path: Path) -> bool:
    """As Argo's isTarball: a gzip stream whose first tar header reads."""
    try:
        with gzip.open(path) as stream, tarfile.open(fileobj=stream, mode="r|") as archive:
            return archive.next() is not None
    except (OSError, tarfile.TarError, EOFError):
        return False


def _unpack_into(download: Path, destination: Path, extract: Any) -> None:
    """Argo's unpack: into a scratch folder; one entry becomes the destination, several the folder."""
    scratch = destination.with_name("unpacked")
    scratch.mkdir()
    extract(download, scratch)
    download.unlink()
    entries = list(scratch.iterdir())
    if len(entries) == 1:
        entries[0].rename(destination)
        scratch.rmdir()
    else:
        scratch.rename(destination)


def _extract_tar(download: Path, scratch: Path) -> None:
    with tarfile.open(download, "r:*") as archive:
        members = archive.getmembers()
        _check_bounds(len(members), sum(member.size for member in members))
        archive.extractall(scratch, filter="data")  # no absolute paths, `..`, links out, or devices


def _extract_zip(download: Path, scratch: Path) -> None:
    with zipfile.ZipFile(download) as archive:
        infos = archive.infolist()
        _check_bounds(len(infos), sum(info.file_size for info in infos))
        root = os.path.realpath(scratch) + "/"
        for info in infos:
            if not os.path.realpath(scratch / info.filename).startswith(root):
                raise ValueError(f"{info.filename}: illegal file path")
        archive.extractall(scratch)  # noqa: S202 - every member checked to stay inside just above


def _check_bounds(entries: int, size: int) -> None:
    if entries > MAX_UNPACKED_ENTRIES:
        raise ValueError(f"the archive has more than {MAX_UNPACKED_ENTRIES} entries")
    if size > MAX_UNPACKED_BYTES:
        raise ValueError(f"the archive unpacks to more than {MAX_UNPACKED_BYTES} bytes")


def _chmod(path: Path, mode: int, recurse: bool) -> None:
    os.chmod(path, mode)
    if recurse and path.is_dir():
        for root, directories, files in os.walk(path):
            for entry in (*directories, *files):
                if not os.path.islink(os.path.join(root, entry)):  # a link's own mode means nothing
                    os.chmod(os.path.join(root, entry), mode)
