"""Collecting a workflow's `tensorboard` artifacts: where they are, which cannot be read, and why."""

from __future__ import annotations

import base64
import gzip
import tracemalloc
from pathlib import Path

import pytest
import yaml

import limits
from tensorboard.artifacts import (
    ObjectStore,
    Repository,
    SecretRef,
    archive_kind,
    collect,
    repository_from_configmap,
    repository_ref,
    run_names,
    single_gcs_key,
    single_store,
    usable_artifacts,
    warnings_for,
    workflow_nodes,
)
from tensorboard.errors import (
    MixedObjectStores,
    NodeStatusUnavailable,
    NoTensorboardArtifacts,
    UnusableArtifacts,
)

from .workflows import compressed, mnist_workflow, node, offloaded, s3_artifact, workflow

MINIO = ObjectStore(
    endpoint="minio.argo:9000",
    insecure=True,
    access_key=SecretRef("minio-cred", "accesskey"),
    secret_key=SecretRef("minio-cred", "secretkey"),
)


def test_key_only_artifacts_take_bucket_endpoint_and_credentials_from_the_workflows_repository():
    collection = collect(mnist_workflow())
    assert [(a.display_name, a.path) for a in collection.artifacts] == [
        ("train-small", "s3://ml-artifacts/mnist-train/small/tb"),
        ("train-large", "s3://ml-artifacts/mnist-train/large/tb"),
    ]
    assert {a.store for a in collection.artifacts} == {MINIO}
    assert collection.other_names == ("model",)
    assert collection.finished


def test_an_artifact_naming_its_own_bucket_and_endpoint_wins_over_the_repository_field_by_field():
    wf = workflow(
        "wf",
        node(
            "wf",
            "train",
            s3_artifact("runs/1", bucket="team-bucket", endpoint="s3.eu.example:443", insecure=False),
        ),
    )
    [artifact] = collect(wf).artifacts
    assert artifact.path == "s3://team-bucket/runs/1"
    assert artifact.store == ObjectStore(
        endpoint="s3.eu.example:443", insecure=False, access_key=MINIO.access_key, secret_key=MINIO.secret_key
    )


def test_without_a_resolved_repository_the_configured_default_repository_is_used():
    wf = workflow("wf", node("wf", "train", s3_artifact("runs/1")), repository=None)
    default = Repository(s3_bucket="argo-default", s3=ObjectStore(endpoint="minio:9000", insecure=True))
    [artifact] = collect(wf, default_repository=default).artifacts
    assert (artifact.path, artifact.store) == ("s3://argo-default/runs/1", default.s3)


def test_an_unknown_bucket_is_reported_with_what_to_configure():
    wf = workflow("wf", node("wf", "train", s3_artifact("runs/1")), repository=None)
    collection = collect(wf)
    assert collection.artifacts == ()
    [skipped] = collection.skipped
    assert "bucket is unknown" in skipped.reason
    assert "TENSORBOARD_ARTIFACT_BUCKET" in skipped.reason
    with pytest.raises(UnusableArtifacts, match="no `tensorboard` artifact can be read"):
        usable_artifacts([collection], "Workflow wf")


def test_gcs_artifacts_become_gs_paths_without_an_s3_store():
    artifact = {"name": "tensorboard", "gcs": {"bucket": "logs", "key": "wf/tb"}, "archive": {"none": {}}}
    [found] = collect(workflow("wf", node("wf", "train", artifact))).artifacts
    assert (found.path, found.store) == ("gs://logs/wf/tb", None)


@pytest.mark.parametrize(
    ("archive", "key", "kind"),
    [
        (None, "wf/tb.tgz", "tar"),
        (None, "wf/tb.tar.gz", "tar"),
        ({"tar": {"compressionLevel": 0}}, "wf/tb.tar", "tar"),
        ({"tar": {}}, "wf/tb", "tar"),
        ("none", "wf/tb.tgz", "none"),
        (None, "wf/tb", "none"),
    ],
)
def test_argos_archives_are_runs_to_unpack_and_plain_files_runs_to_copy(archive, key, kind):
    wf = workflow("wf", node("wf", "train", s3_artifact(key, archive=archive)))
    [found] = collect(wf).artifacts
    assert (found.path, found.archive) == (f"s3://ml-artifacts/{key}", kind)
    assert usable_artifacts([collect(wf)], "Workflow wf") == [found]


