"""The runtimes' mirror: one row per runtime of either kind, one revision per generation seen (with the
spec then, the diff from the one before and its author), whatever duplicate or stale events arrive; and
which revision a TrainJob ran."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kube.controller.mirror import Action
from trainer import constants as c
from trainer.models import RuntimeRevision, TrainingRuntime
from trainer.runtimes import revisions
from trainer.runtimes.mirror import mirror_runtime
from trainer.tests.factories import train_job

pytestmark = pytest.mark.django_db


def runtime_object(
    generation: int,
    num_nodes: int,
    *,
    version: str | None = None,
    name: str = "torch-distributed",
    kind: str = c.CLUSTER_TRAINING_RUNTIME,
    namespace: str | None = None,
    uid: str = "uid-rt",
    annotations: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "uid": uid,
        "resourceVersion": version or str(generation * 10),
        "generation": generation,
        "creationTimestamp": created,
        "labels": {c.LABEL_FRAMEWORK: "torch"},
        "annotations": annotations or {},
        "finalizers": finalizers or [],
    }
    if namespace:
        metadata["namespace"] = namespace
    spec = {"mlPolicy": {"numNodes": num_nodes, "torch": {}}, "template": {"spec": {"replicatedJobs": []}}}
    return {"apiVersion": c.API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def generations() -> list[int]:
    return list(RuntimeRevision.objects.order_by("generation").values_list("generation", flat=True))


def test_a_runtime_seen_first_is_a_row_and_its_first_revision_without_a_diff():
    assert mirror_runtime("ADDED", runtime_object(1, 1)) == Action.INSERT

    row = TrainingRuntime.objects.get()
    assert (row.kind, row.namespace, row.name, row.framework, row.generation) == (
        c.CLUSTER_TRAINING_RUNTIME, "", "torch-distributed", "torch", 1
    )  # fmt: skip
    assert row.scope == "cluster"
    revision = row.revisions.get()
    assert (revision.generation, revision.diff, revision.author) == (1, "", "the cluster")
    assert revision.spec["mlPolicy"]["numNodes"] == 1


def test_each_new_generation_appends_a_revision_with_its_diff_from_the_one_before():
    mirror_runtime("ADDED", runtime_object(1, 1))
    mirror_runtime("MODIFIED", runtime_object(2, 4))

    newest = RuntimeRevision.objects.get(generation=2)
    assert "-  numNodes: 1" in newest.diff
    assert "+  numNodes: 4" in newest.diff
    assert newest.diff.startswith("--- generation 1\n+++ generation 2\n")
    assert generations() == [1, 2]


def test_a_metadata_only_change_is_no_revision():
    mirror_runtime("ADDED", runtime_object(1, 1))
    finalized = runtime_object(1, 1, version="11", finalizers=["trainer.kubeflow.org/resource-in-use"])

    assert mirror_runtime("MODIFIED", finalized) == Action.UPDATE

    assert generations() == [1]
    assert TrainingRuntime.objects.get().in_use is True


def test_duplicate_and_stale_events_add_nothing():
    mirror_runtime("ADDED", runtime_object(1, 1))
    mirror_runtime("MODIFIED", runtime_object(3, 8))

    assert mirror_runtime("MODIFIED", runtime_object(3, 8)) == Action.DUPLICATE
    assert mirror_runtime("MODIFIED", runtime_object(2, 4)) == Action.STALE  # arrived late

    assert generations() == [1, 3]
    assert RuntimeRevision.objects.get(generation=3).diff.count("numNodes") == 2  # 1 → 8, the missed 2 unseen


def test_a_revision_already_recorded_for_a_generation_is_not_written_again():
    mirror_runtime("ADDED", runtime_object(1, 1))
    relisted = runtime_object(1, 1, version="17")  # same generation, another version (metadata changed)
    mirror_runtime("MODIFIED", relisted)
    assert generations() == [1]


def test_an_admin_edit_is_credited_to_the_admin_user_and_a_later_kubectl_edit_to_the_cluster():
    mirror_runtime("ADDED", runtime_object(1, 1))
    signed = revisions.attribution("alice", current_generation=1)
    mirror_runtime("MODIFIED", runtime_object(2, 2, annotations=signed))
    mirror_runtime("MODIFIED", runtime_object(3, 3, annotations=signed))  # kubectl edit keeps annotations

    authors = dict(RuntimeRevision.objects.values_list("generation", "changed_by"))
    assert authors == {1: "", 2: "alice", 3: ""}


def test_a_deleted_runtime_keeps_its_revisions():
    mirror_runtime("ADDED", runtime_object(1, 1))
    assert mirror_runtime("DELETED", runtime_object(1, 1)) == Action.DELETE

    row = TrainingRuntime.objects.get()
    assert row.deleted_at is not None
    assert generations() == [1]
    assert mirror_runtime("MODIFIED", runtime_object(2, 2)) == Action.STALE  # nothing after a deletion
    assert generations() == [1]


def test_the_delete_event_of_a_newer_generation_records_that_generation():
    mirror_runtime("ADDED", runtime_object(1, 1))
    terminating = runtime_object(2, 1, finalizers=[])
    terminating["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"  # the API server bumps generation

    mirror_runtime("DELETED", terminating)

    assert generations() == [1, 2]
    assert RuntimeRevision.objects.get(generation=2).diff == ""  # a bump without a spec change
    assert TrainingRuntime.objects.get().deleting_since is not None


def test_both_kinds_share_the_table_and_a_namespaced_runtime_may_share_a_cluster_runtimes_name():
    mirror_runtime("ADDED", runtime_object(1, 1))
    mirror_runtime("ADDED", runtime_object(1, 2, kind=c.TRAINING_RUNTIME, namespace="team-a", uid="uid-ns"))

    namespaced = TrainingRuntime.objects.get(kind=c.TRAINING_RUNTIME)
    assert (namespaced.namespace, namespaced.scope) == ("team-a", "team-a")
    assert RuntimeRevision.objects.filter(runtime=namespaced).count() == 1


# -- which revision a TrainJob ran ------------------------------------------------------------------------


def job_started_at(generation: int | str | None, **kwargs: Any) -> dict[str, Any]:
    job = train_job(**kwargs)
    job["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    if generation is not None:
        job["metadata"]["annotations"] = {"argoml.io/runtime-generation": str(generation)}
    return job


def test_a_trainjob_ran_the_revision_its_annotation_names():
    mirror_runtime("ADDED", runtime_object(1, 1))
    mirror_runtime("MODIFIED", runtime_object(2, 4))

    ran = RuntimeRevision.objects.ran_by(job_started_at(1, runtime_name="torch-distributed"))

    assert ran is not None
    assert (ran.generation, ran.spec["mlPolicy"]["numNodes"]) == (1, 1)


def test_a_namespaced_runtime_is_looked_up_in_the_jobs_namespace():
    mirror_runtime("ADDED", runtime_object(1, 1))
    mirror_runtime("ADDED", runtime_object(1, 2, kind=c.TRAINING_RUNTIME, namespace="team-a", uid="uid-ns"))
    job = job_started_at(
        1, namespace="team-a", runtime_name="torch-distributed", runtime_kind=c.TRAINING_RUNTIME
    )

    ran = RuntimeRevision.objects.ran_by(job)

    assert ran is not None
    assert ran.runtime.namespace == "team-a"
    other = job_started_at(
        1, namespace="team-b", runtime_name="torch-distributed", runtime_kind=c.TRAINING_RUNTIME
    )
    assert RuntimeRevision.objects.ran_by(other) is None


def test_a_runtime_recreated_after_the_job_started_is_not_the_one_it_ran():
    mirror_runtime("ADDED", runtime_object(1, 1, uid="old"))
    mirror_runtime("DELETED", runtime_object(1, 1, uid="old"))
    mirror_runtime("ADDED", runtime_object(1, 9, uid="new", created="2026-03-01T00:00:00Z"))

    ran = RuntimeRevision.objects.ran_by(job_started_at(1, runtime_name="torch-distributed"))

    assert ran is not None
    assert ran.runtime.uid == "old"


@pytest.mark.parametrize("generation", [None, "x", 5])
def test_without_a_known_generation_the_revision_is_unknown(generation):
    mirror_runtime("ADDED", runtime_object(1, 1))
    assert (
        RuntimeRevision.objects.ran_by(job_started_at(generation, runtime_name="torch-distributed")) is None
    )


def test_a_job_whose_runtime_ref_names_nothing_of_ours_ran_no_revision():
    mirror_runtime("ADDED", runtime_object(1, 1))
    job = job_started_at(1, runtime_name="torch-distributed")
    job["spec"]["runtimeRef"]["apiGroup"] = "example.com"
    assert RuntimeRevision.objects.ran_by(copy.deepcopy(job)) is None


def test_a_trainjob_row_finds_its_revision_by_its_columns():
    mirror_runtime("ADDED", runtime_object(1, 1, kind=c.TRAINING_RUNTIME, namespace="team-a", uid="ns"))
    mirror_runtime("MODIFIED", runtime_object(2, 5, kind=c.TRAINING_RUNTIME, namespace="team-a", uid="ns"))

    ran = RuntimeRevision.objects.revision_of(c.TRAINING_RUNTIME, "team-a", "torch-distributed", 2)

    assert ran is not None
    assert ran.spec["mlPolicy"]["numNodes"] == 5
    assert RuntimeRevision.objects.revision_of(c.TRAINING_RUNTIME, "team-b", "torch-distributed", 2) is None
    assert (
        RuntimeRevision.objects.revision_of(c.CLUSTER_TRAINING_RUNTIME, "team-a", "torch-distributed", 2)
        is None
    )
