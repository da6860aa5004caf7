"""Pure: the fetch plan, the interface between the Deployment and the pod's fetch command.

The controller writes it as JSON into a ConfigMap mounted into the `fetch-logs` init container and the
`sync-logs` sidecar (older pods: the `ARGOML_FETCH_PLAN` variable); the command
(`manage.py fetch_tensorboard_logs`) parses it back with `parse_plan`. It names, per run, where the artifact
is, whether it is an archive and which local folder to fill (the run's name: TensorBoard lists each
sub-folder of its logdir as a run of that name), plus how to reach the S3 store: the
*names* of environment variables holding the credentials (filled by the kubelet from `secretKeyRef`s),
never the credentials; and how to reach GCS: the JSON API's endpoint and the variable holding a
service-account key (unset: Application Default Credentials, e.g. workload identity).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from workflows import safeyaml

PLAN_ENV = "ARGOML_FETCH_PLAN"
ACCESS_KEY_ENV = "ARGOML_FETCH_ACCESS_KEY"
SECRET_KEY_ENV = "ARGOML_FETCH_SECRET_KEY"  # noqa: S105 - the name of a variable, not a secret
GCS_KEY_ENV = "ARGOML_FETCH_GCS_KEY"
GCS_ENDPOINT = "https://storage.googleapis.com"
# "tar" covers tar and tar+gzip (Argo's default): gzip is told by its magic bytes.
ARCHIVES = ("none", "tar", "zip")
FETCHED_SCHEMES = ("s3://", "gs://", "http://", "https://")
# One path component that cannot be `.`/`..` nor hide among the fetcher's own `.incoming-*` and state file.
_FOLDER = re.compile(r"^[A-Za-z0-9_()=+\-\[\]][A-Za-z0-9._()=+\-\[\]]{0,99}$")


class PlanError(ValueError):
    """The plan is not what the builders write; the message names the field."""


@dataclass(frozen=True)
class S3Access:
    """How the fetcher reaches S3: endpoint host[:port] (empty: AWS), TLS, region, credential variables."""

    endpoint: str = ""
    secure: bool = True
    region: str = ""
    access_key_env: str = ""
    secret_key_env: str = ""


@dataclass(frozen=True)
class GcsAccess:
    """How the fetcher reaches GCS: the JSON API's base URL (empty: Google's) and the variable holding a
    service-account key as JSON (empty or unset: Application Default Credentials)."""

    endpoint: str = ""
    key_env: str = ""


@dataclass(frozen=True)
class RunSource:
    """One run: its name, the artifact's URL (s3://bucket/key, gs://bucket/key, http(s)://…), archive or
    not, local folder."""

    run: str
    url: str
    archive: str
    folder: str


@dataclass(frozen=True)
class Plan:
    runs: tuple[RunSource, ...]
    s3: S3Access = S3Access()
    gcs: GcsAccess = GcsAccess()


def is_fetched(path: str) -> bool:
    """Whether a logdir is copied into the pod (object stores and HTTP) rather than read in place."""
    return path.startswith(FETCHED_SCHEMES)


def folder_name(index: int) -> str:
    """A numbered local folder, for a run whose name cannot be a folder."""
    return f"{index:03d}"


def is_folder_name(name: str) -> bool:
    """Whether `name` may be a run's local folder: one safe path component, not starting with a dot."""
    return bool(_FOLDER.match(name))


def encode_plan(plan: Plan) -> str:
    return json.dumps(
        {"s3": asdict(plan.s3), "gcs": asdict(plan.gcs), "runs": [asdict(run) for run in plan.runs]},
        sort_keys=True,
        separators=(",", ":"),
    )


def parse_plan(text: str) -> Plan:
    """The plan in `text`, or PlanError naming the first wrong field."""
    try:
        raw = safeyaml.load_json(text)
    except safeyaml.YamlRefused as error:
        raise PlanError(f"{PLAN_ENV}: not JSON ({error}).") from error
    if not isinstance(raw, Mapping):
        raise PlanError(f"{PLAN_ENV}: must be an object with `runs` and `s3`.")
    runs = raw.get("runs")
    if not isinstance(runs, list) or not runs:
        raise PlanError(f"{PLAN_ENV}.runs: must be a non-empty list.")
    parsed = tuple(_run(index, entry) for index, entry in enumerate(runs))
    folders = [run.folder for run in parsed]
    if len(set(folders)) != len(folders):
        raise PlanError(f"{PLAN_ENV}.runs: two runs share a folder.")
    return Plan(parsed, _s3(raw.get("s3", {})), _gcs(raw.get("gcs", {})))


