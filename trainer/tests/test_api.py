"""/api/trainjobs/ and /api/trainingruntimes/: the mirror read within the user's namespaces (steps, the
runtime revision, progress reports); submit and delete go to the cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from kube.client import get_client
from kubesim.simulator import Simulator
from trainer.models import TrainerStatusUpdate, TrainJob
from trainer.resources import TRAIN_JOB
from trainer.tests import factories as manifests
from trainer.tests.runtime_cluster import trainer_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with trainer_cluster("team-a") as simulator:
        yield simulator


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
def teammate() -> APIClient:
    return user_with("teammate", Role.VIEWER)


@pytest.fixture
def outsider() -> APIClient:
    return user_with("outsider", None)


# -- reading ----------------------------------------------------------------------------------------
def test_the_list_shows_trainjobs_of_the_users_namespaces_in_a_fixed_number_of_queries(
    teammate, django_assert_num_queries
):
    for index in range(15):
        factories.train_job(f"job-{index}", progress_percentage=index)
    factories.train_job("elsewhere", "team-b")

    with django_assert_num_queries(2):  # the user's grants, one page of jobs
        response = teammate.get("/api/trainjobs/")

    assert response.status_code == 200
    names = [job["name"] for job in response.json()["results"]]
    assert names == [f"job-{index}" for index in reversed(range(15))]
    first = response.json()["results"][0]
    assert first["runtime_name"] == "torch-distributed"
    assert first["progress_percentage"] == 14
    assert first["steps_summary"] == "node 2 active"


def test_the_list_filters_by_phase_and_runtime_and_names_a_bad_filter(teammate):
    factories.train_job("running")
    factories.train_job("done", phase="Complete", runtime_name="deepspeed-distributed")

    by_phase = teammate.get("/api/trainjobs/?phase=Complete").json()["results"]
    by_runtime = teammate.get("/api/trainjobs/?runtime_name=torch-distributed").json()["results"]
    bad = teammate.get("/api/trainjobs/?phase=Sleeping")

    assert [job["name"] for job in by_phase] == ["done"]
    assert [job["name"] for job in by_runtime] == ["running"]
    assert bad.status_code == 400
    assert "phase" in bad.json()


def test_a_trainjob_shows_its_steps_revision_metrics_and_history(teammate):
    runtime = factories.runtime(generation=3)
    job = factories.train_job(
        runtime_generation=3,
        status={"trainerStatus": {"progressPercentage": 40, "metrics": [{"name": "loss", "value": "0.25"}]}},
    )
    factories.train_job_pod(job, "node", 1)
    factories.train_job_pod(job, "node", 0, node="gpu-node-7")
    factories.train_job_pod(job, "dataset-initializer", 0, phase="Succeeded")

    body = teammate.get(f"/api/trainjobs/{job.pk}/").json()

    assert [(s["step"], s["completion_index"]) for s in body["steps"]] == [
        ("dataset-initializer", 0),
        ("node", 0),
        ("node", 1),
    ]
    assert body["steps"][1]["node"] == "gpu-node-7"
    assert body["revision"]["runtime_id"] == runtime.pk
    assert body["revision"]["generation"] == 3
    assert body["metrics"] == [{"name": "loss", "value": "0.25"}]
    assert body["history"] == []


def test_the_revision_is_null_until_the_controller_recorded_the_generation(teammate):
    factories.runtime(generation=2)
    job = factories.train_job(status={"trainerStatus": None})

    body = teammate.get(f"/api/trainjobs/{job.pk}/").json()

    assert body["revision"] is None
    assert body["metrics"] == []


def test_the_progress_reports_come_oldest_first_joined_by_uid(teammate, django_assert_num_queries):
    job = factories.train_job()
    factories.status_updates(job, 5, accuracy="0.9")
    other = factories.train_job("other")
    factories.status_updates(other, 2)

    with django_assert_num_queries(3):  # grants, the job, one page of reports
        response = teammate.get(f"/api/trainjobs/{job.pk}/updates/")

    reports = response.json()["results"]
    assert [r["progress_percentage"] for r in reports] == [20, 40, 60, 80, 100]
    assert reports[0]["metrics"] == [
        {"name": "loss", "value": "1.0000"},
        {"name": "accuracy", "value": "0.9"},
    ]


def test_the_reports_are_the_trainjob_rows_not_any_row_naming_its_uid(teammate):
    """A report filed (before issue 27) in another namespace under this job's uid, as a pod whose owner
    reference claimed that uid could file it, is not this job's history."""
    job = factories.train_job()
    factories.status_updates(job, 2)
    elsewhere = factories.train_job("tj", "team-b")
    TrainerStatusUpdate.objects.bulk_create(
        [
            TrainerStatusUpdate(
                namespace=elsewhere.namespace,
                trainjob_name=elsewhere.name,
                trainjob_uid=job.uid,
                pod="forger",
                progress_percentage=99,
                reported_at=factories.T0,
            )
        ]
    )

    reports = teammate.get(f"/api/trainjobs/{job.pk}/updates/").json()["results"]

    assert [r["pod"] for r in reports] == ["llama-node-0-0", "llama-node-0-0"]


def test_other_tenants_trainjobs_and_reports_are_not_found(outsider):
    job = factories.train_job()
    factories.status_updates(job, 1)

    assert outsider.get("/api/trainjobs/").json()["results"] == []
    assert outsider.get(f"/api/trainjobs/{job.pk}/").status_code == 404
    assert outsider.get(f"/api/trainjobs/{job.pk}/updates/").status_code == 404


