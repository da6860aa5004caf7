"""Which runtime a TrainJob references (as Trainer reads runtimeRef) and the finalizer that follows."""

from __future__ import annotations

import pytest

from trainer import constants as c
from trainer.runtimes import inuse
from trainer.tests.factories import train_job

FINALIZER = "trainer.kubeflow.org/resource-in-use"


def test_the_finalizer_is_trainers():
    assert inuse.RESOURCE_IN_USE_FINALIZER == FINALIZER


def test_a_runtime_ref_without_kind_names_a_cluster_training_runtime():
    job = train_job(runtime_name="torch-distributed")
    assert inuse.runtime_reference(job) == (c.CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    assert inuse.cluster_training_runtime_used(job) == "torch-distributed"
    assert inuse.training_runtime_used(job) is None


def test_a_runtime_ref_of_kind_training_runtime_names_one_in_the_jobs_namespace():
    job = train_job(namespace="team-a", runtime_name="mine", runtime_kind=c.TRAINING_RUNTIME)
    assert inuse.training_runtime_used(job) == "mine"
    assert inuse.cluster_training_runtime_used(job) is None
    assert inuse.uses(job, c.TRAINING_RUNTIME, "team-a", "mine")
    assert not inuse.uses(job, c.TRAINING_RUNTIME, "team-b", "mine")
    assert not inuse.uses(job, c.CLUSTER_TRAINING_RUNTIME, "", "mine")


def test_a_cluster_runtime_is_used_from_every_namespace():
    assert inuse.uses(train_job(namespace="team-z", runtime_name="rt"), c.CLUSTER_TRAINING_RUNTIME, "", "rt")


@pytest.mark.parametrize(
    "ref",
    [
        {"name": "rt", "apiGroup": "jobset.x-k8s.io"},
        {"name": "rt", "kind": "JobSet"},
        {"name": ""},
        {"name": 7},
        {"kind": c.TRAINING_RUNTIME},
        "rt",
        None,
    ],
)
def test_a_reference_to_nothing_of_ours_is_none(ref):
    job = train_job()
    job["spec"]["runtimeRef"] = ref
    assert inuse.runtime_reference(job) is None
    assert inuse.training_runtime_used(job) is None
    assert inuse.cluster_training_runtime_used(job) is None


def test_a_job_without_a_spec_references_nothing():
    assert inuse.runtime_reference({"metadata": {"name": "x"}}) is None
    assert inuse.runtime_reference({"spec": "odd"}) is None


def test_an_explicit_api_group_of_trainer_is_accepted():
    job = train_job(runtime_name="rt")
    job["spec"]["runtimeRef"]["apiGroup"] = c.GROUP
    assert inuse.runtime_reference(job) == (c.CLUSTER_TRAINING_RUNTIME, "rt")


def test_the_finalizer_is_added_while_in_use_and_others_are_kept():
    assert inuse.finalizers_wanted([], in_use=True) == [FINALIZER]
    assert inuse.finalizers_wanted(["example.com/keep"], in_use=True) == ["example.com/keep", FINALIZER]


def test_the_finalizer_is_dropped_when_nothing_uses_the_runtime_and_others_stay():
    assert inuse.finalizers_wanted([FINALIZER], in_use=False) == []
    assert inuse.finalizers_wanted(["a/b", FINALIZER, "c/d"], in_use=False) == ["a/b", "c/d"]


def test_nothing_to_write_when_the_finalizer_already_says_the_truth():
    assert inuse.finalizers_wanted([FINALIZER], in_use=True) is None
    assert inuse.finalizers_wanted(["a/b"], in_use=False) is None
    assert inuse.finalizers_wanted([], in_use=False) is None
