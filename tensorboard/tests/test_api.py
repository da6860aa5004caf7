"""/api/tensorboards/: spawn from a workflow (idempotent), specific errors, reads of the mirror within the
user's namespaces, open and stop. The simulator is the cluster; rows are written by the mirror's own path."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test.utils import override_settings
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from hyperparam.manifests import LABEL_BATCH, LABEL_SWEEP_UID
from hyperparam.tests.conftest import make_spec
from kube.client import reset_client
from kube.controller.mirror import apply_event
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from tensorboard.models import Tensorboard

from .cluster import get, install_crds, store_workflow, tensorboard
from .workflows import NAMESPACE, mnist_workflow, node, offloaded, s3_artifact, workflow

pytestmark = pytest.mark.django_db

URL = "/api/tensorboards/"


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator() as simulator:
        install_crds(simulator)
        simulator.store.ensure_namespace(NAMESPACE)
        simulator.store.ensure_namespace("team-b")
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            yield simulator
        reset_client()


def user_with(name: str, role: Role | None, namespace: str = NAMESPACE) -> APIClient:
    user = User.objects.create_user(name)
    if role is not None:
        NamespaceGrant.objects.create(user=user, namespace=namespace, role=role)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def owner() -> APIClient:
    return user_with("owner", Role.EDITOR)


@pytest.fixture
def viewer() -> APIClient:
    return user_with("viewer", Role.VIEWER)


@pytest.fixture
def outsider() -> APIClient:
    return user_with("outsider", Role.EDITOR, namespace="team-b")


def spawn(client: APIClient, workflow_name: str, **body: Any) -> Any:
    return client.post(URL, {"namespace": NAMESPACE, "workflow": workflow_name, **body}, format="json")


def mirror(sim: Simulator, name: str) -> Tensorboard:
    """What the controller's mirror does with the watch event of the Tensorboard."""
    apply_event(Tensorboard, "ADDED", tensorboard(sim, name, NAMESPACE))
    return Tensorboard.objects.get(name=name, deleted_at=None)


# -- spawning ----------------------------------------------------------------------------------------
def test_a_finished_workflow_spawns_a_tensorboard_for_its_tensorboard_artifacts(sim, owner):
    store_workflow(sim, mnist_workflow("spawn-ok"))
    response = spawn(owner, "spawn-ok")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == "spawn-ok"
    assert body["url"] == "http://tb-spawn-ok.team-a.svc.cluster.local/tensorboards/team-a/spawn-ok/"
    assert body["logdirs"] == [
        {"name": "train-small", "path": "s3://ml-artifacts/spawn-ok/small/tb"},
        {"name": "train-large", "path": "s3://ml-artifacts/spawn-ok/large/tb"},
    ]
    assert (body["source_kind"], body["source_name"], body["created"], body["warnings"]) == (
        "Workflow",
        "spawn-ok",
        True,
        [],
    )
    spec = tensorboard(sim, "spawn-ok", NAMESPACE)["spec"]
    assert spec["workflowRef"] == {"kind": "Workflow", "name": "spawn-ok"}
    assert spec["s3"]["endpoint"] == "minio.argo:9000"
    assert spec["s3"]["accessKeySecret"] == {"name": "minio-cred", "key": "accesskey"}


def test_spawning_the_same_workflow_again_returns_the_same_instance(sim, owner):
    store_workflow(sim, mnist_workflow("spawn-twice"))
    first = spawn(owner, "spawn-twice").json()
    mirror(sim, "spawn-twice")
    again = spawn(owner, "spawn-twice")
    assert again.status_code == 200
    assert again.json()["uid"] == first["uid"]
    assert again.json()["created"] is False
    assert again.json()["id"] == Tensorboard.objects.get(uid=first["uid"]).id
    assert (
        len(
            sim.store.list("tensorboards.argoml.io", NAMESPACE, field_selector="metadata.name=spawn-twice")[
                "items"
            ]
        )
        == 1
    )


