"""A Tensorboard read once into the value its builders take: run names, PVC paths, and every problem."""

from __future__ import annotations

from typing import Any

import pytest

from fields import FieldError, SpecError
from tensorboard.artifacts import ObjectStore, SecretRef
from tensorboard.spec import (
    Identity,
    Logdir,
    PvcPath,
    Source,
    parse,
    parse_pvc_path,
    resync_after,
    safe_run_name,
)


def tensorboard(*logdirs: tuple[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "mnist-train", "namespace": "team-a", "uid": "uid-1"},
        "spec": {"logdirs": [{"name": run, "path": path} for run, path in logdirs], **spec},
    }


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("trial(0:batch-size:16,lr:0.1)", "trial(0=batch-size=16_lr=0.1)"),
        ("/etc/passwd", "etc_passwd"),
        ("s3://bucket", "s3=_bucket"),
        ("train small", "train_small"),
        ("", "run"),
        (",,,", "run"),
    ],
)
def test_run_names_cannot_break_the_logdir_spec_syntax(name, safe):
    assert safe_run_name(name) == safe
    assert not {",", ":"} & set(safe)
    assert not safe.startswith("/")


@pytest.mark.parametrize(
    ("logdirs", "message"),
    [
        ([], "spec.logdirs: at least one"),
        ([("a", "/local/path")], r"spec.logdirs\[0\].path: '/local/path' must start with s3://"),
        ([("a", "s3://b/x,y")], "contains a comma"),
        ([("a", "s3://b/x"), ("b", "s3://b/x")], r"spec.logdirs\[1\].path: 's3://b/x' is listed twice"),
        ([("a", "pvc://Bad_Claim/x")], "valid claim name"),
        ([("a", "pvc://logs/../secrets")], "may not leave its claim"),
        ([("a", "ftp://host/x")], r"spec.logdirs\[0\].path: 'ftp://host/x' must start with s3://, gs://"),
    ],
)
def test_a_spec_that_cannot_run_is_refused_naming_the_field(logdirs, message):
    with pytest.raises(SpecError, match=message):
        parse(tensorboard(*logdirs))


def test_pvc_paths_are_normalised():
    assert parse_pvc_path("pvc://logs//team/./a/").local_path == "/logdirs/logs/team/a"
    assert parse_pvc_path("pvc://logs").local_path == "/logdirs/logs"


def test_an_unknown_archive_is_refused_naming_the_entry():
    board = tensorboard(("a", "s3://b/a"), ("b", "s3://b/b.rar"))
    board["spec"]["logdirs"][1]["archive"] = "rar"
    with pytest.raises(SpecError, match=r"spec.logdirs\[1\].archive: 'rar' must be one of none, tar, zip"):
        parse(board)


def test_every_problem_is_reported_at_once_each_naming_its_field():
    board = tensorboard(("a", "ftp://host/x"), ("b", "s3://b/b.rar"), resources={"limits": {"cpu": "lots"}})
    board["spec"]["logdirs"][1]["archive"] = "rar"
    with pytest.raises(SpecError) as refused:
        parse(board)
    assert [error.path for error in refused.value.errors] == [
        "spec.logdirs[0].path",
        "spec.logdirs[1].archive",
        "spec.resources.limits.cpu",
    ]
    assert refused.value.errors[1] == FieldError(
        "spec.logdirs[1].archive", "'rar' must be one of none, tar, zip."
    )
    assert "spec.logdirs[0].path: 'ftp://host/x' must start with s3://" in str(refused.value)


def test_the_spec_is_read_once_into_a_frozen_value():
    board = tensorboard(
        ("a:b", "pvc://logs/team/a"), ("web", "https://h/tb.zip"), image="tb:1", syncSeconds=30,
        s3={"endpoint": "minio:9000", "accessKeySecret": {"name": "cred", "key": "ak"}},
        gcs={"serviceAccountKeySecret": {"name": "gcs", "key": "sa.json"}},
        resources={"requests": {"cpu": "1"}}, workflowRef={"name": "mnist"},
    )  # fmt: skip
    board["spec"]["logdirs"][1]["archive"] = "zip"
    spec = parse(board)
    assert spec.identity == Identity("mnist-train", "team-a", "uid-1")
    assert spec.logdirs == (
        Logdir("a=b", "pvc://logs/team/a", "none", PvcPath("logs", "team/a")),
        Logdir("web", "https://h/tb.zip", "zip"),
    )
    assert (spec.image, spec.sync_seconds, spec.resources) == ("tb:1", 30, {"requests": {"cpu": "1"}})
    assert spec.s3 == ObjectStore(endpoint="minio:9000", access_key=SecretRef("cred", "ak"))
    assert spec.gcs_key == SecretRef("gcs", "sa.json")
    assert spec.source == Source("Workflow", "mnist")
    assert spec.resync_after == resync_after(board) == 30.0