def test_anonymous_callers_get_nothing():
    job = factories.train_job()
    client = APIClient()

    assert client.get("/api/trainjobs/").status_code in (401, 403)
    assert client.get(f"/api/trainjobs/{job.pk}/").status_code in (401, 403)
    assert client.get("/api/trainingruntimes/").status_code in (401, 403)


def test_runtimes_list_cluster_ones_and_the_readable_namespaces_with_their_trainjob_counts(
    teammate, django_assert_num_queries
):
    factories.runtime("torch-distributed")
    factories.runtime("team-a-runtime", "team-a")
    factories.runtime("team-b-runtime", "team-b")
    factories.train_job("a1")
    factories.train_job("a2")
    factories.train_job("gone", deleted_at=factories.T0)
    factories.train_job("b1", "team-b")  # another tenant's: not counted for this user
    factories.train_job("local", runtime_name="team-a-runtime", runtime_kind="TrainingRuntime")

    with django_assert_num_queries(2):  # grants, one page of runtimes with their counts
        runtimes = teammate.get("/api/trainingruntimes/").json()["results"]

    assert {(r["name"], r["train_jobs"]) for r in runtimes} == {
        ("torch-distributed", 2),
        ("team-a-runtime", 1),
    }


def test_whether_a_shared_runtime_is_in_use_is_told_from_the_namespaces_the_caller_reads(teammate):
    """`in_use` follows the finalizer, which any namespace's TrainJob sets: a tenant would watch others
    start and stop jobs on a shared ClusterTrainingRuntime. What a tenant sees of it comes from the
    namespaces they may read; superusers see the cluster's."""
    factories.runtime("torch-distributed", in_use=True)  # a team-b job holds the finalizer
    factories.train_job("theirs", "team-b")
    superuser = APIClient()
    superuser.force_authenticate(User.objects.create_superuser("root"))

    def in_use(client: APIClient) -> tuple[bool, int]:
        [runtime] = client.get("/api/trainingruntimes/").json()["results"]
        return runtime["in_use"], runtime["train_jobs"]

    assert in_use(teammate) == (False, 0)
    assert in_use(superuser) == (True, 1)
    factories.train_job("mine")
    assert in_use(teammate) == (True, 1)


# -- writing ----------------------------------------------------------------------------------------
def test_an_editor_submits_a_trainjob_to_the_cluster(sim, owner):
    manifest = manifests.train_job("llama", "team-a", runtime_name="torch-distributed")
    del manifest["metadata"]["uid"]

    response = owner.post("/api/trainjobs/", manifest, format="json")

    assert response.status_code == 202, response.json()
    stored = get_client().get(TRAIN_JOB, "llama", "team-a")
    assert stored["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert not TrainJob.objects.filter(name="llama").exists()  # the mirror writes rows, not the API


def test_a_bad_trainjob_is_refused_naming_every_field(sim, owner):
    manifest = {
        "kind": "TrainJob",
        "metadata": {"name": "Bad_Name", "namespace": "team-a"},
        "spec": {"runtimeRef": {"kind": "Pod"}},
    }

    response = owner.post("/api/trainjobs/", manifest, format="json")

    assert response.status_code == 400
    assert {"spec.runtimeRef.name", "spec.runtimeRef.kind", "metadata.name"} <= set(response.json())


def test_a_trainjob_past_the_node_bound_is_refused_by_field_and_never_reaches_the_cluster(sim, owner):
    manifest = manifests.train_job("huge", "team-a", runtime_name="torch-distributed")
    manifest["spec"]["trainer"] = {"numNodes": 100_000, "numProcPerNode": 100_000}

    response = owner.post("/api/trainjobs/", manifest, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "spec.trainer.numNodes": ["must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000"],
        "spec.trainer.numProcPerNode": [
            "must be at most 1024 processes (MAX_PROCESSES_PER_NODE), not 100000"
        ],
    }
    assert get_client().list(TRAIN_JOB, "team-a", field_selector="metadata.name=huge")["items"] == []


def test_a_viewer_may_not_submit_or_delete(sim, teammate):
    job = factories.train_job()
    manifest = manifests.train_job("llama-2", "team-a")

    assert teammate.post("/api/trainjobs/", manifest, format="json").status_code == 403
    assert teammate.delete(f"/api/trainjobs/{job.pk}/").status_code == 403


def test_delete_removes_the_trainjob_from_the_cluster_with_its_uid_as_precondition(sim, owner):
    manifest = manifests.train_job("doomed", "team-a")
    del manifest["metadata"]["uid"]
    created = get_client().create(TRAIN_JOB, manifest, "team-a")
    job = factories.train_job("doomed")
    TrainJob.objects.filter(pk=job.pk).update(uid=created["metadata"]["uid"])
    stale = factories.train_job("doomed", deleted_at=factories.T0)  # an older job of the same name

    assert owner.delete(f"/api/trainjobs/{stale.pk}/").status_code == 202
    get_client().get(TRAIN_JOB, "doomed", "team-a")  # still there: the deleted row's uid is another's
    assert owner.delete(f"/api/trainjobs/{job.pk}/").status_code == 202
    assert get_client().list(TRAIN_JOB, "team-a", field_selector="metadata.name=doomed")["items"] == []
