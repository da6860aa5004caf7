"""The Deployment and Service of a Tensorboard, built with no cluster."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from podsecurity import RESTRICTED, check_pod
from tensorboard.artifacts import ObjectStore, Repository
from tensorboard.conf import TensorboardConf
from tensorboard.fetchplan import GcsAccess, Plan, RunSource, S3Access, parse_plan
from tensorboard.manifests import (
    ANNOTATION_SPEC_HASH,
    build_deployment,
    build_plan_configmap,
    build_service,
    child_name,
    desired_hash,
    fetch_folders,
    fetch_plan,
    is_controlled_by,
    logdir_args,
    merge_plans,
    plan_configmap_name,
    plan_of_configmap,
    updated_child,
    url,
)
from tensorboard.spec import Logdir, parse, with_source_runs

CONF = TensorboardConf()


def tensorboard(*logdirs: tuple[str, str], name: str = "mnist-train", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "Tensorboard",
        "metadata": {"name": name, "namespace": "team-a", "uid": "uid-1", "generation": 1},
        "spec": {"logdirs": [{"name": run, "path": path} for run, path in logdirs], **spec},
    }


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]["containers"][0]


def env(deployment: dict[str, Any], which: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        item["name"]: item.get("value", item.get("valueFrom"))
        for item in (which or container(deployment)).get("env", [])
    }


def init_container(deployment: dict[str, Any]) -> dict[str, Any]:
    [fetcher] = deployment["spec"]["template"]["spec"]["initContainers"]
    return fetcher


def plan_of(board: dict[str, Any], conf: TensorboardConf = CONF) -> Plan:
    """The plan the controller writes into the ConfigMap the pod's fetchers read."""
    spec = parse(board)
    configmap = build_plan_configmap(spec.identity, fetch_plan(spec, conf))
    return parse_plan(configmap["data"]["plan.json"])


S3_BOARD = tensorboard(("train-small", "s3://ml/a/tb"), ("train-large", "s3://ml/b/tb"))


