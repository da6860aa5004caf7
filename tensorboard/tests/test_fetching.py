"""The fetcher against a real S3-compatible server on a local port (signatures checked) and a local HTTP
server: archives unpacked, folders copied, unchanged runs skipped, and every failure reported by run."""

from __future__ import annotations

import functools
import io
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from minio import Minio

from tensorboard.fetching import TERMINATION_MESSAGE_LIMIT, Outcome, report, sync
from tensorboard.fetchplan import ACCESS_KEY_ENV, SECRET_KEY_ENV, Plan, RunSource, S3Access

from .eventlogs import tgz_of, write_event_logs
from .s3server import S3Server, running_s3

CREDENTIALS = {ACCESS_KEY_ENV: "test-access", SECRET_KEY_ENV: "test-secret"}


@pytest.fixture
def s3() -> Iterator[S3Server]:
    with running_s3() as server:
        server.store.buckets["ml-logs"] = {}
        yield server


@pytest.fixture
def logs(tmp_path) -> Path:
    folder = tmp_path / "source" / "logs"
    write_event_logs([folder], steps=3)
    return folder


def access(server: S3Server) -> S3Access:
    return S3Access(server.endpoint, False, "us-east-1", ACCESS_KEY_ENV, SECRET_KEY_ENV)


def put(server: S3Server, key: str, body: bytes) -> None:
    client = Minio(server.endpoint, "test-access", "test-secret", secure=False, region="us-east-1")
    client.put_object("ml-logs", key, io.BytesIO(body), len(body))


def event_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("events.out.tfevents.*"))


def test_tgz_and_plain_folders_arrive_one_folder_per_run_and_unchanged_runs_are_not_fetched_again(
    s3, logs, tmp_path
):
    put(s3, "sweep/trial-0/logs.tgz", tgz_of(logs))
    put(s3, "sweep/trial-1/logs.tar", tgz_of(logs, gzip=False))
    for path in logs.iterdir():
        put(s3, f"sweep/trial-2/logs/{path.name}", path.read_bytes())
    plan = Plan(
        (RunSource("trial-0", "s3://ml-logs/sweep/trial-0/logs.tgz", "tar", "000"),
         RunSource("trial-1", "s3://ml-logs/sweep/trial-1/logs.tar", "tar", "001"),
         RunSource("trial-2", "s3://ml-logs/sweep/trial-2/logs", "none", "002")),
        access(s3),
    )  # fmt: skip
    dest = tmp_path / "dest"

    outcomes = sync(plan, dest, CREDENTIALS)

    assert [(o.run, o.error, o.unchanged) for o in outcomes] == [
        ("trial-0", "", False), ("trial-1", "", False), ("trial-2", "", False)
    ]  # fmt: skip
    expected = [path.name for path in logs.iterdir()]
    # The archive's own `logs/` wrapper is dropped: the run's events sit directly in its folder.
    for folder in ("000", "001", "002"):
        assert event_files(dest / folder) == expected
    assert not [p for p in dest.iterdir() if p.name.startswith((".incoming", ".retired"))]

    again = sync(plan, dest, CREDENTIALS)
    assert [o.unchanged for o in again] == [True, True, True]

    put(s3, "sweep/trial-0/logs.tgz", tgz_of(logs, root_name="renamed"))
    third = sync(plan, dest, CREDENTIALS)
    assert [o.unchanged for o in third] == [False, True, True]