def test_zip_archives_and_archives_on_gcs_are_runs_to_unpack():
    gcs_tgz = {"name": "tensorboard", "gcs": {"bucket": "logs", "key": "wf/tb.tgz"}}
    wf = workflow(
        "wf",
        node("wf", "zipped", s3_artifact("wf/tb.zip", archive={"zip": {}})),
        node("wf", "on-gcs", gcs_tgz),
        node("wf", "eval", s3_artifact("wf/eval.tgz", archive=None)),
    )
    collection = collect(wf)
    assert [(a.display_name, a.archive) for a in collection.artifacts] == [  # started together: by name
        ("eval", "tar"), ("on-gcs", "tar"), ("zipped", "zip")
    ]  # fmt: skip
    assert collection.skipped == ()


def test_a_gcs_artifact_uses_its_own_key_secret_else_the_repositorys_as_argo_does():
    own_key = {"name": "own", "key": "k"}
    own = {"name": "tensorboard", "gcs": {"key": "wf/a", "serviceAccountKeySecret": own_key}}
    plain = {"name": "tensorboard", "gcs": {"key": "wf/b"}}
    repository = {"gcs": {"bucket": "logs", "serviceAccountKeySecret": {"name": "repo", "key": "sa.json"}}}
    wf = workflow("wf", node("wf", "a", own), node("wf", "b", plain), repository=repository)
    found = collect(wf).artifacts
    assert [(a.path, a.gcs_key) for a in found] == [
        ("gs://logs/wf/a", SecretRef("own", "k")), ("gs://logs/wf/b", SecretRef("repo", "sa.json"))
    ]  # fmt: skip
    with pytest.raises(MixedObjectStores, match="different service-account keys"):
        single_gcs_key(found)
    assert single_gcs_key(found[1:]) == SecretRef("repo", "sa.json")
    assert single_gcs_key(collect(workflow("wf", node("wf", "b", plain))).artifacts) is None


def test_archive_kind_without_a_field_follows_the_key():
    assert archive_kind({}, "wf/pod/tensorboard.tgz") == "tar"
    assert archive_kind({}, "wf/pod/tb.zip") == "zip"
    assert archive_kind({"archive": {"zip": {}}}, "wf/pod/tb") == "zip"
    assert archive_kind({}, "wf/pod/tb") == "none"


def test_http_artifacts_are_read_from_their_url_unless_they_need_credentials():
    plain = {"name": "tensorboard", "http": {"url": "https://files.example/wf/tb.tgz"}}
    private = {"name": "tensorboard", "http": {"url": "https://x/tb", "auth": {"basicAuth": {}}}}
    collection = collect(workflow("wf", node("wf", "a", plain), node("wf", "b", private)))
    [found] = collection.artifacts
    assert (found.path, found.archive, found.store) == ("https://files.example/wf/tb.tgz", "tar", None)
    assert [str(s) for s in collection.skipped] == [
        "wf/b: the HTTP artifact needs headers or credentials, which the fetcher does not send"
    ]


REPOSITORIES = {
    "metadata": {
        "name": "artifact-repositories",
        "annotations": {"workflows.argoproj.io/default-artifact-repository": "default-v1"},
    },
    "data": {
        "default-v1": "s3:\n  bucket: team-logs\n  endpoint: minio.team:9000\n  insecure: true\n"
        "  accessKeySecret: {name: team-cred, key: accesskey}\n"
        "  secretKeySecret: {name: team-cred, key: secretkey}\n",
        "other": "s3:\n  bucket: other-logs\n",
        "broken": "s3: [unclosed",
    },
}


def test_a_repository_comes_from_the_configmap_key_or_its_annotated_default():
    assert repository_from_configmap(REPOSITORIES, None)["s3"]["bucket"] == "team-logs"
    assert repository_from_configmap(REPOSITORIES, "other") == {"s3": {"bucket": "other-logs"}}
    assert repository_from_configmap(REPOSITORIES, "broken") is None
    assert repository_from_configmap(REPOSITORIES, "missing") is None
    assert repository_from_configmap({"data": {"x": "s3: {}"}}, None) is None  # no annotated default