def test_a_running_workflow_is_spawned_with_a_warning_and_a_later_spawn_adds_its_new_artifacts(sim, owner):
    running = workflow("spawn-running", node("spawn-running", "epoch-1", s3_artifact("r/1")), phase="Running")
    store_workflow(sim, running)
    first = spawn(owner, "spawn-running")
    assert first.status_code == 201
    assert first.json()["warnings"] == [
        "Workflow spawn-running is Running: only the `tensorboard` artifacts of its finished steps are "
        "included; spawn again later to add the others."
    ]
    finished = workflow(
        "spawn-running",
        node("spawn-running", "epoch-1", s3_artifact("r/1")),
        node("spawn-running", "epoch-2", s3_artifact("r/2"), started="2025-01-01T10:30:00Z"),
    )
    sim.store.mutate(
        "workflows.argoproj.io",
        "spawn-running",
        lambda wf: {**wf, "status": finished["status"]},
        namespace=NAMESPACE,
    )
    again = spawn(owner, "spawn-running")
    assert again.status_code == 200
    assert again.json()["warnings"] == []
    assert [run["name"] for run in tensorboard(sim, "spawn-running", NAMESPACE)["spec"]["logdirs"]] == [
        "epoch-1",
        "epoch-2",
    ]


def test_an_idle_timeout_is_written_as_a_go_duration_and_a_bad_one_is_refused(sim, owner):
    store_workflow(sim, mnist_workflow("spawn-idle"))
    assert spawn(owner, "spawn-idle", idleTimeout="90m").status_code == 201
    assert tensorboard(sim, "spawn-idle", NAMESPACE)["spec"]["idleTimeout"] == "1h30m"
    refused = spawn(owner, "spawn-idle", idleTimeout="soon")
    assert refused.status_code == 400
    assert refused.json() == {"idleTimeout": ["'soon' is not a duration like 2h, 90m or 1h30m."]}


# -- errors ------------------------------------------------------------------------------------------
def test_a_workflow_that_does_not_exist_is_404(sim, owner):
    response = spawn(owner, "no-such-workflow")
    assert response.status_code == 404
    assert response.json() == {
        "detail": "Workflow team-a/no-such-workflow was not found (looked for kind Workflow). To open "
        'another kind, send "kind": one of Workflow, HyperparamWorkflow, TFJob, MXJob, PyTorchJob, '
        "XGBoostJob, JAXJob, PaddleJob, MPIJob, TrainJob.",
        "code": "source_not_found",
        "kind": "Workflow",
        "namespace": NAMESPACE,
        "name": "no-such-workflow",
        "found_kinds": [],
    }


def test_a_sweeps_name_sent_as_a_workflow_is_404_saying_which_kind_to_send(sim, owner):
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "HyperparamWorkflow",
         "metadata": {"name": "named-sweep", "namespace": NAMESPACE}, "spec": make_spec()}
    )  # fmt: skip
    response = spawn(owner, "named-sweep")
    assert response.status_code == 404
    body = response.json()
    assert body["detail"] == (
        "Workflow team-a/named-sweep was not found (looked for kind Workflow). There is a HyperparamWorkflow "
        'of that name: send "kind": "HyperparamWorkflow".'
    )
    assert body["found_kinds"] == ["HyperparamWorkflow"]


def test_a_workflow_without_tensorboard_artifacts_is_422_naming_what_it_has(sim, owner):
    name = "no-tb"
    store_workflow(
        sim,
        workflow(
            name, node(name, "train", s3_artifact("m", name="model"), s3_artifact("l", name="main-logs"))
        ),
    )
    response = spawn(owner, name)
    assert response.status_code == 422
    body = response.json()
    assert (body["code"], body["found"]) == ("no_tensorboard_artifacts", ["main-logs", "model"])
    assert body["detail"].startswith(
        "Workflow no-tb has no output artifact named `tensorboard` (found only: main-logs, model)"
    )
    assert tensorboard(sim, name, NAMESPACE) is None


def test_archived_artifacts_become_runs_the_pod_unpacks(sim, owner):
    name = "tarred"
    store_workflow(sim, workflow(name, node(name, "train", s3_artifact("t/tensorboard.tgz", archive=None))))
    response = spawn(owner, name)
    assert response.status_code == 201, response.json()
    assert response.json()["logdirs"] == [
        {"name": "train", "path": "s3://ml-artifacts/t/tensorboard.tgz", "archive": "tar"}
    ]
    assert "syncSeconds" not in tensorboard(sim, name, NAMESPACE)["spec"]  # finished: fetched once


