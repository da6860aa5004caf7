"""JobSet's volume claim policies as the planner applies them (pkg/controllers/volume_claim_policy.go):
the claims `<template>-<trainjob>` and the volumes of the pods that mount them."""

from __future__ import annotations

import pytest

from fields import SpecError
from trainer import constants as c
from trainer.operator import plan, resolution, spec
from trainer.tests import factories as f


def planned(runtime_body, **job) -> plan.Plan:
    job_body = f.train_job(name="tune", namespace="ml", runtime_name=runtime_body["metadata"]["name"], **job)
    return plan.plan(resolution.resolve(spec.parse_train_job(job_body), spec.parse_runtime(runtime_body)))


def test_each_claim_template_becomes_a_claim_owned_by_the_trainjob() -> None:
    result = planned(f.torchtune_runtime())
    (claim,) = result.claims
    assert claim["metadata"]["name"] == "initializer-tune"
    assert claim["metadata"]["namespace"] == "ml"
    assert claim["metadata"]["labels"] == {"app": "torchtune", c.LABEL_JOBSET_NAME: "tune"}
    assert claim["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}


def test_a_retained_claim_has_no_owner() -> None:
    result = planned(f.torchtune_runtime(retentionPolicy={"whenDeleted": "Retain"}))
    assert "ownerReferences" not in result.claims[0]["metadata"]


def test_every_pod_that_mounts_the_claim_gets_its_volume() -> None:
    result = planned(f.torchtune_runtime())
    for pod in result.pods:
        assert pod["spec"]["volumes"] == [
            {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-tune"}}
        ], pod["metadata"]["name"]


def test_pods_that_do_not_mount_it_and_volumes_already_declared_are_left_alone() -> None:
    runtime = f.torchtune_runtime()
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    del jobs[0]["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    declared = {"name": "initializer", "emptyDir": {}}
    jobs[1]["template"]["spec"]["template"]["spec"]["volumes"] = [declared]
    result = planned(runtime)
    by_step = {pod["metadata"]["labels"][c.LABEL_REPLICATED_JOB_NAME]: pod for pod in result.pods}
    assert "volumes" not in by_step[c.DATASET_INITIALIZER]["spec"]
    assert by_step[c.MODEL_INITIALIZER]["spec"]["volumes"] == [declared]


def test_an_init_container_mount_counts() -> None:
    runtime = f.torch_runtime()
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node["initContainers"] = [f.container("fetch", volumeMounts=[{"name": "cache", "mountPath": "/c"}])]
    runtime["spec"]["template"]["spec"]["volumeClaimPolicies"] = [
        {"templates": [{"metadata": {"name": "cache"}}]}
    ]
    (pod,) = planned(runtime).pods
    assert pod["spec"]["volumes"] == [{"name": "cache", "persistentVolumeClaim": {"claimName": "cache-tune"}}]


def test_without_policies_nothing_changes() -> None:
    result = planned(f.torch_runtime())
    assert result.claims == ()
    assert "volumes" not in result.pods[0]["spec"]


@pytest.mark.parametrize(
    ("policies", "field"),
    [
        ([{"templates": []}], "spec.template.spec.volumeClaimPolicies[0].templates"),
        (
            [{"templates": [{"metadata": {}}]}],
            "spec.template.spec.volumeClaimPolicies[0].templates[0].metadata.name",
        ),
        (
            [{"templates": [{"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}]}],
            "spec.template.spec.volumeClaimPolicies[0].templates[1].metadata.name",
        ),
        (
            [{"templates": [{"metadata": {"name": "a"}}], "retentionPolicy": {"whenDeleted": "Keep"}}],
            "spec.template.spec.volumeClaimPolicies[0].retentionPolicy.whenDeleted",
        ),
    ],
)
def test_a_malformed_policy_names_its_field(policies: list, field: str) -> None:
    runtime = f.torch_runtime()
    runtime["spec"]["template"]["spec"]["volumeClaimPolicies"] = policies
    with pytest.raises(SpecError) as error:
        spec.parse_runtime(runtime)
    assert field in [e.path for e in error.value.errors]