def test_a_repository_the_bounded_reader_refuses_is_no_repository():
    laughs = "a0: &a0 [x, x, x]\na1: &a1 [*a0, *a0, *a0]\ns3: {bucket: b, endpoint: *a1}\n"
    strings = f"e: &e {'x' * 1000}\ns3: {{bucket: b, endpoint: [{', '.join(['*e'] * 100)}]}}\n"
    for text in (laughs, strings):  # an alias of a list; 100 KB of aliases of a string from 1.4 KB
        assert repository_from_configmap({"data": {"team": text}}, "team") is None


def test_repository_fields_that_are_not_text_are_absent():
    configmap = {"data": {"team": "s3: {bucket: [a, b], endpoint: {host: x}, region: 7}\n"}}
    configured = repository_from_configmap(configmap, "team")
    default = Repository(s3_bucket="fallback", s3=ObjectStore(endpoint="minio:9000"))
    [first, *_] = collect(
        mnist_workflow(repository=None), default_repository=default, configured_repository=configured
    ).artifacts
    assert first.path.startswith("s3://fallback/")
    assert (first.store.endpoint, first.store.region) == ("minio:9000", "7")


def test_the_configmap_argo_reads_is_the_workflows_reference_else_artifact_repositories():
    wf = mnist_workflow(repository=None)
    assert repository_ref(wf) == ("artifact-repositories", None)
    wf["spec"]["artifactRepositoryRef"] = {"configMap": "team-repos", "key": "fast"}
    assert repository_ref(wf) == ("team-repos", "fast")
    wf["spec"]["artifactRepositoryRef"] = {"key": "fast"}
    assert repository_ref(wf) == ("artifact-repositories", "fast")


def test_a_configured_repository_fills_in_when_the_workflow_records_none_and_loses_to_a_recorded_one():
    configured = repository_from_configmap(REPOSITORIES, None)
    [first, *_] = collect(mnist_workflow(repository=None), configured_repository=configured).artifacts
    assert first.path == "s3://team-logs/mnist-train/small/tb"
    assert first.store == ObjectStore(
        "minio.team:9000", "", True, SecretRef("team-cred", "accesskey"), SecretRef("team-cred", "secretkey")
    )
    [recorded, *_] = collect(mnist_workflow(), configured_repository=configured).artifacts
    assert recorded.path == "s3://ml-artifacts/mnist-train/small/tb"


def test_no_tensorboard_artifact_names_what_was_found_instead():
    wf = workflow(
        "wf", node("wf", "train", s3_artifact("m", name="model"), s3_artifact("l", name="main-logs"))
    )
    with pytest.raises(NoTensorboardArtifacts) as raised:
        usable_artifacts([collect(wf)], "Workflow wf")
    assert raised.value.details == {"found": ["main-logs", "model"]}
    assert "found only: main-logs, model" in raised.value.message
    assert raised.value.status == 422


def test_a_workflow_without_outputs_says_it_found_none_and_that_a_running_one_may_still_produce_them():
    with pytest.raises(NoTensorboardArtifacts, match=r"found no output artifacts at all.*still running"):
        usable_artifacts([collect(workflow("wf", node("wf", "train"), phase="Running"))], "Workflow wf")


def test_artifacts_in_storages_tensorboard_cannot_read_are_skipped_with_the_storage_named():
    http = {"name": "tensorboard", "oss": {"key": "wf/tb"}}
    deleted = {**s3_artifact("gone"), "deleted": True}
    collection = collect(
        workflow("wf", node("wf", "a", http), node("wf", "b", deleted), node("wf", "c", s3_artifact("ok")))
    )
    assert [a.display_name for a in collection.artifacts] == ["c"]
    assert [str(s) for s in collection.skipped] == [
        "wf/a: stored in oss, which TensorBoard cannot read (use S3, MinIO, GCS or HTTP)",
        "wf/b: deleted by Argo's artifact garbage collection",
    ]
    assert warnings_for([collection]) == [f"Skipped {s}." for s in collection.skipped]


def test_a_key_with_a_comma_is_skipped_because_logdir_spec_cannot_express_it():
    collection = collect(workflow("wf", node("wf", "train", s3_artifact("runs/a,b"))))
    assert "contains a comma" in collection.skipped[0].reason


def test_compressed_node_status_is_decoded():
    assert collect(compressed(mnist_workflow())).artifacts == collect(mnist_workflow()).artifacts


