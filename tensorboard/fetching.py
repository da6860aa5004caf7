"""I/O at the edge: copy every run of a fetch plan into a local folder (S3 and S3-compatible stores through
the `minio` client, GCS through its JSON API (`gcs.py`), plain HTTP through urllib), unpacking archives,
and say which runs could not be had.

Each run is written into a scratch folder and swapped in whole, so TensorBoard never reads half a run; a
run whose objects did not change since the last pass (same ETags, same GCS generations) is not downloaded
again, which is what makes the sync sidecar cheap. One bad artifact never stops the others: it becomes a
line of the report.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, cast
from zipfile import BadZipFile

import requests
import urllib3.exceptions
from minio import Minio
from minio.error import MinioException, S3Error

from workflows import safeyaml

from . import gcs
from .fetchplan import Plan, PlanError, RunSource, S3Access, split_gcs_url, split_s3_url
from .unpack import DEFAULT_LIMITS, Limits, UnsafeArchive, extract, extract_zip, member_path, single_root

logger = logging.getLogger(__name__)

STATE_FILE = ".fetch-state.json"
HTTP_TIMEOUT = 60.0
# Kubernetes keeps at most 4096 bytes of a container's termination message.
TERMINATION_MESSAGE_LIMIT = 4096


@dataclass(frozen=True)
class Outcome:
    """What one pass did for one run: fetched (files written), unchanged, or failed with a reason."""

    run: str
    url: str
    fingerprint: str = ""
    files: int = 0
    unchanged: bool = False
    error: str = ""


class FetchFailed(Exception):
    """One artifact could not be fetched; the message says why in words a user can act on."""


def s3_client(access: S3Access, environ: Mapping[str, str]) -> Minio:
    """A client for the plan's store; credentials from the variables the plan names (anonymous if unset)."""
    return Minio(
        access.endpoint or "s3.amazonaws.com",
        access_key=environ.get(access.access_key_env) if access.access_key_env else None,
        secret_key=environ.get(access.secret_key_env) if access.secret_key_env else None,
        secure=access.secure,
        region=access.region or None,
    )


