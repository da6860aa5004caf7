"""The fetcher against a local GCS JSON API server that checks the service account's signed token request
and the bearer token on every call: listing page by page, archives (tgz, zip) and folders, re-syncs by
generation, and a wrong key, a missing object or missing credentials reported by run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tensorboard import gcs
from tensorboard.fetching import sync
from tensorboard.fetchplan import GCS_KEY_ENV, GcsAccess, Plan, RunSource

from .eventlogs import tgz_of, write_event_logs, zip_of
from .gcsserver import Server, new_key, running_gcs, service_account_key

BUCKET = "ml-logs"
KEY = new_key()


@pytest.fixture
def server() -> Iterator[Server]:
    with running_gcs(KEY) as running:
        running.store.buckets[BUCKET] = {}
        yield running


@pytest.fixture
def logs(tmp_path) -> Path:
    folder = tmp_path / "source" / "logs"
    write_event_logs([folder], steps=3)
    return folder


def environ(server: Server, key=KEY) -> dict[str, str]:
    return {GCS_KEY_ENV: json.dumps(service_account_key(key, server.store.token_uri))}


def access(server: Server) -> GcsAccess:
    return GcsAccess(server.endpoint, GCS_KEY_ENV)


def event_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("events.out.tfevents.*"))


def test_listing_follows_next_page_tokens_until_the_last_page(server):
    server.store.page_size = 2
    for index in range(5):
        server.store.put(BUCKET, f"run/logs/file-{index}", b"x")
    server.store.put(BUCKET, "other/file", b"x")

    listed = list(gcs.Bucket(access(server), environ(server)).list(BUCKET, "run/logs/"))

    assert [item.name for item in listed] == [f"run/logs/file-{index}" for index in range(5)]
    pages = [
        request for request in server.store.requests if request.startswith(f"GET /storage/v1/b/{BUCKET}/o?")
    ]
    assert len(pages) == 3
    assert "pageToken" not in pages[0]
    assert "pageToken=2" in pages[1]
    assert "pageToken=4" in pages[2]


def test_objects_are_named_escaped_in_the_path(server):
    server.store.put(BUCKET, "a dir/with #odd?name", b"body")
    bucket = gcs.Bucket(access(server), environ(server))

    with bucket.open(BUCKET, "a dir/with #odd?name") as response:
        assert gcs.body(response).read() == b"body"
    assert f"GET /storage/v1/b/{BUCKET}/o/a%20dir%2Fwith%20%23odd%3Fname?alt=media" in server.store.requests


def test_tgz_zip_and_plain_folders_arrive_and_unchanged_runs_are_not_fetched_again(server, logs, tmp_path):
    server.store.put(BUCKET, "sweep/trial-0/logs.tgz", tgz_of(logs))
    server.store.put(BUCKET, "sweep/trial-1/logs.zip", zip_of(logs))
    for path in logs.iterdir():
        server.store.put(BUCKET, f"sweep/trial-2/logs/{path.name}", path.read_bytes())
    plan = Plan(
        (RunSource("trial-0", f"gs://{BUCKET}/sweep/trial-0/logs.tgz", "tar", "000"),
         RunSource("trial-1", f"gs://{BUCKET}/sweep/trial-1/logs.zip", "zip", "001"),
         RunSource("trial-2", f"gs://{BUCKET}/sweep/trial-2/logs", "none", "002")),
        gcs=access(server),
    )  # fmt: skip
    dest = tmp_path / "dest"

    first = sync(plan, dest, environ(server))

    assert [(o.run, o.error, o.unchanged) for o in first] == [(run.run, "", False) for run in plan.runs]
    expected = event_files(logs)
    assert expected
    assert [event_files(dest / folder) for folder in ("000", "001", "002")] == [expected] * 3

    server.store.put(BUCKET, "sweep/trial-0/logs.tgz", tgz_of(logs))  # rewritten: a new generation
    again = sync(plan, dest, environ(server))

    assert [o.unchanged for o in again] == [False, True, True]


def test_a_key_the_token_endpoint_does_not_trust_fails_every_gcs_run_with_the_reason(server, tmp_path):
    server.store.put(BUCKET, "a/logs.tgz", b"")
    plan = Plan((RunSource("a", f"gs://{BUCKET}/a/logs.tgz", "tar", "000"),), gcs=access(server))

    [outcome] = sync(plan, tmp_path / "dest", environ(server, key=new_key()))

    assert outcome.error.startswith("GcsError: no access token: ('invalid_grant: Invalid JWT Signature.'")
    assert not server.store.requests  # nothing reached the storage API without a token


def test_a_key_that_is_not_json_is_named(server, tmp_path):
    plan = Plan((RunSource("a", f"gs://{BUCKET}/a/logs.tgz", "tar", "000"),), gcs=access(server))

    [outcome] = sync(plan, tmp_path / "dest", {GCS_KEY_ENV: "{not json"})

    assert outcome.error.startswith(f"GcsError: {GCS_KEY_ENV}: the service-account key is not JSON")


def test_a_missing_object_is_reported_with_the_status_gcs_gave(server, tmp_path):
    plan = Plan((RunSource("a", f"gs://{BUCKET}/missing/logs.tgz", "tar", "000"),), gcs=access(server))

    [outcome] = sync(plan, tmp_path / "dest", environ(server))

    assert outcome.error == f"GcsError: HTTP 404: No such object: {BUCKET}/missing/logs.tgz"


def test_without_a_key_application_default_credentials_are_used(server, tmp_path, monkeypatch):
    key_file = tmp_path / "adc.json"
    key_file.write_text(json.dumps(service_account_key(KEY, server.store.token_uri)))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    server.store.put(BUCKET, "a/file.txt", b"hello")
    plan = Plan((RunSource("a", f"gs://{BUCKET}/a/file.txt", "none", "000"),), gcs=access(server))

    [outcome] = sync(plan, tmp_path / "dest", {GCS_KEY_ENV: ""})

    assert outcome.error == ""
    assert (tmp_path / "dest" / "000" / "file.txt").read_bytes() == b"hello"


def test_a_key_missing_its_private_key_is_named(server, tmp_path):
    broken = service_account_key(KEY, server.store.token_uri)
    del broken["private_key"]
    plan = Plan((RunSource("a", f"gs://{BUCKET}/a/logs.tgz", "tar", "000"),), gcs=access(server))

    [outcome] = sync(plan, tmp_path / "dest", {GCS_KEY_ENV: json.dumps(broken)})

    assert outcome.error.startswith(f"GcsError: {GCS_KEY_ENV}: not a usable service-account key")


def test_an_archive_that_is_not_a_zip_is_reported_as_such(server, tmp_path):
    server.store.put(BUCKET, "a/logs.zip", b"not a zip at all" * 10)
    plan = Plan((RunSource("a", f"gs://{BUCKET}/a/logs.zip", "zip", "000"),), gcs=access(server))

    [outcome] = sync(plan, tmp_path / "dest", environ(server))

    assert outcome.error.startswith("not a zip archive (File is not a zip file)")
    assert not (tmp_path / "dest" / "000").exists()