def test_compressed_node_status_inflates_no_further_than_the_bound():
    bomb = base64.b64encode(gzip.compress(b'{"n": "' + b"0" * 50_000_000 + b'"}')).decode()
    assert len(bomb) < 100_000
    wf = mnist_workflow()
    wf["status"] = {"phase": "Succeeded", "compressedNodes": bomb}
    tracemalloc.start()
    try:
        with pytest.raises(NodeStatusUnavailable) as unavailable:
            workflow_nodes(wf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "it inflates to more than the limit of 4194304 bytes (MAX_YAML_BYTES)" in str(unavailable.value)
    assert peak < 10_000_000  # the whole 50 MB, inflated, then parsed, was the old cost
    with limits.overridden(yaml_bytes=60_000_000):
        assert workflow_nodes(wf) == {"n": "0" * 50_000_000}


def test_unreadable_compressed_node_status_is_reported_clearly():
    wf = mnist_workflow()
    wf["status"] = {"phase": "Succeeded", "compressedNodes": "not base64!"}
    with pytest.raises(NodeStatusUnavailable, match=r"status\.compressedNodes.*not valid"):
        workflow_nodes(wf)


def test_offloaded_node_status_is_reported_with_what_to_do():
    with pytest.raises(NodeStatusUnavailable) as raised:
        collect(offloaded(mnist_workflow()))
    assert "Argo's database" in raised.value.message
    assert raised.value.details["offloadNodeStatusVersion"] == "fnv:1234567890"


def test_a_running_workflow_is_collected_with_a_warning():
    wf = mnist_workflow(phase="Running")
    collection = collect(wf)
    assert len(collection.artifacts) == 2
    assert not collection.finished
    assert (
        "is Running: only the `tensorboard` artifacts of its finished steps" in warnings_for([collection])[0]
    )


def test_nodes_are_listed_in_the_order_they_started():
    wf = workflow(
        "wf",
        node("wf", "b", s3_artifact("b"), started="2025-01-01T10:00:02Z"),
        node("wf", "a", s3_artifact("a"), started="2025-01-01T10:00:01Z"),
    )
    assert [a.display_name for a in collect(wf).artifacts] == ["a", "b"]


def test_runs_are_named_by_node_and_by_their_path_where_display_names_repeat():
    wf = workflow(
        "sweep-0",
        node("sweep-0", "train", s3_artifact("1"), path="[0].trial(0:lr:0.1).train"),
        node("sweep-0", "train", s3_artifact("2"), path="[0].trial(1:lr:0.2).train"),
        node("sweep-0", "eval", s3_artifact("3")),
    )
    assert run_names(collect(wf).artifacts) == [
        "sweep-0.[0].trial(0:lr:0.1).train",
        "sweep-0.[0].trial(1:lr:0.2).train",
        "eval",
    ]


def test_artifacts_on_two_endpoints_cannot_share_one_tensorboard():
    wf = workflow(
        "wf",
        node("wf", "a", s3_artifact("a", endpoint="minio-a:9000")),
        node("wf", "b", s3_artifact("b", endpoint="minio-b:9000")),
    )
    with pytest.raises(MixedObjectStores, match="minio-a:9000, minio-b:9000"):
        single_store(collect(wf).artifacts)


def test_artifacts_on_one_store_share_it():
    assert single_store(collect(mnist_workflow()).artifacts) == MINIO


def test_the_workflow_example_says_one_thing_about_archives_and_both_ways_are_read():
    """examples/tensorboard-workflow.yaml saves plain files and says Argo's default .tgz works too: both
    are read (the tgz unpacked), and no comment in it says a tarball cannot be."""
    example = Path(__file__).resolve().parents[2] / "examples" / "tensorboard-workflow.yaml"
    text = example.read_text()
    artifact = yaml.safe_load(text)["spec"]["templates"][0]["outputs"]["artifacts"][0]
    assert archive_kind(artifact, "mnist-tb/mnist-tb/tensorboard") == "none"
    argo_default = {key: value for key, value in artifact.items() if key != "archive"}
    assert archive_kind(argo_default, "team-a/mnist-tb/tensorboard.tgz") == "tar"
    comments = " ".join(line.split("#", 1)[1] for line in text.splitlines() if "#" in line).lower()
    assert "cannot read a tarball" not in comments
    assert "tgz works too" in comments