def test_a_running_workflow_gets_a_sync_interval_which_goes_once_it_finished(sim, owner):
    name = "growing"
    running = workflow(name, node(name, "train", s3_artifact("g/tb.tgz", archive=None)), phase="Running")
    store_workflow(sim, running)
    assert spawn(owner, name).status_code == 201
    assert tensorboard(sim, name, NAMESPACE)["spec"]["syncSeconds"] == 60

    sim.store.patch("workflows.argoproj.io", name, {"status": {"phase": "Succeeded"}}, namespace=NAMESPACE)
    assert spawn(owner, name).status_code == 200
    assert "syncSeconds" not in tensorboard(sim, name, NAMESPACE)["spec"]


def test_without_a_recorded_repository_the_namespaces_artifact_repositories_configmap_is_read(sim, owner):
    name = "old-argo"
    store_workflow(
        sim, workflow(name, node(name, "train", s3_artifact("o/tb.tgz", archive=None)), repository=None)
    )
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "artifact-repositories",
                "namespace": NAMESPACE,
                "annotations": {"workflows.argoproj.io/default-artifact-repository": "team"},
            },
            "data": {
                "team": "s3:\n  bucket: team-logs\n  endpoint: minio.team:9000\n  insecure: true\n"
                "  accessKeySecret: {name: team-cred, key: ak}\n"
                "  secretKeySecret: {name: team-cred, key: sk}\n"
            },
        }
    )
    response = spawn(owner, name)
    assert response.status_code == 201, response.json()
    spec = tensorboard(sim, name, NAMESPACE)["spec"]
    assert spec["logdirs"] == [{"name": "train", "path": "s3://team-logs/o/tb.tgz", "archive": "tar"}]
    assert spec["s3"] == {
        "endpoint": "minio.team:9000",
        "insecure": True,
        "accessKeySecret": {"name": "team-cred", "key": "ak"},
        "secretKeySecret": {"name": "team-cred", "key": "sk"},
    }


# The review's ConfigMap (issue 27): the endpoint is an alias of nested lists, which str() wrote out in full:
# 7 levels of 9, 4.8 million leaves, a 24 MB endpoint in the Tensorboard from under 500 bytes.
REPOSITORY_BOMB = (
    "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]\n" for n in range(1, 7))
    + "s3: {bucket: team-logs, endpoint: *a6}\n"
)


def test_an_alias_bomb_in_the_repository_configmap_is_not_expanded(sim, owner):
    assert len(REPOSITORY_BOMB) < 500
    name = "bombed-repo"
    wf = workflow(name, node(name, "train", s3_artifact("b/tb.tgz", archive=None)), repository=None)
    wf["spec"] = {**wf.get("spec", {}), "artifactRepositoryRef": {"configMap": "bombed-repos", "key": "team"}}
    store_workflow(sim, wf)
    configmap = {"name": "bombed-repos", "namespace": NAMESPACE}
    sim.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": configmap, "data": {"team": REPOSITORY_BOMB}}
    )
    tracemalloc.start()
    try:
        response = spawn(owner, name)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000  # the endpoint alone was 24 MB
    # The refused value is no repository, as a broken one is not: the bucket is then unknown.
    assert response.status_code == 422
    assert "the S3 bucket is unknown" in response.json()["detail"]
    assert tensorboard(sim, name, NAMESPACE) is None


def test_offloaded_node_status_is_422_saying_where_the_nodes_are(sim, owner):
    store_workflow(sim, offloaded(mnist_workflow("offloaded")))
    response = spawn(owner, "offloaded")
    assert response.status_code == 422
    assert response.json()["code"] == "node_status_unavailable"
    assert "Argo's database" in response.json()["detail"]


def test_a_name_taken_by_an_instance_of_another_source_is_409(sim, owner):
    spec = {
        "logdirs": [{"name": "x", "path": "s3://b/x"}],
        "workflowRef": {"kind": "Workflow", "name": "other"},
    }
    metadata = {"name": "taken", "namespace": NAMESPACE}
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "Tensorboard", "metadata": metadata, "spec": spec}
    )
    store_workflow(sim, mnist_workflow("taken"))
    response = spawn(owner, "taken")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        "Tensorboard team-a/taken already exists for Workflow other, not for Workflow taken; delete it first."
    )


