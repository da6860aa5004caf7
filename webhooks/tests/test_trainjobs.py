"""Kubeflow Trainer's kinds at admission: a runtime or TrainJob that `trainer.operator.spec` refuses, a
TrainJob whose runtime does not exist or does not resolve, and an UPDATE of an immutable field are denied with
every field path. Decisions with a stand-in runtime reader; the view over HTTP with kubesim as the cluster."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest
from django.test import Client

from argoml_site.crds import TRAINER_RESOURCES
from fields import FieldError
from kube.client import get_client, reset_client
from kube.crds.install import install, wait_established
from kube.resources import NAMESPACE
from kubesim.testing import running_simulator
from trainer.runtimes.crd import CLUSTER_TRAINING_RUNTIME, TRAINING_RUNTIME
from trainer.tests import factories as f
from webhooks import configurations, failures, trainjobs
from webhooks.review import parse_review
from webhooks.tests.conftest import admission_review

TRAINER_GVK = {
    kind: {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": kind}
    for kind in ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
}


@pytest.fixture(autouse=True)
def trainer_kinds(monkeypatch):
    """conftest's reviews know our kinds; these tests add Trainer's."""
    from webhooks.tests import conftest

    monkeypatch.setattr(conftest, "GVK", {**conftest.GVK, **TRAINER_GVK})


def request(obj: dict[str, Any], **options: Any):
    return parse_review(admission_review(obj, namespace=obj["metadata"].get("namespace", ""), **options))


def reader(*runtimes: dict[str, Any]):
    """A stand-in for the cluster: the runtimes by (kind, namespace, name)."""
    stored = {(r["kind"], r["metadata"].get("namespace") or "", r["metadata"]["name"]): r for r in runtimes}

    def read(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return stored.get((kind, namespace if kind == "TrainingRuntime" else "", name))

    return read


TORCH = f.torch_runtime()


def denied_causes(verdict) -> list[FieldError]:
    assert not verdict.allowed
    assert verdict.code == 422
    return list(verdict.causes)


# -- TrainJobs -------------------------------------------------------------------------------------------


def test_a_trainjob_on_an_existing_runtime_is_allowed():
    job = f.train_job(trainer={"numNodes": 2, "env": [{"name": "EPOCHS", "value": "3"}]})
    assert trainjobs.review(request(job), reader(TORCH)).allowed


def test_a_trainjob_naming_a_runtime_that_does_not_exist_is_denied_naming_spec_runtimeref_name():
    verdict = trainjobs.review(request(f.train_job(runtime_name="torch-distributed")), reader(TORCH))
    assert denied_causes(verdict) == [
        FieldError(
            "spec.runtimeRef.name",
            "ClusterTrainingRuntime 'torch-distributed' does not exist: "
            "create the runtime before the TrainJob",
        )
    ]
    assert verdict.message.startswith('TrainJob "test-job" is invalid: spec.runtimeRef.name: ')


def test_a_namespaced_runtime_is_looked_up_in_the_trainjobs_own_namespace():
    theirs = f.runtime(
        f.replicated_job("node", f.container(), ancestor="trainer"),
        ml_policy={"numNodes": 1, "torch": {}},
        kind="TrainingRuntime",
        namespace="team-b",
    )
    job = f.train_job(namespace="team-a", runtime_kind="TrainingRuntime")
    (cause,) = denied_causes(trainjobs.review(request(job), reader(theirs)))
    assert cause.path == "spec.runtimeRef.name"
    assert "does not exist in namespace 'team-a'" in cause.message
    mine = f.train_job(namespace="team-b", runtime_kind="TrainingRuntime")
    assert trainjobs.review(request(mine), reader(theirs)).allowed


def test_every_field_the_parser_refuses_is_listed_at_once():
    job = f.train_job(managedBy="someone/else", activeDeadlineSeconds=0)
    job["spec"]["runtimeRef"]["kind"] = "JobSet"
    fields = [cause.path for cause in denied_causes(trainjobs.review(request(job), reader(TORCH)))]
    assert set(fields) == {"spec.runtimeRef.kind", "spec.managedBy", "spec.activeDeadlineSeconds"}


def test_a_trainjob_that_does_not_resolve_against_its_runtime_is_denied_by_field():
    job = f.train_job(trainer={"env": [{"name": "PET_NNODES", "value": "9"}, {"name": "PET_MASTER_PORT"}]})
    assert denied_causes(trainjobs.review(request(job), reader(TORCH))) == [
        FieldError("spec.trainer.env", "must not set the reserved variables PET_MASTER_PORT, PET_NNODES")
    ]


def test_a_runtime_that_exists_but_is_invalid_is_named_on_the_runtime_ref():
    broken = copy.deepcopy(TORCH)
    broken["spec"]["mlPolicy"]["numNodes"] = "many"
    (cause,) = denied_causes(trainjobs.review(request(f.train_job()), reader(broken)))
    assert cause.path == "spec.runtimeRef.name"
    assert "ClusterTrainingRuntime 'test-runtime' is invalid: spec.mlPolicy.numNodes" in cause.message


def test_a_runtime_name_that_cannot_be_a_path_segment_is_refused_before_any_request():
    def path_only(kind: str, namespace: str, name: str) -> None:
        trainjobs.RUNTIME_TYPES[kind].path(namespace, name)  # what the client builds before sending
        raise AssertionError("a request would have been sent")

    job = f.train_job(runtime_name="../secrets")
    (cause,) = denied_causes(trainjobs.review(request(job), path_only))
    assert cause.path == "spec.runtimeRef.name"


def test_an_update_of_an_immutable_field_is_denied_and_a_suspend_is_allowed():
    old = f.train_job(trainer={"numNodes": 2})
    changed = copy.deepcopy(old)
    changed["spec"]["trainer"]["numNodes"] = 4
    changed["spec"]["runtimeRef"]["name"] = "other"
    verdict = trainjobs.review(request(changed, operation="UPDATE", old=old), reader(TORCH))
    assert {cause.path for cause in denied_causes(verdict)} == {"spec.trainer", "spec.runtimeRef"}
    suspended = copy.deepcopy(old)
    suspended["spec"]["suspend"] = True
    assert trainjobs.review(request(suspended, operation="UPDATE", old=old), reader(TORCH)).allowed


def test_status_and_label_updates_and_deletes_are_not_checked_even_when_the_runtime_is_gone():
    job = f.train_job()
    labelled = copy.deepcopy(job)
    labelled["metadata"]["labels"] = {"team": "vision"}
    nothing = reader()
    assert trainjobs.review(request(labelled, operation="UPDATE", old=job), nothing).allowed
    assert trainjobs.review(request(job, operation="UPDATE", old=job, subResource="status"), nothing).allowed
    assert trainjobs.review(
        parse_review(admission_review(None, operation="DELETE", old=job)), nothing
    ).allowed


def test_a_failing_read_denies_without_saying_why_as_trainers_kinds_fail_closed():
    def broken(kind: str, namespace: str, name: str) -> None:
        raise RuntimeError("connection refused to 10.0.0.1")

    review = request(f.train_job())
    verdict = trainjobs.review(review, broken)
    assert not verdict.allowed
    assert verdict.code == 500
    assert "10.0.0.1" not in verdict.message
    assert failures.fails_closed(review)


def test_a_trainjob_past_the_node_and_process_bounds_is_denied_naming_each_field_and_bound():
    job = f.train_job(trainer={"numNodes": 100_000, "numProcPerNode": 100_000})
    assert denied_causes(trainjobs.review(request(job), reader(TORCH))) == [
        FieldError("spec.trainer.numNodes", "must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000"),
        FieldError(
            "spec.trainer.numProcPerNode",
            "must be at most 1024 processes (MAX_PROCESSES_PER_NODE), not 100000",
        ),
    ]


def test_a_trainjob_whose_pods_with_its_runtimes_come_past_the_bound_is_denied():
    runtime = copy.deepcopy(TORCH)
    runtime["spec"]["template"]["spec"]["replicatedJobs"].insert(
        0, f.replicated_job("dataset-initializer", ancestor="dataset-initializer")
    )
    (cause,) = denied_causes(
        trainjobs.review(request(f.train_job(trainer={"numNodes": 1000})), reader(runtime))
    )
    assert cause.path == "spec.trainer.numNodes"
    assert "must be at most 1000 pods (MAX_REPLICAS_PER_JOB), not 1001" in cause.message


# -- runtimes --------------------------------------------------------------------------------------------


def test_a_valid_runtime_is_allowed_and_an_invalid_one_denied_with_every_field():
    assert trainjobs.review(request(TORCH), reader()).allowed
    bad = f.runtime(
        f.replicated_job("node", f.container()),
        ml_policy={"numNodes": 0, "torch": {}, "mpi": {}},
    )
    fields = {cause.path for cause in denied_causes(trainjobs.review(request(bad), reader()))}
    assert fields
    assert all(field.startswith("spec.") for field in fields)


def test_a_runtime_past_the_node_bound_is_denied_and_so_is_a_trainjob_naming_it():
    huge = f.torch_runtime(num_nodes=100_000)
    assert denied_causes(trainjobs.review(request(huge), reader())) == [
        FieldError("spec.mlPolicy.numNodes", "must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000")
    ]
    (cause,) = denied_causes(trainjobs.review(request(f.train_job()), reader(huge)))
    assert cause.path == "spec.runtimeRef.name"
    assert "spec.mlPolicy.numNodes: must be at most 1000 nodes" in cause.message


def test_the_ready_made_runtimes_are_all_allowed():
    from trainer.runtimes.catalog import ready_made_runtimes

    for runtime in ready_made_runtimes():
        assert trainjobs.review(request(runtime), reader()).allowed, runtime["metadata"]["name"]


# -- the webhook configuration -----------------------------------------------------------------------------


def test_trainers_kinds_are_sent_to_us_only_when_they_are_ours():
    def rules(**options: Any) -> list[Mapping[str, Any]]:
        (validate, _argo) = configurations.validating_webhooks(kubeflow=False, **options)
        return [rule for rule in validate.rules if rule["apiGroups"] == ["trainer.kubeflow.org"]]

    assert rules(trainer=False) == []
    assert [(rule["resources"], rule["scope"]) for rule in rules(trainer=True)] == [
        (["trainjobs", "trainingruntimes"], "Namespaced"),
        (["clustertrainingruntimes"], "Cluster"),
    ]
    assert all(rule["operations"] == ["CREATE", "UPDATE"] for rule in rules(trainer=True))


# -- over HTTP, reading the runtime from kubesim -----------------------------------------------------------


@pytest.fixture
def cluster(settings):
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        client = get_client()
        install(client, TRAINER_RESOURCES)
        assert wait_established(client, [r.name for r in TRAINER_RESOURCES], timeout=10) == []
        yield simulator
    reset_client()


@pytest.mark.urls("argoml_site.webhook_urls")
def test_the_validate_endpoint_reads_the_runtime_from_the_cluster(cluster):
    client = get_client()
    client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    client.create(CLUSTER_TRAINING_RUNTIME.resource_type, copy.deepcopy(TORCH))
    team = f.runtime(f.replicated_job("node", ancestor="trainer"), name="team", kind="TrainingRuntime")
    client.create(TRAINING_RUNTIME.resource_type, team, "ml")

    def answer(job: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(admission_review(job, namespace="ml"))
        response = Client().post("/webhooks/validate", body, content_type="application/json")
        assert response.status_code == 200
        return response.json()["response"]

    assert answer(f.train_job(namespace="ml"))["allowed"] is True
    assert answer(f.train_job(namespace="ml", runtime_name="team", runtime_kind="TrainingRuntime"))["allowed"]
    missing = answer(f.train_job(namespace="ml", runtime_name="gone"))
    assert missing["allowed"] is False
    assert missing["status"]["details"]["causes"][0]["field"] == "spec.runtimeRef.name"
    huge = answer(f.train_job(namespace="ml", trainer={"numNodes": 100_000}))
    assert huge["allowed"] is False
    assert huge["status"]["details"]["causes"] == [
        {
            "type": "FieldValueInvalid",
            "field": "spec.trainer.numNodes",
            "message": "must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000",
        }
    ]
