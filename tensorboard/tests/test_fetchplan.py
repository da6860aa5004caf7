"""The fetch plan round-trips, and a plan that is not what the builders write is refused naming the field."""

from __future__ import annotations

import json

import pytest

from tensorboard.fetchplan import (
    GcsAccess,
    Plan,
    PlanError,
    RunSource,
    S3Access,
    encode_plan,
    endpoint_parts,
    folder_name,
    is_fetched,
    is_folder_name,
    parse_plan,
    split_gcs_url,
    split_s3_url,
)

PLAN = Plan(
    (RunSource("trial-0", "s3://bucket/a/logs.tgz", "tar", "000"),
     RunSource("trial-1", "https://host/x/logs", "none", "001"),
     RunSource("trial-2", "gs://bucket/b/logs.zip", "zip", "002")),
    S3Access("minio:9000", False, "us-east-1", "ACCESS", "SECRET"),
    GcsAccess("http://gcs-emulator:4443", "GCS_KEY"),
)  # fmt: skip


def test_a_plan_survives_encoding():
    assert parse_plan(encode_plan(PLAN)) == PLAN


def test_a_plan_written_before_gcs_was_fetched_reads_with_default_gcs_access():
    raw = json.loads(encode_plan(PLAN))
    del raw["gcs"]
    assert parse_plan(json.dumps(raw)).gcs == GcsAccess()


def without(field: str, index: int = 0) -> str:
    raw = json.loads(encode_plan(PLAN))
    del raw["runs"][index][field]
    return json.dumps(raw)


def changed(path: tuple, value) -> str:
    raw = json.loads(encode_plan(PLAN))
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(raw)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not JSON"),
        ("[]", "must be an object"),
        ('{"runs": []}', "ARGOML_FETCH_PLAN.runs: must be a non-empty list"),
        (without("url"), r"runs\[0\].url: must be a non-empty string"),
        (changed(("runs", 0, "url"), "pvc://c/k"), r"runs\[0\].url: 'pvc://c/k' must start with"),
        (changed(("runs", 1, "archive"), "rar"), r"runs\[1\].archive: 'rar' must be one of none, tar, zip"),
        (changed(("runs", 0, "folder"), "../x"), r"runs\[0\].folder: '../x' must be 1 to 100 of"),
        (changed(("runs", 0, "folder"), ".."), r"runs\[0\].folder: '..' must be .* not starting with '.'"),
        (changed(("runs", 0, "folder"), ".fetch-state.json"), r"runs\[0\].folder: '.fetch-state.json'"),
        (changed(("runs", 0, "folder"), "a/b"), r"runs\[0\].folder: 'a/b' must be"),
        (changed(("runs", 0, "folder"), ""), r"runs\[0\].folder: must be a non-empty string"),
        (changed(("runs", 1, "folder"), "000"), "two runs share a folder"),
        (without("run", 1), r"runs\[1\].run: must be a non-empty string"),
        (changed(("s3", "secure"), "no"), "s3.secure: must be true or false"),
        (changed(("s3",), []), "s3: must be an object"),
        (changed(("runs", 0), "x"), r"runs\[0\]: must be an object"),
        (changed(("gcs",), "x"), "gcs: must be an object"),
        (
            changed(("gcs", "endpoint"), "gcs:4443"),
            "gcs.endpoint: 'gcs:4443' must start with http:// or https://",
        ),
        (changed(("gcs", "key_env"), 3), "gcs.key_env: must be a string"),
    ],
)
def test_a_wrong_plan_names_its_field(text, message):
    with pytest.raises(PlanError, match=message):
        parse_plan(text)


def test_urls_and_endpoints():
    assert split_s3_url("s3://bucket/a/b/") == ("bucket", "a/b")
    with pytest.raises(PlanError, match="needs a bucket and a key"):
        split_s3_url("s3://bucket/")
    assert endpoint_parts("minio:9000", insecure=True) == ("minio:9000", False)
    assert endpoint_parts("minio:9000", insecure=False) == ("minio:9000", True)
    assert endpoint_parts("http://minio:9000/", insecure=False) == ("minio:9000", False)
    assert endpoint_parts("https://s3.example.com", insecure=True) == ("s3.example.com", True)
    assert [is_fetched(p) for p in ("s3://b/k", "http://h/x", "https://h/x", "gs://b/k", "pvc://c/x")] == [
        True, True, True, True, False
    ]  # fmt: skip
    assert split_gcs_url("gs://bucket/a/b/") == ("bucket", "a/b")
    with pytest.raises(PlanError, match="needs a bucket and an object name"):
        split_gcs_url("gs://bucket")
    assert (folder_name(0), folder_name(123), folder_name(1234)) == ("000", "123", "1234")
    names = ("trial-0-1", "a=b_(c)[d]+e.f", "_x", ".", "..", ".x", "a b", "x" * 101)
    assert [is_folder_name(name) for name in names] == [
        True, True, True, False, False, False, False, False
    ]  # fmt: skip