def test_a_request_without_a_source_names_the_missing_field(sim, owner):
    response = owner.post(URL, {"namespace": NAMESPACE}, format="json")
    assert (response.status_code, response.json()) == (400, {"workflow": ["This field is required."]})


def test_an_unknown_field_is_refused_naming_it_and_the_field_meant(sim, owner):
    """DRF would drop `idleTimout` without a word and spawn with the default timeout."""
    response = owner.post(
        URL, {"namespace": NAMESPACE, "workflow": "wf", "idleTimout": "1h", "x": 1}, format="json"
    )
    assert (response.status_code, response.json()) == (
        400,
        {
            "idleTimout": ['Unknown field; did you mean "idleTimeout"?'],
            "x": ["Unknown field; expected one of idleTimeout, kind, logdirs, name, namespace, workflow."],
        },
    )


@pytest.mark.parametrize(
    "name", ["../../team-b/workflows/payroll", "..", "a/b", "payroll%2F", "Payroll", "payé", "x" * 254]
)
def test_a_source_name_that_is_not_a_kubernetes_name_is_400_and_reads_nothing(sim, owner, name):
    """Issue 16: the name went unescaped into the request path and read team-b's Workflow."""
    payroll = workflow("payroll", node("payroll", "train", s3_artifact("secret/key", name="salaries")))
    payroll["metadata"]["namespace"] = "team-b"
    if get(sim, "workflows", "payroll", "team-b") is None:
        store_workflow(sim, payroll)
    response = spawn(owner, name)
    assert response.status_code == 400
    assert list(response.json()) == ["workflow"]
    assert "salaries" not in response.text
    assert "secret/key" not in response.text


# -- other sources -----------------------------------------------------------------------------------
def test_a_sweep_opens_in_one_tensorboard_with_one_run_per_trial(sim, owner):
    hpw = sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "HyperparamWorkflow",
         "metadata": {"name": "sweep", "namespace": NAMESPACE}, "spec": make_spec()}
    )  # fmt: skip
    for batch in (1, 0):
        name = f"sweep-{batch}"
        trials = [
            node(
                name,
                f"trial({i}:lr:0.{batch}{i})",
                s3_artifact(f"{name}/{i}"),
                started=f"2025-01-01T10:0{i}:00Z",
            )
            for i in range(2)
        ]
        labels = {LABEL_SWEEP_UID: hpw["metadata"]["uid"], LABEL_BATCH: str(batch)}
        store_workflow(sim, workflow(name, *trials, labels=labels))
    store_workflow(sim, mnist_workflow("unrelated"))

    response = spawn(owner, "sweep", kind="HyperparamWorkflow")
    assert response.status_code == 201, response.json()
    assert response.json()["name"] == "sweep-hpw"
    assert [run["name"] for run in response.json()["logdirs"]] == [
        "trial(0:lr:0.00)",
        "trial(1:lr:0.01)",
        "trial(0:lr:0.10)",
        "trial(1:lr:0.11)",
    ]


def test_a_sweep_without_workflows_yet_is_422(sim, owner):
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "HyperparamWorkflow",
         "metadata": {"name": "fresh-sweep", "namespace": NAMESPACE}, "spec": make_spec()}
    )  # fmt: skip
    response = spawn(owner, "fresh-sweep", kind="HyperparamWorkflow")
    assert response.status_code == 422
    assert response.json()["detail"].startswith("HyperparamWorkflow fresh-sweep has started no Workflows yet")