# -- one run -------------------------------------------------------------------------------------------
def _fingerprint(parts: Sequence[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(sorted(parts)).encode()).hexdigest()[:32]


def _write(stream: BinaryIO, destination: Path, limits: Limits) -> int:
    destination.parent.mkdir(parents=True, exist_ok=True)
    with destination.open("wb") as out:
        return _copy(stream, out, limits)


def _copy(stream: BinaryIO, out: BinaryIO, limits: Limits) -> int:
    size = 0
    while chunk := stream.read(1024 * 1024):
        size += len(chunk)
        if size > limits.max_bytes:
            raise UnsafeArchive(f"more than {limits.max_bytes} bytes")
        out.write(chunk)
    return size


def _fetch_s3(client: Minio, run: RunSource, scratch: Path, previous: str, limits: Limits) -> Outcome:
    bucket, key = split_s3_url(run.url)
    if run.archive == "none":
        # Argo uploads a folder saved with `archive: none` as objects under `<key>/`, a file as `<key>`.
        listed = [item for item in client.list_objects(bucket, prefix=key + "/", recursive=True)
                  if not str(item.object_name).endswith("/")]  # fmt: skip
        if listed:
            if len(listed) > limits.max_entries:
                raise UnsafeArchive(f"more than {limits.max_entries} objects under {key}/")
            fingerprint = _fingerprint([(str(o.object_name), str(o.etag)) for o in listed])
            if fingerprint == previous:
                return Outcome(run.run, run.url, fingerprint, unchanged=True)
            files = 0
            for item in listed:
                name = str(item.object_name)
                relative = member_path(name[len(key) + 1 :])
                response = client.get_object(bucket, name)
                try:
                    _write(cast(BinaryIO, response), scratch / relative, limits)
                finally:
                    response.close()
                    response.release_conn()
                files += 1
            return Outcome(run.run, run.url, fingerprint, files)
    stat = client.stat_object(bucket, key)
    fingerprint = _fingerprint([(key, str(stat.etag))])
    if fingerprint == previous:
        return Outcome(run.run, run.url, fingerprint, unchanged=True)
    # urllib3's response reads like a binary file, which is all the unpacking needs.
    response = client.get_object(bucket, key)
    try:
        files = _store(cast(BinaryIO, response), run, scratch, PurePosixPath(key).name, limits)
    finally:
        response.close()
        response.release_conn()
    return Outcome(run.run, run.url, fingerprint, files)


def _fetch_gcs(bucket: gcs.Bucket, run: RunSource, scratch: Path, previous: str, limits: Limits) -> Outcome:
    """As `_fetch_s3`, through the JSON API; an object's generation changes whenever it is rewritten."""
    name, key = split_gcs_url(run.url)
    if run.archive == "none":
        listed = [item for item in bucket.list(name, key + "/") if not item.name.endswith("/")]
        if listed:
            if len(listed) > limits.max_entries:
                raise UnsafeArchive(f"more than {limits.max_entries} objects under {key}/")
            fingerprint = _fingerprint([(item.name, item.generation) for item in listed])
            if fingerprint == previous:
                return Outcome(run.run, run.url, fingerprint, unchanged=True)
            for item in listed:
                relative = member_path(item.name[len(key) + 1 :])
                with bucket.open(name, item.name) as response:
                    _write(gcs.body(response), scratch / relative, limits)
            return Outcome(run.run, run.url, fingerprint, len(listed))
    found = bucket.stat(name, key)
    fingerprint = _fingerprint([(key, found.generation)])
    if fingerprint == previous:
        return Outcome(run.run, run.url, fingerprint, unchanged=True)
    with bucket.open(name, key) as response:
        files = _store(gcs.body(response), run, scratch, PurePosixPath(key).name, limits)
    return Outcome(run.run, run.url, fingerprint, files)


def _fetch_http(run: RunSource, scratch: Path, previous: str, limits: Limits) -> Outcome:
    request = urllib.request.Request(run.url, headers={"User-Agent": "argoml-tensorboard-fetch"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:  # noqa: S310 - http(s) only
        version = response.headers.get("ETag") or response.headers.get("Last-Modified") or ""
        fingerprint = _fingerprint([(run.url, version)]) if version else ""
        if fingerprint and fingerprint == previous:
            return Outcome(run.run, run.url, fingerprint, unchanged=True)
        name = PurePosixPath(urllib.request.url2pathname(run.url.split("?", 1)[0])).name or "artifact"
        files = _store(response, run, scratch, name, limits)
    return Outcome(run.run, run.url, fingerprint, files)


def _store(stream: BinaryIO, run: RunSource, scratch: Path, name: str, limits: Limits) -> int:
    """Unpack an archive into `scratch`, or save a plain file there under its own name."""
    if run.archive == "tar":
        return extract(stream, scratch, limits)
    if run.archive == "zip":
        # zip keeps its index at the end: spool it to a file first (bounded like any download).
        with tempfile.TemporaryFile(dir=scratch.parent) as spooled:
            _copy(stream, spooled, limits)
            spooled.seek(0)
            return extract_zip(cast(BinaryIO, spooled), scratch, limits)
    _write(stream, scratch / member_path(name), limits)
    return 1


def _reason(error: Exception) -> str:
    if isinstance(error, S3Error):
        return f"{error.code}: {error.message}"
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        return f"unreachable: {error.reason}"
    if isinstance(error, urllib3.exceptions.HTTPError):
        return f"the store is unreachable: {error}"
    if isinstance(error, BadZipFile):
        return f"not a zip archive ({error}); save it with `archive: none` or as Argo's default tgz"
    if isinstance(error, tarfile.TarError):
        return f"not a tar or tar.gz archive ({error}); save it with `archive: none` or as Argo's default tgz"
    if isinstance(error, UnsafeArchive):
        return f"archive refused: {error}"
    return f"{type(error).__name__}: {error}"


def fetch_run(
    run: RunSource,
    dest: Path,
    *,
    client: Callable[[], Minio],
    bucket: Callable[[], gcs.Bucket] | None = None,
    previous: str = "",
    limits: Limits = DEFAULT_LIMITS,
) -> Outcome:
    """Fetch one run into `dest/<folder>`, replacing what was there only once the new copy is complete."""
    scratch = dest / f".incoming-{run.folder}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        if run.url.startswith("s3://"):
            outcome = _fetch_s3(client(), run, scratch, previous, limits)
        elif run.url.startswith("gs://"):
            if bucket is None:
                raise gcs.GcsError("no GCS access was configured")
            outcome = _fetch_gcs(bucket(), run, scratch, previous, limits)
        else:
            outcome = _fetch_http(run, scratch, previous, limits)
    except (
        MinioException,
        urllib3.exceptions.HTTPError,  # the store cannot be reached (minio lets urllib3's errors through)
        http.client.HTTPException,  # an HTTP artifact's server broke off the answer
        gcs.GcsError,
        requests.RequestException,  # GCS broke off a download
        OSError,
        tarfile.TarError,
        BadZipFile,
        UnsafeArchive,
        PlanError,
        ValueError,
    ) as error:
        shutil.rmtree(scratch, ignore_errors=True)
        logger.warning("run %s: %s could not be fetched: %s", run.run, run.url, error)
        return Outcome(run.run, run.url, error=_reason(error))
    if outcome.unchanged:
        shutil.rmtree(scratch, ignore_errors=True)
        return outcome
    _swap(single_root(scratch) if run.archive != "none" else scratch, dest / run.folder, dest)
    shutil.rmtree(scratch, ignore_errors=True)
    return outcome


def _swap(new: Path, final: Path, dest: Path) -> None:
    retired = dest / f".retired-{final.name}"
    shutil.rmtree(retired, ignore_errors=True)
    if final.exists():
        final.rename(retired)
    new.rename(final)
    shutil.rmtree(retired, ignore_errors=True)


def gcs_bucket(plan: Plan, environ: Mapping[str, str]) -> Callable[[], gcs.Bucket]:
    """One GCS session per pass, made (and its token fetched) only when a run is on GCS; when that fails,
    every GCS run fails with the same reason."""
    if not any(run.url.startswith("gs://") for run in plan.runs):
        return _no_gcs
    try:
        session = gcs.Bucket(plan.gcs, environ)
    except gcs.GcsError as error:
        failure = error

        def failing() -> gcs.Bucket:
            raise failure

        return failing
    return lambda: session


def _no_gcs() -> gcs.Bucket:
    raise gcs.GcsError("no GCS access was configured")


# -- a plan --------------------------------------------------------------------------------------------
def load_state(dest: Path) -> dict[str, str]:
    try:
        state = safeyaml.load_json((dest / STATE_FILE).read_bytes())
    except (OSError, safeyaml.YamlRefused):
        return {}
    return {str(k): str(v) for k, v in state.items()} if isinstance(state, dict) else {}


def sync(
    plan: Plan,
    dest: Path,
    environ: Mapping[str, str],
    *,
    concurrency: int = 8,
    limits: Limits = DEFAULT_LIMITS,
) -> list[Outcome]:
    """One pass over every run (`concurrency` at a time); remembers what it fetched in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    state = load_state(dest)
    # One client per pass: the minio client is thread-safe and keeps one connection pool.
    shared = s3_client(plan.s3, environ)
    bucket = gcs_bucket(plan, environ)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        outcomes = list(
            pool.map(
                lambda run: fetch_run(
                    run,
                    dest,
                    client=lambda: shared,
                    bucket=bucket,
                    previous=state.get(run.folder, ""),
                    limits=limits,
                ),
                plan.runs,
            )
        )
    for run, outcome in zip(plan.runs, outcomes, strict=True):
        if not outcome.error:
            state[run.folder] = outcome.fingerprint
    (dest / STATE_FILE).write_text(json.dumps(state, sort_keys=True))
    return outcomes


def report(outcomes: Sequence[Outcome]) -> str:
    """The JSON the fetcher leaves in its termination message for the controller: every failure (run, url,
    reason), cut to Kubernetes' 4096 bytes with a count of what did not fit."""
    failed = [{"run": o.run, "url": o.url, "reason": o.error[:300]} for o in outcomes if o.error]
    body: dict[str, Any] = {"runs": len(outcomes), "failed": failed}
    while len(json.dumps(body)) > TERMINATION_MESSAGE_LIMIT and body["failed"]:
        body["failed"] = body["failed"][:-1]
        body["more"] = len(failed) - len(body["failed"])
    return json.dumps(body, separators=(",", ":"))