def test_a_missing_artifact_or_a_hostile_archive_is_reported_while_the_others_arrive(s3, logs, tmp_path):
    put(s3, "ok/logs.tgz", tgz_of(logs))
    put(s3, "bad/logs.tgz", b"not an archive at all" * 20)
    plan = Plan(
        (RunSource("ok", "s3://ml-logs/ok/logs.tgz", "tar", "000"),
         RunSource("gone", "s3://ml-logs/gone/logs.tgz", "tar", "001"),
         RunSource("bad", "s3://ml-logs/bad/logs.tgz", "tar", "002"),
         RunSource("nobucket", "s3://elsewhere/x.tgz", "tar", "003")),
        access(s3),
    )  # fmt: skip
    outcomes = {o.run: o for o in sync(plan, tmp_path / "dest", CREDENTIALS)}
    assert outcomes["ok"].error == ""
    assert outcomes["gone"].error.startswith("NoSuchKey")
    assert outcomes["bad"].error.startswith("not a tar or tar.gz archive")
    assert outcomes["nobucket"].error.startswith("NoSuchKey")  # a HEAD 404 carries no body to tell more
    assert sorted(p.name for p in (tmp_path / "dest").iterdir() if not p.name.startswith(".")) == ["000"]


def test_wrong_credentials_are_reported_not_ignored(s3, logs, tmp_path):
    put(s3, "ok/logs.tgz", tgz_of(logs))
    plan = Plan((RunSource("ok", "s3://ml-logs/ok/logs.tgz", "tar", "000"),), access(s3))
    [outcome] = sync(plan, tmp_path / "dest", {ACCESS_KEY_ENV: "test-access", SECRET_KEY_ENV: "wrong"})
    assert outcome.error.startswith("AccessDenied")  # a HEAD 403 carries no body to tell more
    [anonymous] = sync(plan, tmp_path / "dest", {})
    assert anonymous.error.startswith("AccessDenied")


def test_an_unreachable_store_is_a_reported_run_not_a_crash(tmp_path):
    with running_s3() as server:
        endpoint = server.endpoint  # a port nothing listens on once the block ends
    plan = Plan(
        (RunSource("a", "s3://ml-logs/a.tgz", "tar", "000"),),
        S3Access(endpoint, False, "us-east-1", ACCESS_KEY_ENV, SECRET_KEY_ENV),
    )
    [outcome] = sync(plan, tmp_path / "dest", CREDENTIALS)
    assert outcome.error.startswith("the store is unreachable")


@pytest.fixture
def http_root(tmp_path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def test_http_artifacts_archived_or_plain(http_root, logs, tmp_path):
    base, root = http_root
    (root / "logs.tgz").write_bytes(tgz_of(logs))
    event = next(logs.iterdir())
    (root / event.name).write_bytes(event.read_bytes())
    plan = Plan(
        (RunSource("archived", f"{base}/logs.tgz", "tar", "000"),
         RunSource("plain", f"{base}/{event.name}", "none", "001"),
         RunSource("missing", f"{base}/nothing.tgz", "tar", "002")),
    )  # fmt: skip
    outcomes = sync(plan, tmp_path / "dest", {})
    assert [o.error for o in outcomes][:2] == ["", ""]
    assert outcomes[2].error == "HTTP 404 File not found"
    assert event_files(tmp_path / "dest/000") == [event.name]
    assert event_files(tmp_path / "dest/001") == [event.name]
    # SimpleHTTPRequestHandler sends Last-Modified: a second pass downloads nothing new.
    assert [o.unchanged for o in sync(plan, tmp_path / "dest", {})][:2] == [True, True]


def test_the_report_lists_failures_and_fits_a_termination_message():
    outcomes = [Outcome("ok", "s3://b/ok")] + [
        Outcome(f"run-{index}", f"s3://b/{index}.tgz", error="NoSuchKey: " + "x" * 400) for index in range(40)
    ]
    text = report(outcomes)
    body = json.loads(text)
    assert len(text) <= TERMINATION_MESSAGE_LIMIT
    assert body["runs"] == 41
    assert body["failed"][0] == {"run": "run-0", "url": "s3://b/0.tgz", "reason": "NoSuchKey: " + "x" * 289}
    assert body["more"] == 40 - len(body["failed"])
    assert json.loads(report(outcomes[:1])) == {"runs": 1, "failed": []}
