"""I/O at the edge: read Google Cloud Storage objects through its JSON API for the TensorBoard fetcher.

Credentials as Argo's GCS artifact driver takes them: a service-account key (the JSON of Argo's
`gcs.serviceAccountKeySecret`, handed over in an environment variable by a `secretKeyRef`), else Application
Default Credentials (workload identity on GKE). The endpoint is configurable so tests and GCS emulators can
stand in for Google.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, cast
from urllib.parse import quote

import google.auth
import google.auth.exceptions
import google.auth.transport.requests
import requests
from google.oauth2 import service_account

from workflows import safeyaml

from .fetchplan import GCS_ENDPOINT, GcsAccess

READ_ONLY_SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
TIMEOUT = 60.0
PAGE_SIZE = 1000


class GcsError(Exception):
    """GCS answered with an error (or could not be reached); the message carries its status and reason."""


@dataclass(frozen=True)
class GcsObject:
    name: str
    generation: str


def credentials(access: GcsAccess, environ: Mapping[str, str]) -> Any:
    """The service account of the key in the plan's variable, or Application Default Credentials."""
    key = environ.get(access.key_env, "").strip() if access.key_env else ""
    if not key:
        found, _project = google.auth.default(scopes=[READ_ONLY_SCOPE])
        return found
    try:
        info = safeyaml.load_json(key)  # from the tenant's Secret
    except safeyaml.YamlRefused as error:
        raise GcsError(f"{access.key_env}: the service-account key is not JSON ({error})") from error
    if not isinstance(info, dict):
        raise GcsError(f"{access.key_env}: the service-account key must be a JSON object")
    try:
        return service_account.Credentials.from_service_account_info(info, scopes=[READ_ONLY_SCOPE])
    except ValueError as error:  # a field missing or a private key that does not parse
        raise GcsError(f"{access.key_env}: not a usable service-account key ({error})") from error


class Bucket:
    """One authorized session on the JSON API, shared by the fetcher's threads; the token is fetched once up
    front, so a bad key fails every GCS run with the same clear reason instead of racing to refresh."""

    def __init__(self, access: GcsAccess, environ: Mapping[str, str]) -> None:
        self.base = (access.endpoint or GCS_ENDPOINT).rstrip("/") + "/storage/v1/b"
        try:
            found = credentials(access, environ)
            found.refresh(google.auth.transport.requests.Request(session=requests.Session()))
        except google.auth.exceptions.GoogleAuthError as error:
            raise GcsError(f"no access token: {error}") from error
        self.session = google.auth.transport.requests.AuthorizedSession(found)

    def _get(self, url: str, params: dict[str, str], *, stream: bool = False) -> requests.Response:
        try:
            response = self.session.get(url, params=params, stream=stream, timeout=TIMEOUT)
        except requests.RequestException as error:
            raise GcsError(f"GCS is unreachable: {error}") from error
        if response.status_code >= 400:
            raise GcsError(f"HTTP {response.status_code}: {_message(response)}")
        return response

    def list(self, bucket: str, prefix: str) -> Iterator[GcsObject]:
        """Every object whose name starts with `prefix`, following `nextPageToken` page by page."""
        params = {
            "prefix": prefix,
            "maxResults": str(PAGE_SIZE),
            "fields": "items(name,generation),nextPageToken",
        }
        while True:
            page = self._get(f"{self.base}/{quote(bucket, safe='')}/o", params).json()
            for item in page.get("items") or ():
                yield GcsObject(str(item["name"]), str(item.get("generation") or ""))
            token = page.get("nextPageToken")
            if not token:
                return
            params = {**params, "pageToken": str(token)}

    def stat(self, bucket: str, name: str) -> GcsObject:
        item = self._get(self._object_url(bucket, name), {"fields": "name,generation"}).json()
        return GcsObject(str(item["name"]), str(item.get("generation") or ""))

    def open(self, bucket: str, name: str) -> requests.Response:
        """The object's bytes as a streamed response (close it); `.raw` reads like a binary file."""
        response = self._get(self._object_url(bucket, name), {"alt": "media"}, stream=True)
        response.raw.decode_content = True  # served gzip-encoded when uploaded with Content-Encoding: gzip
        return response

    def _object_url(self, bucket: str, name: str) -> str:
        return f"{self.base}/{quote(bucket, safe='')}/o/{quote(name, safe='')}"


def body(response: requests.Response) -> BinaryIO:
    return cast(BinaryIO, response.raw)


def _message(response: requests.Response) -> str:
    try:
        error = response.json().get("error") or {}
        return str(error.get("message") or response.reason)
    except (ValueError, AttributeError):
        return str(response.reason)