def test_the_deployment_runs_tensorboard_on_every_logdir_under_its_path_prefix():
    deployment = build_deployment(parse(S3_BOARD), CONF)
    assert deployment["metadata"]["name"] == "tb-mnist-train"
    assert container(deployment)["command"] == ["tensorboard"]
    assert container(deployment)["args"] == [
        "--logdir=/tensorboard-logs",  # one sub-folder per run, named after it
        "--bind_all",
        "--port=6006",
        "--path_prefix=/tensorboards/team-a/mnist-train",
    ]
    assert container(deployment)["image"] == "tensorflow/tensorflow:2.16.1"
    assert container(deployment)["readinessProbe"]["httpGet"] == {
        "path": "/tensorboards/team-a/mnist-train/",
        "port": "http",
    }
    assert deployment["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_children_are_owned_by_the_tensorboard_and_selected_by_its_label():
    deployment, service = build_deployment(parse(S3_BOARD), CONF), build_service(parse(S3_BOARD).identity)
    for child in (deployment, service):
        assert child["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "argoml.io/v1alpha1",
                "kind": "Tensorboard",
                "name": "mnist-train",
                "uid": "uid-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert is_controlled_by(child, parse(S3_BOARD).identity)
    selector = {"argoml.io/tensorboard": "mnist-train"}
    assert deployment["spec"]["selector"]["matchLabels"] == selector == service["spec"]["selector"]
    assert deployment["spec"]["template"]["metadata"]["labels"].items() >= selector.items()
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]


def test_resources_come_from_settings_and_the_spec_overrides_them_per_resource():
    conf = TensorboardConf(requests={"cpu": "50m", "memory": "128Mi"}, limits={"memory": "1Gi"})
    board = tensorboard(("a", "s3://b/k"), resources={"limits": {"memory": "4Gi", "cpu": "2"}}, image="tb:1")
    built = container(build_deployment(parse(board), conf))
    assert built["resources"] == {
        "requests": {"cpu": "50m", "memory": "128Mi"},
        "limits": {"memory": "4Gi", "cpu": "2"},
    }
    assert built["image"] == "tb:1"


def test_s3_and_http_artifacts_are_fetched_into_an_empty_dir_by_our_image_before_tensorboard_starts():
    board = tensorboard(("small", "s3://ml/a/tb.tgz"), ("pvc", "pvc://logs/x"), ("web", "https://h/tb"))
    board["spec"]["logdirs"][0]["archive"] = "tar"
    deployment = build_deployment(parse(board), TensorboardConf(fetch_image="argoml/argoml:1.2"))
    pod = deployment["spec"]["template"]["spec"]
    fetcher = init_container(deployment)
    assert fetcher["image"] == "argoml/argoml:1.2"
    assert fetcher["command"] == ["python", "/app/manage.py", "fetch_tensorboard_logs"]
    assert fetcher["args"] == [
        "--dest=/tensorboard-logs",
        "--plan=/etc/argoml/fetch-plan/plan.json",
        "--report=/dev/termination-log",
    ]
    assert fetcher["volumeMounts"] == [
        {"name": "fetched-logs", "mountPath": "/tensorboard-logs"},
        {"name": "fetch-plan", "mountPath": "/etc/argoml/fetch-plan", "readOnly": True},
    ]
    assert {"name": "fetch-plan", "configMap": {"name": "tb-mnist-train-fetch-plan"}} in pod["volumes"]
    assert (fetcher["terminationMessagePath"], fetcher["terminationMessagePolicy"]) == (
        "/dev/termination-log", "File"
    )  # fmt: skip
    assert {"name": "fetched-logs", "emptyDir": {}} in pod["volumes"]
    assert {"name": "fetched-logs", "mountPath": "/tensorboard-logs", "readOnly": True} in container(
        deployment
    )["volumeMounts"]
    assert plan_of(board).runs == (
        RunSource("small", "s3://ml/a/tb.tgz", "tar", "small"),
        RunSource("web", "https://h/tb", "none", "web"),
    )
    # Fetched runs are the sub-folders of the unnamed first entry; a PVC logdir is a named entry.
    assert container(deployment)["args"][0] == "--logdir_spec=/tensorboard-logs,pvc:/logdirs/logs/x"
    assert "env" not in container(deployment)  # TensorBoard reads local files: no credentials
    assert [c["name"] for c in pod["containers"]] == ["tensorboard"]  # no syncSeconds: fetched once
    assert check_pod(RESTRICTED, pod) == []


def test_a_running_source_gets_a_sync_sidecar_with_the_same_plan():
    deployment = build_deployment(parse({**S3_BOARD, "spec": {**S3_BOARD["spec"], "syncSeconds": 30}}), CONF)
    _tensorboard, sidecar = deployment["spec"]["template"]["spec"]["containers"]
    assert sidecar["name"] == "sync-logs"
    assert sidecar["args"] == [
        "--dest=/tensorboard-logs",
        "--plan=/etc/argoml/fetch-plan/plan.json",
        "--report=/dev/termination-log",
        "--every=30",
    ]
    assert sidecar["env"] == init_container(deployment)["env"]
    assert sidecar["volumeMounts"] == init_container(deployment)["volumeMounts"]
    # The sidecar reads a changed plan itself: the pod template does not change with it.
    assert "annotations" not in deployment["spec"]["template"]["metadata"]


def test_s3_credentials_are_secret_key_refs_to_the_configured_secret_and_the_endpoint_comes_from_the_spec():
    board = tensorboard(
        ("a", "s3://ml/a"), s3={"endpoint": "minio.argo:9000", "insecure": True, "region": "eu-1"}
    )
    deployment = build_deployment(parse(board), CONF)
    variables = env(deployment, init_container(deployment))
    assert variables["ARGOML_FETCH_ACCESS_KEY"] == {
        "secretKeyRef": {"name": "tensorboard-s3", "key": "accesskey", "optional": True}
    }
    assert variables["ARGOML_FETCH_SECRET_KEY"]["secretKeyRef"]["key"] == "secretkey"
    assert plan_of(board).s3 == S3Access(
        "minio.argo:9000", False, "eu-1", "ARGOML_FETCH_ACCESS_KEY", "ARGOML_FETCH_SECRET_KEY"
    )
    assert set(variables) == {"ARGOML_FETCH_ACCESS_KEY", "ARGOML_FETCH_SECRET_KEY"}  # the plan is mounted


def test_credentials_the_artifact_named_replace_the_configured_secret():
    s3 = {
        "accessKeySecret": {"name": "minio-cred", "key": "ak"},
        "secretKeySecret": {"name": "minio-cred", "key": "sk"},
    }
    deployment = build_deployment(parse(tensorboard(("a", "s3://ml/a"), s3=s3)), CONF)
    variables = env(deployment, init_container(deployment))
    assert variables["ARGOML_FETCH_ACCESS_KEY"]["secretKeyRef"] == {
        "name": "minio-cred",
        "key": "ak",
        "optional": True,
    }
    assert variables["ARGOML_FETCH_SECRET_KEY"]["secretKeyRef"]["name"] == "minio-cred"


def test_the_default_repository_endpoint_is_used_when_the_spec_names_none_and_aws_needs_none():
    conf = TensorboardConf(default_repository=Repository(s3=ObjectStore(endpoint="https://s3.internal")))
    assert plan_of(S3_BOARD, conf).s3.endpoint == "s3.internal"
    assert plan_of(S3_BOARD, conf).s3.secure is True
    assert plan_of(S3_BOARD).s3.endpoint == ""


def test_http_only_plans_carry_no_credentials():
    board = tensorboard(("a", "http://files/a.tgz"))
    assert "env" not in init_container(build_deployment(parse(board), CONF))
    assert plan_of(board).s3 == S3Access()


def test_pvc_logdirs_mount_each_claim_once_read_only():
    board = tensorboard(("a", "pvc://logs/team/a"), ("b", "pvc://logs/team/b"), ("c", "pvc://other/"))
    deployment = build_deployment(parse(board), CONF)
    pod = deployment["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "logdir-0", "persistentVolumeClaim": {"claimName": "logs", "readOnly": True}},
        {"name": "logdir-1", "persistentVolumeClaim": {"claimName": "other", "readOnly": True}},
    ]
    assert container(deployment)["volumeMounts"] == [
        {"name": "logdir-0", "mountPath": "/logdirs/logs", "readOnly": True},
        {"name": "logdir-1", "mountPath": "/logdirs/other", "readOnly": True},
    ]
    assert (
        container(deployment)["args"][0]
        == "--logdir_spec=a:/logdirs/logs/team/a,b:/logdirs/logs/team/b,c:/logdirs/other"
    )
    assert "env" not in container(deployment)  # no object store, no credentials


def test_gcs_logdirs_are_fetched_with_the_key_secret_the_spec_names_as_a_secret_key_ref():
    board = tensorboard(("a", "gs://logs/a.zip"), ("b", "s3://ml/b"),
                        gcs={"serviceAccountKeySecret": {"name": "argo-gcs", "key": "sa.json"}})  # fmt: skip
    board["spec"]["logdirs"][0]["archive"] = "zip"
    conf = TensorboardConf(gcs_endpoint="http://gcs-emulator:4443")
    deployment = build_deployment(parse(board), conf)
    plan = plan_of(board, conf)
    assert plan.runs[0] == RunSource("a", "gs://logs/a.zip", "zip", "a")
    assert plan.gcs == GcsAccess("http://gcs-emulator:4443", "ARGOML_FETCH_GCS_KEY")
    assert env(deployment, init_container(deployment))["ARGOML_FETCH_GCS_KEY"] == {
        "secretKeyRef": {"name": "argo-gcs", "key": "sa.json", "optional": True}
    }
    assert container(deployment)["args"][0] == "--logdir=/tensorboard-logs"
    assert "env" not in container(deployment)  # TensorBoard itself never talks to GCS


def test_gcs_logdirs_without_a_key_in_the_spec_use_the_configured_secret_else_the_pods_identity():
    board = tensorboard(("a", "gs://logs/a"))
    configured = build_deployment(parse(board), TensorboardConf(gcs_credentials_secret="gcs-key"))
    assert env(configured, init_container(configured))["ARGOML_FETCH_GCS_KEY"]["secretKeyRef"] == {
        "name": "gcs-key", "key": "key.json", "optional": True
    }  # fmt: skip
    ambient = build_deployment(parse(board), CONF)
    assert plan_of(board).gcs == GcsAccess("", "ARGOML_FETCH_GCS_KEY")
    assert "ARGOML_FETCH_GCS_KEY" not in env(ambient, init_container(ambient))


def test_plans_without_gcs_runs_carry_no_gcs_access():
    conf = TensorboardConf(gcs_credentials_secret="k")
    board = tensorboard(("a", "s3://ml/a"))
    deployment = build_deployment(parse(board), conf)
    assert plan_of(board, conf).gcs == GcsAccess()
    assert "ARGOML_FETCH_GCS_KEY" not in env(deployment, init_container(deployment))


def test_run_names_that_become_equal_when_made_safe_stay_distinct():
    board = tensorboard(("a:b", "s3://x/1"), ("a=b", "s3://x/2"), ("a:b", "s3://x/3"))
    assert [logdir.run for logdir in parse(board).logdirs] == ["a=b", "a=b-2", "a=b-3"]
    assert [run.folder for run in plan_of(board).runs] == ["a=b", "a=b-2", "a=b-3"]
    assert logdir_args(parse(board).logdirs) == ["--logdir=/tensorboard-logs"]


def test_child_names_are_dns_labels_however_long_or_dotted_the_tensorboard_name():
    assert child_name("mnist") == "tb-mnist"
    long_name = "a" * 200
    assert len(child_name(long_name)) == 63
    assert child_name(long_name) != child_name("a" * 199)
    dotted = child_name("v1.2-run")
    assert dotted.startswith("tb-v1-2-run-")
    assert len(dotted) <= 63


def test_the_url_is_behind_the_base_url_or_the_services_in_cluster_address():
    assert (
        url(CONF, "team-a", "mnist") == "http://tb-mnist.team-a.svc.cluster.local/tensorboards/team-a/mnist/"
    )
    conf = TensorboardConf(base_url="https://ml.example.com")
    assert url(conf, "team-a", "mnist") == "https://ml.example.com/tensorboards/team-a/mnist/"


def test_the_spec_hash_changes_with_the_logdirs_only():
    first = build_deployment(parse(S3_BOARD), CONF)
    assert desired_hash(first) == desired_hash(build_deployment(parse(copy.deepcopy(S3_BOARD)), CONF))
    changed = tensorboard(("train-small", "s3://ml/a/tb"))
    assert desired_hash(build_deployment(parse(changed), CONF)) != desired_hash(first)
    assert first["metadata"]["annotations"][ANNOTATION_SPEC_HASH] == desired_hash(first)


def test_a_replacement_keeps_the_resource_version_and_the_services_cluster_ip():
    desired = build_service(parse(S3_BOARD).identity)
    current = copy.deepcopy(desired)
    current["metadata"]["resourceVersion"] = "42"
    current["spec"]["clusterIP"] = "10.0.0.7"
    body = updated_child(current, desired)
    assert body["metadata"]["resourceVersion"] == "42"
    assert body["spec"]["clusterIP"] == "10.0.0.7"
    assert "clusterIP" not in desired["spec"]  # the desired object is not changed


def test_a_child_controlled_by_another_object_is_not_ours():
    other = build_service(parse(tensorboard(("a", "s3://b/k"))).identity)
    other["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    assert not is_controlled_by(other, parse(S3_BOARD).identity)


@pytest.mark.parametrize(
    "logdirs",
    [(("a", "s3://ml/a"),), (("a", "pvc://claim/x"), ("b", "pvc://other/y")), (("a", "gs://logs/a"),)],
)
def test_the_deployment_meets_the_restricted_pod_security_level(logdirs):
    conf = TensorboardConf(gcs_credentials_secret="gcs")
    template = build_deployment(parse(tensorboard(*logdirs)), conf)["spec"]["template"]
    assert check_pod(RESTRICTED, template["spec"], template["metadata"].get("annotations")) == []


def test_a_gcs_endpoint_setting_without_a_scheme_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match="TENSORBOARD_GCS_ENDPOINT: 'gcs:4443' must start with http"):
        TensorboardConf(gcs_endpoint="gcs:4443")


# -- the fetch plan's ConfigMap and how it grows -----------------------------------------------------------
def test_the_plan_lives_in_a_configmap_controlled_by_the_tensorboard_with_a_valid_derived_name():
    spec = parse(S3_BOARD)
    configmap = build_plan_configmap(spec.identity, fetch_plan(spec, CONF))
    assert configmap["metadata"]["name"] == "tb-mnist-train-fetch-plan"
    assert is_controlled_by(configmap, parse(S3_BOARD).identity)
    assert configmap["metadata"]["labels"]["argoml.io/tensorboard"] == "mnist-train"
    assert plan_of_configmap(configmap) == plan_of(S3_BOARD)
    long_name = plan_configmap_name("a." * 120 + "b")
    assert len(long_name) <= 253
    assert long_name.endswith("-fetch-plan")


def test_a_configmap_without_a_readable_plan_gives_none_so_it_is_rewritten():
    assert plan_of_configmap(None) is None
    assert plan_of_configmap({"data": {"plan.json": "{not json"}}) is None
    assert plan_of_configmap({"data": {"other": "x"}}) is None


def test_run_folders_are_the_run_names_and_a_name_that_cannot_be_a_folder_gets_a_free_number():
    logdirs = [Logdir(".hidden", "s3://b/1"), Logdir("000", "s3://b/2"), Logdir("ok", "pvc://logs/x"),
               Logdir("..", "s3://b/3")]  # fmt: skip
    assert fetch_folders(logdirs) == ["001", "000", "002"]


def test_merging_keeps_every_run_in_its_folder_and_adds_the_new_ones_after():
    s3 = S3Access("minio:9000", False)
    current = Plan((RunSource("a", "s3://b/a", "tar", "a"), RunSource("gone", "s3://b/g", "none", "gone")))
    desired = Plan((RunSource("a", "s3://b/a2", "tar", "a"), RunSource("new", "s3://b/n", "none", "new")), s3)
    merged = merge_plans(current, desired)
    assert [(run.folder, run.url) for run in merged.runs] == [
        ("a", "s3://b/a2"),  # the run of that folder now lives there
        ("gone", "s3://b/g"),  # the pod already lists it: never dropped
        ("new", "s3://b/n"),
    ]
    assert merged.s3 == s3
    assert merge_plans(None, desired) == desired


def test_runs_a_source_recorded_since_extend_the_plan_but_not_the_spec():
    entries = [
        {"name": "train-small", "path": "s3://ml/a/tb"},  # already listed (by path)
        {"name": "train-xl", "path": "s3://ml/c/tb", "archive": "tar"},
        {"name": "logs", "path": "pvc://logs/x"},  # read in place: would change the Deployment, left out
    ]
    running = {**S3_BOARD, "spec": {**S3_BOARD["spec"], "syncSeconds": 60}}
    extended = with_source_runs(parse(running), entries)
    assert [run.run for run in fetch_plan(extended, CONF).runs] == [
        "train-small",
        "train-large",
        "train-xl",
    ]
    assert len(S3_BOARD["spec"]["logdirs"]) == 2
    assert build_deployment(extended, CONF) == build_deployment(
        parse(running), CONF
    )  # TensorBoard keeps running


def test_without_a_sidecar_a_changed_plan_starts_a_new_pod_through_a_template_annotation():
    first = build_deployment(parse(S3_BOARD), CONF)["spec"]["template"]["metadata"]["annotations"]
    more = tensorboard(("train-small", "s3://ml/a/tb"), ("train-large", "s3://ml/b/tb"), ("xl", "s3://ml/c"))
    second = build_deployment(parse(more), CONF)["spec"]["template"]["metadata"]["annotations"]
    assert first["argoml.io/fetch-plan-hash"] != second["argoml.io/fetch-plan-hash"]