def _text(field: str, value: Any, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise PlanError(f"{field}: must be a {'non-empty ' if not empty else ''}string.")
    return value


def _run(index: int, entry: Any) -> RunSource:
    where = f"{PLAN_ENV}.runs[{index}]"
    if not isinstance(entry, Mapping):
        raise PlanError(f"{where}: must be an object.")
    url = _text(f"{where}.url", entry.get("url"), empty=False)
    if not is_fetched(url):
        raise PlanError(f"{where}.url: {url!r} must start with one of {', '.join(FETCHED_SCHEMES)}.")
    archive = _text(f"{where}.archive", entry.get("archive"), empty=False)
    if archive not in ARCHIVES:
        raise PlanError(f"{where}.archive: {archive!r} must be one of {', '.join(ARCHIVES)}.")
    folder = _text(f"{where}.folder", entry.get("folder"), empty=False)
    if not is_folder_name(folder):
        raise PlanError(
            f"{where}.folder: {folder!r} must be 1 to 100 of A-Z a-z 0-9 . _ ( ) = + - [ ], "
            "not starting with '.'."
        )
    return RunSource(_text(f"{where}.run", entry.get("run"), empty=False), url, archive, folder)


def _s3(raw: Any) -> S3Access:
    if not isinstance(raw, Mapping):
        raise PlanError(f"{PLAN_ENV}.s3: must be an object.")
    secure = raw.get("secure", True)
    if not isinstance(secure, bool):
        raise PlanError(f"{PLAN_ENV}.s3.secure: must be true or false.")
    return S3Access(
        endpoint=_text(f"{PLAN_ENV}.s3.endpoint", raw.get("endpoint", "")),
        secure=secure,
        region=_text(f"{PLAN_ENV}.s3.region", raw.get("region", "")),
        access_key_env=_text(f"{PLAN_ENV}.s3.access_key_env", raw.get("access_key_env", "")),
        secret_key_env=_text(f"{PLAN_ENV}.s3.secret_key_env", raw.get("secret_key_env", "")),
    )


def _gcs(raw: Any) -> GcsAccess:
    if not isinstance(raw, Mapping):
        raise PlanError(f"{PLAN_ENV}.gcs: must be an object.")
    endpoint = _text(f"{PLAN_ENV}.gcs.endpoint", raw.get("endpoint", ""))
    if endpoint and not endpoint.startswith(("http://", "https://")):
        raise PlanError(f"{PLAN_ENV}.gcs.endpoint: {endpoint!r} must start with http:// or https://.")
    return GcsAccess(endpoint=endpoint, key_env=_text(f"{PLAN_ENV}.gcs.key_env", raw.get("key_env", "")))


def split_gcs_url(url: str) -> tuple[str, str]:
    """(bucket, object name) of `gs://bucket/name`; PlanError when either is missing."""
    bucket, _, name = url.removeprefix("gs://").partition("/")
    if not bucket or not name.strip("/"):
        raise PlanError(f"{url!r}: a GCS URL needs a bucket and an object name (gs://bucket/name).")
    return bucket, name.strip("/")


def split_s3_url(url: str) -> tuple[str, str]:
    """(bucket, key) of `s3://bucket/key`; PlanError when either is missing."""
    rest = url.removeprefix("s3://")
    bucket, _, key = rest.partition("/")
    if not bucket or not key.strip("/"):
        raise PlanError(f"{url!r}: an S3 URL needs a bucket and a key (s3://bucket/key).")
    return bucket, key.strip("/")


def endpoint_parts(endpoint: str, insecure: bool) -> tuple[str, bool]:
    """(host[:port], secure) of an Argo endpoint, which may or may not carry a scheme."""
    if endpoint.startswith("http://"):
        return endpoint.removeprefix("http://").rstrip("/"), False
    if endpoint.startswith("https://"):
        return endpoint.removeprefix("https://").rstrip("/"), True
    return endpoint.rstrip("/"), not insecure
