"""/api/jobs/: reads the mirror within the user's namespaces; create and delete go to the cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test.utils import override_settings
from rest_framework.test import APIClient

import limits
from access import podsecurity
from access.models import NamespaceGrant, NamespacePodSecurity, Role
from jobs.models import Replica, TrainingJob
from jobs.tests.cluster import get_job, install_crds, job_manifest
from jobs.tests.fakes import peak_memory
from jobs.tests.test_models import CREATED, RUNNING, pod, tfjob
from kube.client import reset_client
from kube.controller.mirror import apply_event
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator() as simulator:
        install_crds(simulator)
        simulator.store.ensure_namespace("team-a")
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            yield simulator
        reset_client()


def user_with(name: str, role: Role | None) -> APIClient:
    user = User.objects.create_user(name)
    if role is not None:
        NamespaceGrant.objects.create(user=user, namespace="team-a", role=role)
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
    return user_with("outsider", None)


def mirrored_job(
    name: str = "mnist", uid: str = "job-uid", namespace: str = "team-a", kind: str = "TFJob"
) -> int:
    obj = tfjob("1", CREATED, RUNNING, name=name, uid=uid, kind=kind)
    obj["metadata"]["namespace"] = namespace
    apply_event(TrainingJob, "ADDED", obj)
    return TrainingJob.objects.get(uid=uid).pk


# -- reading ----------------------------------------------------------------------------------------
def test_the_list_shows_jobs_of_the_users_namespaces_in_a_fixed_number_of_queries(
    viewer, django_assert_num_queries
):
    for index in range(20):
        mirrored_job(f"job-{index}", f"uid-{index}")
    mirrored_job("elsewhere", "uid-x", namespace="team-b")

    with django_assert_num_queries(2):  # the user's grants, one page of jobs
        response = viewer.get("/api/jobs/")

    assert response.status_code == 200
    names = [job["name"] for job in response.json()["results"]]
    assert names == [f"job-{index}" for index in reversed(range(20))]
    first = response.json()["results"][0]
    assert first["replica_summary"] == "PS 2/2 · Worker 3/4 running"
    assert first["phase"] == "Running"
    assert "spec" not in first


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kind=MXJob", ["b"]),
        ("name=a", ["a"]),
        ("phase=Running", ["b", "a"]),
        ("phase=Failed", []),
        ("namespace=team-a&kind=TFJob", ["a"]),
    ],
)
def test_the_list_filters_by_namespace_kind_phase_and_name(viewer, query, expected):
    mirrored_job("a", "uid-a")
    mirrored_job("b", "uid-b", kind="MXJob")
    response = viewer.get(f"/api/jobs/?{query}")
    assert [job["name"] for job in response.json()["results"]] == expected


def test_the_list_filters_by_group_and_each_job_says_its_own(viewer):
    mirrored_job("ours", "uid-ours")
    obj = tfjob("1", CREATED, name="theirs", uid="uid-theirs")
    apply_event(TrainingJob, "ADDED", {**obj, "apiVersion": "kubeflow.org/v1"})
    response = viewer.get("/api/jobs/?api_group=kubeflow.org")
    assert [(job["name"], job["api_group"]) for job in response.json()["results"]] == [
        ("theirs", "kubeflow.org")
    ]
    assert viewer.get("/api/jobs/?api_group=example.com").status_code == 400


def test_a_bad_filter_value_is_a_400_naming_it(viewer):
    response = viewer.get("/api/jobs/?kind=Notebook&phase=Sleeping")
    assert response.status_code == 400
    assert set(response.json()) == {"kind", "phase"}


def test_a_job_reads_with_its_replicas_and_history(viewer):
    pk = mirrored_job()
    apply_event(Replica, "ADDED", pod("mnist-worker-1", "3", uid="w1", phase="Running"))
    apply_event(Replica, "ADDED", pod("mnist-worker-0", "4", uid="w0", phase="Running"))

    job = viewer.get(f"/api/jobs/{pk}/").json()

    assert [(r["pod_name"], r["phase"]) for r in job["replicas"]] == [
        ("mnist-worker-0", "Running"),
        ("mnist-worker-1", "Running"),
    ]
    assert [h["phase"] for h in job["history"]] == ["Running"]
    assert job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 4


def test_jobs_outside_the_users_namespaces_are_not_found(outsider):
    pk = mirrored_job()
    assert outsider.get(f"/api/jobs/{pk}/").status_code == 404
    assert outsider.get("/api/jobs/").json()["results"] == []


def test_the_status_cannot_be_written_through_the_api(owner):
    pk = mirrored_job()
    assert owner.patch(f"/api/jobs/{pk}/", {"phase": "Succeeded"}, format="json").status_code == 405


# -- creating and deleting in the cluster ------------------------------------------------------------
def test_creating_submits_the_job_to_the_cluster_and_leaves_the_table_to_the_mirror(owner, sim):
    manifest = job_manifest("PyTorchJob", {"Master": 1, "Worker": 2}, name="ddp", namespace="team-a")

    response = owner.post("/api/jobs/", manifest, format="json")

    assert response.status_code == 202
    assert response.json()["metadata"]["uid"]
    assert get_job(sim, "PyTorchJob", "team-a", "ddp") is not None
    assert not TrainingJob.objects.exists()


def test_an_invalid_job_is_a_400_naming_each_field(owner, sim):
    manifest = job_manifest("TFJob", {"Worker": 1}, name="Bad_Name", namespace="team-a")
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = -1

    response = owner.post("/api/jobs/", manifest, format="json")

    assert response.status_code == 400
    assert set(response.json()) == {"metadata.name", "spec.tfReplicaSpecs.Worker.replicas"}
    assert get_job(sim, "TFJob", "team-a", "bad_name") is None


def test_a_job_one_replica_past_the_bound_is_a_400_naming_the_field_and_one_at_it_is_created(owner, sim):
    over = job_manifest("TFJob", {"Chief": 1, "Worker": 4}, name="over", namespace="team-a")
    at = job_manifest("TFJob", {"Chief": 1, "Worker": 3}, name="at", namespace="team-a")

    with limits.overridden(replicas_per_job=4):
        refused = owner.post("/api/jobs/", over, format="json")
        accepted = owner.post("/api/jobs/", at, format="json")

    assert refused.status_code == 400
    assert refused.json() == {
        "spec.tfReplicaSpecs.Worker.replicas": [
            "must be at most 4 replicas (MAX_REPLICAS_PER_JOB), not 5 (Chief 1 + Worker 4)"
        ]
    }
    assert get_job(sim, "TFJob", "team-a", "over") is None
    assert accepted.status_code == 202


def test_the_default_bound_refuses_a_hundred_thousand_workers_cheaply(owner, sim):
    huge = job_manifest("TFJob", {"Worker": 100_000}, name="huge", namespace="team-a")
    with peak_memory() as peak:
        response = owner.post("/api/jobs/", huge, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["spec.tfReplicaSpecs.Worker.replicas"]
    assert peak.bytes < 4 * 2**20, f"{peak.mib:.1f} MiB"


def test_a_taken_name_is_a_400_on_the_name(owner, sim):
    manifest = job_manifest("TFJob", {"Worker": 1}, name="twice", namespace="team-a")
    assert owner.post("/api/jobs/", manifest, format="json").status_code == 202
    response = owner.post("/api/jobs/", manifest, format="json")
    assert response.status_code == 400
    assert "metadata.name" in response.json()


def test_creating_needs_a_namespace_the_user_may_change(owner, viewer):
    manifest = job_manifest("TFJob", {"Worker": 1}, name="x", namespace="team-a")
    assert viewer.post("/api/jobs/", manifest, format="json").status_code == 403
    manifest["metadata"].pop("namespace")
    response = owner.post("/api/jobs/", manifest, format="json")
    assert response.status_code == 400
    assert response.json() == {"metadata.namespace": ["is required"]}


def test_deleting_deletes_the_job_in_the_cluster(owner, viewer, sim):
    created = sim.store.create(job_manifest("TFJob", {"Worker": 1}, name="gone", namespace="team-a"))
    apply_event(TrainingJob, "ADDED", created)
    pk = TrainingJob.objects.get(name="gone").pk

    assert viewer.delete(f"/api/jobs/{pk}/").status_code == 403
    assert owner.delete(f"/api/jobs/{pk}/").status_code == 202
    assert get_job(sim, "TFJob", "team-a", "gone") is None
    assert TrainingJob.objects.get(pk=pk).deleted_at is None  # until the mirror sees the deletion


# -- pod security --------------------------------------------------------------------------------------
def worker_pod(manifest: dict) -> dict:
    return manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]


def test_a_privileged_job_is_a_400_naming_each_field_and_is_not_created(owner, sim):
    manifest = job_manifest("TFJob", {"Worker": 1}, name="escape", namespace="team-a")
    pod_spec = worker_pod(manifest)
    pod_spec["hostPID"] = True
    pod_spec["containers"][0]["securityContext"] = {"privileged": True}
    pod_spec["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]

    response = owner.post("/api/jobs/", manifest, format="json")

    assert response.status_code == 400
    where = "spec.tfReplicaSpecs.Worker.template.spec"
    assert response.json() == {
        f"{where}.hostPID": ["host namespaces (hostPID=true)"],
        f"{where}.containers[0].securityContext.privileged": [
            'privileged (container "tensorflow" must not set securityContext.privileged=true)'
        ],
        f"{where}.volumes[0].hostPath": ['hostPath volumes (volume "root")'],
    }
    assert get_job(sim, "TFJob", "team-a", "escape") is None


def test_a_service_account_runs_only_when_the_namespace_allows_it(owner, sim):
    manifest = job_manifest("TFJob", {"Worker": 1}, name="with-sa", namespace="team-a")
    worker_pod(manifest)["serviceAccountName"] = "trainer"

    refused = owner.post("/api/jobs/", manifest, format="json")
    assert refused.status_code == 400
    assert refused.json() == {
        "spec.tfReplicaSpecs.Worker.template.spec.serviceAccountName": [
            'service account "trainer" is not allowed in namespace "team-a" (allowed: default)'
        ]
    }

    NamespacePodSecurity.objects.create(
        namespace="team-a", level="baseline", service_accounts="trainer, reader"
    )
    podsecurity.reset_process_cache()  # what a committed change does through the version in Redis
    assert owner.post("/api/jobs/", manifest, format="json").status_code == 202


def test_the_namespace_level_decides_what_passes(owner, sim):
    bare = job_manifest("TFJob", {"Worker": 1}, name="bare", namespace="team-a")
    NamespacePodSecurity.objects.create(namespace="team-a", level="restricted")

    response = owner.post("/api/jobs/", bare, format="json")

    assert response.status_code == 400
    assert (
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].securityContext.runAsNonRoot"
        in response.json()
    )
    NamespacePodSecurity.objects.filter(namespace="team-a").update(level="privileged")
    podsecurity.reset_process_cache()
    host = job_manifest("TFJob", {"Worker": 1}, name="host", namespace="team-a")
    worker_pod(host)["hostNetwork"] = True
    assert owner.post("/api/jobs/", host, format="json").status_code == 202


@override_settings(POD_SECURITY_DEFAULT_LEVEL="restricted")
def test_a_namespace_without_a_policy_gets_the_default_level(owner, sim):
    response = owner.post(
        "/api/jobs/", job_manifest("TFJob", {"Worker": 1}, name="d", namespace="team-a"), format="json"
    )
    assert response.status_code == 400
    assert any(field.endswith("allowPrivilegeEscalation") for field in response.json())