def test_a_training_job_opens_at_the_log_directory_the_administrator_configured(sim, owner, settings):
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}
    metadata = {"name": "mnist-tf", "namespace": NAMESPACE}
    spec = {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": template}}}
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "TFJob", "metadata": metadata, "spec": spec}
    )
    unconfigured = spawn(owner, "mnist-tf", kind="TFJob")
    assert unconfigured.status_code == 422
    assert "TENSORBOARD_JOB_LOGDIR" in unconfigured.json()["detail"]

    settings.TENSORBOARD_JOB_LOGDIR = "s3://ml-logs/{namespace}/{name}"
    response = spawn(owner, "mnist-tf", kind="TFJob")
    assert response.status_code == 201
    assert response.json()["logdirs"] == [{"name": "mnist-tf", "path": "s3://ml-logs/team-a/mnist-tf"}]
    # The job writes to the store while it trains: its pod keeps syncing until the job finished.
    assert tensorboard(sim, "mnist-tf-tfjob", NAMESPACE)["spec"]["syncSeconds"] == 60
    succeeded = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    sim.store.patch(
        "tfjobs.argoml.io", "mnist-tf", {"status": succeeded}, namespace=NAMESPACE, subresource="status"
    )
    assert spawn(owner, "mnist-tf", kind="TFJob").status_code == 200
    assert "syncSeconds" not in tensorboard(sim, "mnist-tf-tfjob", NAMESPACE)["spec"]


def test_a_trainjob_opens_at_the_log_directory_the_administrator_configured(sim, owner, settings):
    metadata = {"name": "mnist-v2", "namespace": NAMESPACE}
    spec = {"runtimeRef": {"name": "torch-distributed"}}
    sim.store.create(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": metadata,
            "spec": spec,
        }
    )
    unconfigured = spawn(owner, "mnist-v2", kind="TrainJob")
    assert unconfigured.status_code == 422
    assert unconfigured.json() == {
        "detail": "TrainJob mnist-v2: training jobs record no artifacts, and no job log directory is "
        "configured (TENSORBOARD_JOB_LOGDIR, e.g. s3://ml-logs/{namespace}/{name}).",
        "code": "unusable_artifacts",
    }

    settings.TENSORBOARD_JOB_LOGDIR = "pvc://training-logs/{namespace}/{name}"
    response = spawn(owner, "mnist-v2", kind="TrainJob")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["name"], body["source_kind"], body["source_name"]) == (
        "mnist-v2-trainjob",
        "TrainJob",
        "mnist-v2",
    )
    assert body["logdirs"] == [{"name": "mnist-v2", "path": "pvc://training-logs/team-a/mnist-v2"}]
    spawned = tensorboard(sim, "mnist-v2-trainjob", NAMESPACE)
    assert spawned["metadata"]["labels"]["argoml.io/tensorboard-source-kind"] == "TrainJob"
    assert "s3" not in spawned["spec"]  # a claim needs no object-store credentials
    assert spawned["spec"]["syncSeconds"] == 60  # it trains on: the pod keeps syncing
    complete = {
        "type": "Complete", "status": "True", "reason": "AllJobsCompleted",
        "message": "jobset completed successfully", "lastTransitionTime": "2025-03-01T09:00:00Z",
    }  # fmt: skip
    sim.store.patch(
        "trainjobs.trainer.kubeflow.org", "mnist-v2", {"status": {"conditions": [complete]}},
        namespace=NAMESPACE, subresource="status",
    )  # fmt: skip
    assert spawn(owner, "mnist-v2", kind="TrainJob").status_code == 200
    assert "syncSeconds" not in tensorboard(sim, "mnist-v2-trainjob", NAMESPACE)["spec"]


def test_a_trainjobs_name_sent_as_a_tfjob_is_404_saying_to_send_trainjob(sim, owner, settings):
    settings.TENSORBOARD_JOB_LOGDIR = "s3://ml-logs/{namespace}/{name}"
    sim.store.create(
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
         "metadata": {"name": "only-v2", "namespace": NAMESPACE}, "spec": {"runtimeRef": {"name": "rt"}}}
    )  # fmt: skip
    response = spawn(owner, "only-v2", kind="TFJob")
    assert response.status_code == 404
    assert response.json()["found_kinds"] == ["TrainJob"]
    assert response.json()["detail"].endswith('There is a TrainJob of that name: send "kind": "TrainJob".')


