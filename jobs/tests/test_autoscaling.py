"""An elastic PyTorchJob's HorizontalPodAutoscaler as plain data: when there is one, what it says, and the
one write that converges what the cluster has (Kubeflow's hpa.go, plus removal when it has nothing to do)."""

import copy

import pytest

from jobs import autoscaling
from jobs.frameworks import PyTorch, TensorFlow
from jobs.tests.fakes import make_job

CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}
UID = "job-uid-elastic"


def elastic_job(workers=2, *, metrics=(CPU,), **policy):
    policy = {"minReplicas": 1, "maxReplicas": 4, **policy}
    if metrics is not None:
        policy["metrics"] = [copy.deepcopy(m) for m in metrics]
    return make_job("PyTorchJob", {"Worker": workers}, name="elastic", namespace="ns", elasticPolicy=policy)


def desired(job):
    return autoscaling.desired_hpa(job, PyTorch())


def change(job, current):
    return autoscaling.change(job, PyTorch(), current)


def with_fields(job, part, **fields):
    job[part] |= fields
    return job


def finished(job):
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    return job


class TestDesiredHpa:
    def test_is_kubeflows_hpa_named_and_owned_by_the_job_targeting_its_scale_subresource(self):
        assert desired(elastic_job()) == {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {
                "name": "elastic",
                "namespace": "ns",
                "labels": {"argoml.io/job-name": "elastic"},
                "ownerReferences": [
                    {
                        "apiVersion": "argoml.io/v1alpha1",
                        "kind": "PyTorchJob",
                        "name": "elastic",
                        "uid": UID,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "argoml.io/v1alpha1",
                    "kind": "PyTorchJob",
                    "name": "elastic",
                },
                "minReplicas": 1,
                "maxReplicas": 4,
                "metrics": [CPU],
            },
        }

    def test_copies_the_metrics_rather_than_sharing_them(self):
        job = elastic_job()
        hpa = desired(job)
        hpa["spec"]["metrics"][0]["resource"]["name"] = "memory"
        assert job["spec"]["elasticPolicy"]["metrics"] == [CPU]

    @pytest.mark.parametrize(
        ("policy", "bounds"),
        [
            ({"minReplicas": 2, "maxReplicas": None}, (2, 2)),
            ({"minReplicas": None, "maxReplicas": 2}, (2, 2)),
            ({"minReplicas": None, "maxReplicas": None}, (2, 2)),  # both from the Worker replicas
        ],
    )
    def test_a_missing_bound_is_defaulted_as_kubeflow_does(self, policy, bounds):
        job = elastic_job(workers=2)
        for key, value in policy.items():
            if value is None:
                del job["spec"]["elasticPolicy"][key]
            else:
                job["spec"]["elasticPolicy"][key] = value
        spec = desired(job)["spec"]
        assert (spec["minReplicas"], spec["maxReplicas"]) == bounds

    @pytest.mark.parametrize(
        ("why", "job"),
        [
            ("no elastic policy", make_job("PyTorchJob", {"Worker": 2})),
            ("a policy without metrics", elastic_job(metrics=None)),
            ("an empty metrics list", elastic_job(metrics=())),
            ("suspended", with_fields(elastic_job(), "spec", runPolicy={"suspend": True})),
            ("finished", finished(elastic_job())),
            ("invalid: replicas above maxReplicas", elastic_job(workers=5)),
            ("being deleted", with_fields(elastic_job(), "metadata", deletionTimestamp="2026-01-01T00:00Z")),
        ],
    )
    def test_there_is_none_for(self, why, job):
        assert desired(job) is None, why

    def test_other_kinds_never_have_one(self):
        job = make_job("TFJob", {"Worker": 2})
        assert autoscaling.desired_hpa(job, TensorFlow()) is None
        assert autoscaling.may_have_hpa(job, TensorFlow()) is False


class TestMayHaveHpa:
    def test_an_elastic_job_is_looked_up(self):
        assert autoscaling.may_have_hpa(elastic_job(metrics=None), PyTorch())

    def test_a_static_job_whose_status_saw_its_generation_is_not(self):
        job = make_job("PyTorchJob", {"Worker": 2})
        job["status"] = {"observedGeneration": 1}
        assert not autoscaling.may_have_hpa(job, PyTorch())

    def test_a_static_job_whose_spec_changed_since_is_looked_up_its_policy_may_just_have_gone(self):
        job = make_job("PyTorchJob", {"Worker": 2})
        job["metadata"]["generation"] = 2
        job["status"] = {"observedGeneration": 1}
        assert autoscaling.may_have_hpa(job, PyTorch())


class TestChange:
    def test_creates_a_missing_hpa(self):
        job = elastic_job()
        assert change(job, None) == autoscaling.Change("create", "elastic", desired(job))

    def test_leaves_an_hpa_that_says_what_it_should(self):
        job = elastic_job()
        current = {**desired(job), "status": {"currentReplicas": 2}}
        current["metadata"] = {**current["metadata"], "uid": "hpa-uid", "resourceVersion": "7"}
        assert change(job, current) is None

    def test_updates_an_hpa_whose_bounds_or_metrics_changed_keeping_its_resource_version(self):
        job = elastic_job()
        current = desired(job)
        current["metadata"] |= {"uid": "hpa-uid", "resourceVersion": "7"}
        job["spec"]["elasticPolicy"]["maxReplicas"] = 6
        decided = change(job, current)
        assert decided.verb == "update"
        assert decided.manifest["metadata"]["resourceVersion"] == "7"
        assert decided.manifest["spec"]["maxReplicas"] == 6

    @pytest.mark.parametrize("edit", ["drop metrics", "suspend", "finish"])
    def test_deletes_its_hpa_by_uid_when_there_is_nothing_to_scale(self, edit):
        job = elastic_job()
        current = desired(job)
        current["metadata"]["uid"] = "hpa-uid"
        if edit == "drop metrics":
            del job["spec"]["elasticPolicy"]["metrics"]
        elif edit == "suspend":
            job["spec"]["runPolicy"] = {"suspend": True}
        else:
            finished(job)
        assert change(job, current) == autoscaling.Change("delete", "elastic", uid="hpa-uid")

    def test_nothing_to_do_without_metrics_and_without_an_hpa(self):
        assert change(elastic_job(metrics=None), None) is None

    def test_never_touches_an_hpa_of_that_name_it_does_not_control(self):
        job = elastic_job()
        someone_elses = desired(job)
        someone_elses["metadata"]["ownerReferences"][0]["uid"] = "another-uid"
        assert change(job, someone_elses) == autoscaling.Change("foreign", "elastic")
        del job["spec"]["elasticPolicy"]["metrics"]
        assert change(job, someone_elses) is None
