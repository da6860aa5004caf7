"""trainer.operator.podgroup: the PodGroup Trainer's coscheduling and volcano plugins would build for a
TrainJob."""

from __future__ import annotations

from typing import Any

from trainer import constants as c
from trainer.operator import plan, podgroup, resolution, spec
from trainer.tests import factories as f


def built(job: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any] | None:
    resolved = resolution.resolve(spec.parse_train_job(job), spec.parse_runtime(runtime))
    return podgroup.pod_group(resolved, plan.plan(resolved))


def gang_runtime(policy: dict[str, Any], **node: Any) -> dict[str, Any]:
    return f.runtime(
        f.replicated_job(
            "dataset-initializer", f.container("dataset-initializer"), ancestor=c.DATASET_INITIALIZER
        ),
        f.replicated_job("node", f.container(**node), ancestor=c.ANCESTOR_TRAINER),
        ml_policy={"numNodes": 3, "torch": {}},
        podGroupPolicy=policy,
    )


def test_no_pod_group_policy_means_no_pod_group():
    assert built(f.train_job(), f.torch_runtime()) is None


def test_coscheduling_admits_every_pod_of_every_step_with_the_default_timeout_owned_by_the_trainjob():
    group = built(f.train_job(), gang_runtime({"coscheduling": {}}))
    assert group == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": "test-job",
            "namespace": "default",
            "ownerReferences": [
                {
                    "apiVersion": c.API_VERSION,
                    "kind": "TrainJob",
                    "name": "test-job",
                    "uid": "uid-test-job",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"minMember": 4, "minResources": {}, "scheduleTimeoutSeconds": 60},
    }


def test_coscheduling_keeps_the_runtimes_timeout():
    group = built(f.train_job(), gang_runtime({"coscheduling": {"scheduleTimeoutSeconds": 120}}))
    assert group["spec"]["scheduleTimeoutSeconds"] == 120


def test_min_resources_add_up_every_pod_with_the_trainjobs_resources_per_node_and_the_node_count():
    job = f.train_job(
        trainer={
            "numNodes": 2,
            "resourcesPerNode": {"requests": {"cpu": "1500m", "memory": "2Gi", "nvidia.com/gpu": 1}},
        }
    )
    group = built(job, gang_runtime({"coscheduling": {}}))
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "3", "memory": "4Gi", "nvidia.com/gpu": "2"}


def test_a_container_without_requests_counts_its_limits_and_a_larger_init_container_counts_instead():
    template = {
        "spec": {
            "containers": [
                {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "2"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4", "memory": "512Mi"}}}],
        }
    }
    requests = {name: str(value) for name, (value, _) in podgroup.pod_requests(template).items()}
    assert requests == {"cpu": "4", "memory": str(1024**3)}


def test_volcano_takes_the_queue_annotation_the_pods_priority_class_and_the_network_topology():
    runtime = gang_runtime(
        {"volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}},
        resources={"limits": {"cpu": 2}},
    )
    runtime["spec"]["template"]["metadata"] = {
        "annotations": {"scheduling.volcano.sh/queue-name": "research"}
    }
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    node["priorityClassName"] = "high"
    group = built(f.train_job(), runtime)
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["spec"] == {
        "minMember": 4,
        "minResources": {"cpu": "6"},
        "queue": "research",
        "priorityClassName": "high",
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }


def test_a_suspended_trainjob_still_has_its_whole_gang_counted():
    group = built(f.train_job(suspend=True), gang_runtime({"coscheduling": {}}))
    assert group["spec"]["minMember"] == 4