def test_logdirs_named_directly_must_lie_under_a_path_an_administrator_allowed(sim, owner, settings):
    settings.TENSORBOARD_ALLOWED_LOGDIRS = ["pvc://shared-logs/{namespace}/"]
    body = {"namespace": NAMESPACE, "name": "shared"}
    allowed = owner.post(
        URL, {**body, "logdirs": [{"name": "a", "path": "pvc://shared-logs/team-a/run-1"}]}, format="json"
    )
    assert allowed.status_code == 201, allowed.json()
    for path in ("pvc://shared-logs/team-b/run-1", "pvc://shared-logs/team-a/../team-b", "s3://any-bucket/x"):
        refused = owner.post(URL, {**body, "logdirs": [{"name": "a", "path": path}]}, format="json")
        assert refused.status_code == 403, path
        assert refused.json()["code"] == "logdir_not_allowed"
    assert tensorboard(sim, "shared", NAMESPACE)["spec"]["logdirs"] == [
        {"name": "a", "path": "pvc://shared-logs/team-a/run-1"}
    ]


# -- permissions -------------------------------------------------------------------------------------
def test_a_user_outside_the_namespace_can_neither_spawn_nor_see(sim, owner, outsider):
    store_workflow(sim, mnist_workflow("private"))
    refused = spawn(outsider, "private")
    assert refused.status_code == 403
    assert refused.json()["detail"] == "You may not change resources in namespace 'team-a'."
    spawn(owner, "private")
    row = mirror(sim, "private")
    assert outsider.get(URL).json()["results"] == []
    assert outsider.get(f"{URL}{row.id}/").status_code == 404
    assert outsider.delete(f"{URL}{row.id}/").status_code == 404
    assert outsider.post(f"{URL}{row.id}/open/").status_code == 404
    assert tensorboard(sim, "private", NAMESPACE) is not None


def test_a_viewer_sees_and_opens_but_cannot_spawn_or_stop(sim, owner, viewer):
    store_workflow(sim, mnist_workflow("viewed"))
    assert spawn(viewer, "viewed").status_code == 403
    spawn(owner, "viewed")
    row = mirror(sim, "viewed")
    assert viewer.get(f"{URL}{row.id}/").status_code == 200
    assert viewer.post(f"{URL}{row.id}/open/").status_code == 200
    assert viewer.delete(f"{URL}{row.id}/").status_code == 403
    assert tensorboard(sim, "viewed", NAMESPACE) is not None


def test_anonymous_requests_are_refused(sim):
    assert APIClient().get(URL).status_code in (401, 403)


# -- reading, opening, stopping ----------------------------------------------------------------------
def test_list_and_detail_show_phase_url_source_and_logdirs(sim, owner, django_assert_max_num_queries):
    store_workflow(sim, mnist_workflow("listed"))
    spawn(owner, "listed")
    row = mirror(sim, "listed")
    with django_assert_max_num_queries(4):
        listed = owner.get(URL, {"source_name": "listed"}).json()["results"]
    assert [(item["name"], item["phase"], item["source_kind"], item["source_name"]) for item in listed] == [
        ("listed", "", "Workflow", "listed")
    ]
    detail = owner.get(f"{URL}{row.id}/").json()
    assert detail["logdirs"][0] == {"name": "train-small", "path": "s3://ml-artifacts/listed/small/tb"}
    assert detail["spec"]["workflowRef"] == {"kind": "Workflow", "name": "listed"}
    assert owner.get(URL, {"phase": "Sleeping"}).status_code == 400


def test_opening_records_the_access_time_the_culling_goes_by(sim, owner):
    store_workflow(sim, mnist_workflow("opened"))
    first = spawn(owner, "opened").json()
    row = mirror(sim, "opened")
    response = owner.post(f"{URL}{row.id}/open/")
    assert response.status_code == 200
    assert response.json()["url"] == first["url"]
    annotations = tensorboard(sim, "opened", NAMESPACE)["metadata"]["annotations"]
    assert annotations["argoml.io/last-access"] == response.json()["last_access"]
    assert response.json()["last_access"] >= first["last_access"]


def test_delete_stops_the_instance_in_the_cluster(sim, owner):
    store_workflow(sim, mnist_workflow("stopped"))
    spawn(owner, "stopped")
    row = mirror(sim, "stopped")
    assert owner.delete(f"{URL}{row.id}/").status_code == 202
    assert tensorboard(sim, "stopped", NAMESPACE) is None


def test_the_idle_timeout_of_a_spawned_instance_defaults_to_two_hours():
    from tensorboard.conf import conf_from_settings

    assert conf_from_settings().idle_timeout == timedelta(hours=2)
