"""Gang scheduling, pure: the PodGroup a job needs, its minResources, the pods' marks, and the Plan's
PodGroup step (jobs/gang.py, jobs/plan.py); cases after Kubeflow's job_test.go and util_test.go."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from jobs import conf, gang
from jobs import spec as jobspec
from jobs.frameworks import framework_for
from jobs.plan import PodGroupChange
from jobs.tests.fakes import T0, created, make_job, plan_job, tf_job
from jobs.validation import validate

VOLCANO = gang.GangScheduler("volcano", "volcano")
PLUGINS = gang.GangScheduler("scheduler-plugins", "scheduler-plugins-scheduler")
TF = framework_for("TFJob")


def with_resources(job: dict[str, Any], replica_type: str, *containers: dict[str, Any]) -> dict[str, Any]:
    """`job` whose `replica_type` pods have one container per `resources` given."""
    job = copy.deepcopy(job)
    spec = job["spec"]["tfReplicaSpecs"][replica_type]["template"]["spec"]
    spec["containers"] = [
        {"name": "tensorflow" if i == 0 else f"side-{i}", "image": "example/train:1", "resources": resources}
        for i, resources in enumerate(containers)
    ]
    return job


def parsed(job: dict[str, Any]) -> jobspec.JobSpec:
    return jobspec.parse(job, TF)


# -- settings ----------------------------------------------------------------------------------------
class TestSettings:
    def test_no_gang_scheduler_by_default(self):
        with override_settings(JOBS_GANG_SCHEDULER="none"):
            assert conf.gang_scheduler() is None

    @pytest.mark.parametrize(
        ("kind", "name", "expected"),
        [
            ("volcano", "", VOLCANO),
            ("scheduler-plugins", "", PLUGINS),
            (
                "scheduler-plugins",
                "my-coscheduler",
                gang.GangScheduler("scheduler-plugins", "my-coscheduler"),
            ),
            ("volcano", "volcano-2", gang.GangScheduler("volcano", "volcano-2")),
        ],
    )
    def test_the_scheduler_and_the_name_pods_get(self, kind, name, expected):
        with override_settings(JOBS_GANG_SCHEDULER=kind, JOBS_GANG_SCHEDULER_NAME=name):
            assert conf.gang_scheduler() == expected

    def test_an_unknown_scheduler_is_refused_by_name(self):
        with override_settings(JOBS_GANG_SCHEDULER="kueue"), pytest.raises(ImproperlyConfigured) as error:
            conf.gang_scheduler()
        assert "JOBS_GANG_SCHEDULER='kueue' must be one of: none, volcano, scheduler-plugins" in str(
            error.value
        )

    def test_a_gang_scheduler_is_one_of_the_two_with_a_name(self):
        with pytest.raises(ValueError, match="kind: must be one of volcano, scheduler-plugins"):
            gang.GangScheduler("yunikorn", "yunikorn")
        with pytest.raises(ValueError, match="scheduler_name: must not be empty"):
            gang.GangScheduler("volcano", "")


# -- the policy and minMember ------------------------------------------------------------------------
class TestPolicy:
    def test_every_field_is_read(self):
        job = tf_job(
            run_policy={
                "schedulingPolicy": {
                    "minAvailable": 3,
                    "queue": "gpu",
                    "minResources": {"cpu": "8"},
                    "priorityClass": "high",
                    "scheduleTimeoutSeconds": 60,
                }
            }
        )
        assert parsed(job).run_policy.scheduling_policy == jobspec.SchedulingPolicy(
            3, "gpu", {"cpu": "8"}, "high", 60
        )

    def test_malformed_fields_read_as_unset(self):
        job = tf_job(
            run_policy={
                "schedulingPolicy": {"minAvailable": "3", "queue": 1, "minResources": [], "priorityClass": 2}
            }
        )
        assert parsed(job).run_policy.scheduling_policy == jobspec.SchedulingPolicy()
        assert (
            parsed(tf_job(run_policy={"schedulingPolicy": "gang"})).run_policy.scheduling_policy
            == jobspec.SchedulingPolicy()
        )

    def test_min_member_is_every_replica_unless_min_available_says(self):
        assert gang.min_member(parsed(tf_job(chief=1, ps=2, workers=4))) == 7
        assert gang.min_member(parsed(tf_job(run_policy={"schedulingPolicy": {"minAvailable": 5}}))) == 5

    def test_min_member_follows_the_replica_count_of_now(self):
        job = tf_job(chief=1, ps=0, workers=4)
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 9
        assert gang.min_member(parsed(job)) == 10

    def test_a_replica_without_a_count_counts_one(self):
        job = tf_job(chief=1, ps=0, workers=2)
        del job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"]
        assert gang.min_member(parsed(job)) == 2


# -- minResources ------------------------------------------------------------------------------------
class TestMinResources:
    def test_requests_of_every_pod_add_up(self):
        job = tf_job(chief=0, ps=1, workers=2)
        job = with_resources(job, "Worker", {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}})
        job = with_resources(job, "PS", {"requests": {"cpu": "500m", "memory": "1Gi"}})
        assert gang.min_resources(parsed(job)) == {"cpu": "4500m", "memory": "9Gi", "nvidia.com/gpu": "2"}

    def test_limits_count_for_a_container_without_requests(self):
        job = with_resources(
            tf_job(chief=0, ps=0, workers=3),
            "Worker",
            {"limits": {"cpu": "1", "memory": "512Mi"}},
            {"requests": {"cpu": "250m"}, "limits": {"cpu": "4", "memory": "8Gi"}},
        )
        # the sidecar has requests, so only they count (its memory limit does not), as in Kubeflow
        assert gang.min_resources(parsed(job)) == {"cpu": "3750m", "memory": "1536Mi"}

    def test_empty_requests_still_hide_the_limits(self):
        job = with_resources(
            tf_job(chief=0, ps=0, workers=2), "Worker", {"requests": {}, "limits": {"cpu": "1"}}
        )
        assert gang.min_resources(parsed(job)) == {}

    def test_pods_without_resources_need_nothing(self):
        assert gang.min_resources(parsed(tf_job())) == {}

    def test_only_the_first_min_member_pods_count_in_the_framework_order(self):
        job = tf_job(chief=1, ps=2, workers=4, run_policy={"schedulingPolicy": {"minAvailable": 4}})
        job = with_resources(job, "Chief", {"requests": {"cpu": "1"}})
        job = with_resources(job, "PS", {"requests": {"cpu": "10"}})
        job = with_resources(job, "Worker", {"requests": {"cpu": "100"}})
        assert gang.min_resources(parsed(job)) == {"cpu": "121"}  # chief, both PS, one worker

    def test_higher_priority_classes_count_first(self):
        job = tf_job(chief=1, ps=2, workers=4, run_policy={"schedulingPolicy": {"minAvailable": 4}})
        job = with_resources(job, "Chief", {"requests": {"cpu": "1"}})
        job = with_resources(job, "PS", {"requests": {"cpu": "10"}})
        job = with_resources(job, "Worker", {"requests": {"cpu": "100"}})
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "high"
        job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["priorityClassName"] = "unknown"
        assert gang.min_resources(parsed(job), {"high": 1000}) == {"cpu": "400"}  # the four workers
        assert gang.min_resources(parsed(job), {"high": -5}) == {"cpu": "121"}  # below 0: last
        assert gang.priority_class_names(parsed(job)) == {"high", "unknown"}

    def test_priority_classes_are_looked_up_only_when_they_can_matter(self):
        job = tf_job(chief=1, ps=0, workers=2)
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "high"
        assert gang.priority_class_names(parsed(job)) == set()  # every pod counts anyway
        job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 1}}
        assert gang.priority_class_names(parsed(job)) == {"high"}
        job["spec"]["runPolicy"]["schedulingPolicy"]["minResources"] = {"cpu": "1"}
        assert gang.priority_class_names(parsed(job)) == set()  # given: nothing to compute

    def test_integers_and_malformed_quantities(self):
        job = with_resources(
            tf_job(chief=0, ps=0, workers=2), "Worker", {"requests": {"cpu": 2, "memory": "lots", "x": True}}
        )
        assert gang.min_resources(parsed(job)) == {"cpu": "4"}

    @pytest.mark.parametrize(
        ("value", "binary", "text"),
        [
            (Decimal(0), False, "0"),
            (Decimal(4), False, "4"),
            (Decimal("1.5"), False, "1500m"),
            (Decimal(1500), False, "1500"),
            (Decimal(2000), False, "2k"),
            (Decimal("3e9"), False, "3G"),
            (Decimal("0.0000000001"), False, "1n"),
            (Decimal(2**30), True, "1Gi"),
            (Decimal(1536 * 2**20), True, "1536Mi"),
            (Decimal(1536), True, "1536"),
            (Decimal(512), True, "512"),
            (Decimal("0.5"), True, "500m"),
        ],
    )
    def test_sums_are_written_as_kubernetes_writes_quantities(self, value, binary, text):
        assert gang.format_quantity(value, binary=binary) == text

    @pytest.mark.parametrize(
        ("value", "problem"),
        [
            ("16Gi", None),
            (4, None),
            ("500m", None),
            ("1e3", None),
            ("four", "'four' is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)"),
            ("2Qi", "'2Qi' has an unknown suffix 'Qi'"),
            (-1, "must not be negative, not -1"),
            (True, "must be a quantity such as 4, 500m or 16Gi, not True"),
            (1.5, "must be a quantity such as 4, 500m or 16Gi, not 1.5"),
        ],
    )
    def test_quantity_problems(self, value, problem):
        found = gang.quantity_problem(value)
        assert found == problem if problem is None else found is not None and found.startswith(problem)


# -- the PodGroup ------------------------------------------------------------------------------------
OWNER = {
    "apiVersion": "argoml.io/v1alpha1",
    "kind": "TFJob",
    "name": "train",
    "uid": "job-uid-train",
    "controller": True,
    "blockOwnerDeletion": True,
}


class TestPodGroup:
    def test_volcano(self):
        job = with_resources(tf_job(chief=1, ps=0, workers=2), "Worker", {"requests": {"nvidia.com/gpu": 1}})
        job["metadata"]["annotations"] = {
            "team": "vision",
            gang.LAST_APPLIED_ANNOTATION: "{}",
        }
        job["spec"]["runPolicy"] = {
            "schedulingPolicy": {"priorityClass": "high", "scheduleTimeoutSeconds": 9}
        }
        assert gang.desired_pod_group(parsed(job), VOLCANO) == {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": "train",
                "namespace": "ml",
                "labels": {"argoml.io/job-name": "train"},
                "ownerReferences": [OWNER],
                "annotations": {"team": "vision"},
            },
            "spec": {
                "minMember": 3,
                "queue": "default",
                "priorityClassName": "high",
                "minResources": {"nvidia.com/gpu": "2"},
            },
        }

    def test_scheduler_plugins(self):
        job = tf_job(
            chief=1,
            ps=0,
            workers=2,
            run_policy={
                "schedulingPolicy": {"queue": "gpu", "priorityClass": "high", "scheduleTimeoutSeconds": 90}
            },
        )
        assert gang.desired_pod_group(parsed(job), PLUGINS) == {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {
                "name": "train",
                "namespace": "ml",
                "labels": {"argoml.io/job-name": "train"},
                "ownerReferences": [OWNER],
            },
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 90},  # nothing requested: no minResources
        }

    def test_given_min_resources_pass_through_as_written(self):
        job = tf_job(
            run_policy={"schedulingPolicy": {"minAvailable": 2, "minResources": {"cpu": 4, "memory": "8G"}}}
        )
        for scheduler in (VOLCANO, PLUGINS):
            spec = gang.desired_pod_group(parsed(job), scheduler)["spec"]
            assert spec["minMember"] == 2
            assert spec["minResources"] == {"cpu": 4, "memory": "8G"}

    def test_volcano_keeps_the_queue_the_pod_group_has(self):
        job = parsed(tf_job(run_policy={"schedulingPolicy": {"queue": "gpu"}}))
        assert gang.desired_pod_group(job, VOLCANO)["spec"]["queue"] == "gpu"
        observed = {"spec": {"queue": "research"}}
        assert gang.desired_pod_group(job, VOLCANO, observed)["spec"]["queue"] == "research"

    def test_an_update_replaces_the_spec_and_keeps_the_rest(self):
        job = tf_job(chief=1, ps=0, workers=2)
        observed = {
            **gang.desired_pod_group(parsed(job), PLUGINS),
            "status": {"phase": "Running"},
        }
        observed["metadata"] = {**observed["metadata"], "uid": "pg-1", "resourceVersion": "7"}
        assert not gang.needs_update(observed, gang.desired_pod_group(parsed(job), PLUGINS))
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 5
        desired = gang.desired_pod_group(parsed(job), PLUGINS)
        assert gang.needs_update(observed, desired)
        assert gang.updated(observed, desired) == {**observed, "spec": {"minMember": 6}}

    @pytest.mark.parametrize(
        ("scheduler", "pod_group", "delayed"),
        [
            (VOLCANO, None, True),
            (VOLCANO, {"status": {}}, True),
            (VOLCANO, {"status": {"phase": "Pending"}}, True),
            (VOLCANO, {"status": {"phase": "Inqueue"}}, False),
            (VOLCANO, {"status": {"phase": "Running"}}, False),
            (VOLCANO, {"status": {"phase": "Unknown"}}, False),
            (PLUGINS, None, False),
            (PLUGINS, {"status": {"phase": "Pending"}}, False),
        ],
    )
    def test_only_volcano_holds_pods_back_until_it_admits_the_group(self, scheduler, pod_group, delayed):
        assert gang.delays_pods(scheduler, pod_group) is delayed


class TestPodMarks:
    def test_volcano_gets_its_scheduler_and_annotations(self):
        pod = {"metadata": {"name": "train-worker-0", "annotations": {"a": "b"}}, "spec": {}}
        gang.decorate_pod(pod, VOLCANO, "train", "Worker")
        assert pod == {
            "metadata": {
                "name": "train-worker-0",
                "annotations": {
                    "a": "b",
                    "scheduling.k8s.io/group-name": "train",
                    "volcano.sh/task-spec": "worker",
                },
            },
            "spec": {"schedulerName": "volcano"},
        }

    def test_scheduler_plugins_gets_its_scheduler_and_label(self):
        pod = {"metadata": {"name": "train-ps-0", "labels": {"x": "y"}}, "spec": {"schedulerName": ""}}
        gang.decorate_pod(pod, PLUGINS, "train", "PS")
        assert pod == {
            "metadata": {
                "name": "train-ps-0",
                "labels": {"x": "y", "scheduling.x-k8s.io/pod-group": "train"},
            },
            "spec": {"schedulerName": "scheduler-plugins-scheduler"},
        }

    def test_a_scheduler_named_by_the_template_is_kept(self):
        pod = {"metadata": {}, "spec": {"schedulerName": "my-scheduler"}}
        gang.decorate_pod(pod, VOLCANO, "train", "Worker")
        assert pod["spec"]["schedulerName"] == "my-scheduler"
        job = tf_job()
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "my-scheduler"
        job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["schedulerName"] = "volcano"
        assert gang.other_schedulers(parsed(job), VOLCANO) == ["my-scheduler"]
        assert gang.other_schedulers(parsed(tf_job()), VOLCANO) == []


# -- the Plan's PodGroup step ------------------------------------------------------------------------
def pods_of(decided) -> list[dict[str, Any]]:
    return [m for m in decided.create if m["kind"] == "Pod"]


def running_status() -> dict[str, Any]:
    return {"conditions": [{"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "m"}]}


class TestPlan:
    def test_without_a_gang_scheduler_there_is_no_pod_group_and_pods_keep_the_default_scheduler(self):
        decided = plan_job(tf_job(), [], [], T0)
        assert decided.pod_group is None
        assert all("schedulerName" not in pod["spec"] for pod in pods_of(decided))

    def test_scheduler_plugins_gets_its_pod_group_and_marked_pods_in_the_same_run(self):
        job = tf_job(chief=1, ps=1, workers=2)
        decided = plan_job(job, [], [], T0, scheduler=PLUGINS)
        assert decided.pod_group == PodGroupChange(
            "create", PLUGINS.resource, gang.desired_pod_group(parsed(job), PLUGINS)
        )
        assert decided.pod_group.manifest["spec"]["minMember"] == 4
        assert len(pods_of(decided)) == 4
        for pod in pods_of(decided):
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "train"

    def test_volcano_creates_nothing_until_it_admits_the_pod_group(self):
        job = tf_job(chief=1, ps=1, workers=2)
        decided = plan_job(job, [], [], T0, scheduler=VOLCANO)
        assert decided.pod_group is not None
        assert decided.pod_group.verb == "create"
        assert decided.create == ()

        pod_group = created(decided.pod_group.manifest)
        job["status"] = running_status()
        assert plan_job(job, [], [], T0, scheduler=VOLCANO, pod_group=pod_group).create == ()
        pod_group["status"] = {"phase": "Inqueue"}
        admitted = plan_job(job, [], [], T0, scheduler=VOLCANO, pod_group=pod_group)
        assert admitted.pod_group is None  # in step already
        assert {m["kind"] for m in admitted.create} == {"Pod", "Service"}
        tasks = {
            p["metadata"]["name"]: p["metadata"]["annotations"]["volcano.sh/task-spec"]
            for p in pods_of(admitted)
        }
        assert tasks == {
            "train-chief-0": "chief",
            "train-ps-0": "ps",
            "train-worker-0": "worker",
            "train-worker-1": "worker",
        }

    def test_scaling_updates_the_pod_group(self):
        job = tf_job(chief=1, ps=0, workers=2)
        job["status"] = running_status()
        pod_group = created(plan_job(job, [], [], T0, scheduler=PLUGINS).pod_group.manifest)
        pod_group["metadata"]["ownerReferences"][0]["uid"] = job["metadata"]["uid"]
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 6
        decided = plan_job(job, [], [], T0, scheduler=PLUGINS, pod_group=pod_group)
        assert decided.pod_group is not None
        assert decided.pod_group.verb == "replace"
        assert decided.pod_group.manifest["spec"] == {"minMember": 7}
        assert decided.pod_group.manifest["metadata"] == pod_group["metadata"]

    def test_a_pod_group_the_job_does_not_control_is_used_but_never_changed(self):
        job = tf_job(chief=1, ps=0, workers=2)
        job["status"] = running_status()
        foreign = {
            "metadata": {"name": "train", "uid": "pg-x"},
            "spec": {"minMember": 1},
            "status": {"phase": "Running"},
        }
        decided = plan_job(job, [], [], T0, scheduler=VOLCANO, pod_group=foreign)
        assert decided.pod_group is None
        assert len(pods_of(decided)) == 3
        job["spec"]["runPolicy"] = {"suspend": True}
        assert plan_job(job, [], [], T0, scheduler=VOLCANO, pod_group=foreign).pod_group is None

    @pytest.mark.parametrize("how", ["finished", "suspended"])
    def test_a_finished_or_suspended_job_deletes_its_pod_group(self, how):
        job = tf_job(chief=1, ps=0, workers=1)
        pod_group = created(plan_job(job, [], [], T0, scheduler=PLUGINS).pod_group.manifest)
        if how == "finished":
            job["status"] = {
                "conditions": [
                    {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "m"}
                ],
                "completionTime": "2024-05-01T12:00:00Z",
            }
        else:
            job["spec"]["runPolicy"] = {"suspend": True}
        decided = plan_job(job, [], [], T0, scheduler=PLUGINS, pod_group=pod_group)
        assert decided.pod_group == PodGroupChange("delete", PLUGINS.resource, pod_group)
        assert plan_job(job, [], [], T0, scheduler=PLUGINS).pod_group is None  # gone: nothing to do

    def test_another_scheduler_in_a_template_is_kept_with_a_warning(self):
        job = tf_job(chief=1, ps=0, workers=1)
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "my-scheduler"
        decided = plan_job(job, [], [], T0, scheduler=PLUGINS)
        schedulers = {p["metadata"]["name"]: p["spec"]["schedulerName"] for p in pods_of(decided)}
        assert schedulers == {
            "train-chief-0": "scheduler-plugins-scheduler",
            "train-worker-0": "my-scheduler",
        }
        warnings = [e for e in decided.events if e.reason == "SetPodTemplateSchedulerName"]
        assert [w.type for w in warnings] == ["Warning"]
        assert "my-scheduler" in warnings[0].message

    def test_an_invalid_policy_fails_the_job_and_makes_no_pod_group(self):
        job = tf_job(chief=1, ps=0, workers=1, run_policy={"schedulingPolicy": {"minAvailable": 5}})
        decided = plan_job(job, [], [], T0, scheduler=VOLCANO)
        assert decided.pod_group is None
        assert decided.create == ()
        assert (
            "minAvailable: is 5, more than the job's 2 replicas"
            in decided.status["conditions"][-1]["message"]
        )


# -- validation, for every kind ----------------------------------------------------------------------
JOBS = {
    "TFJob": {"Chief": 1, "Worker": 2},
    "MXJob": {"Scheduler": 1, "Server": 1, "Worker": 1},
    "PyTorchJob": {"Master": 1, "Worker": 2},
    "XGBoostJob": {"Master": 1, "Worker": 2},
    "JAXJob": {"Worker": 3},
    "PaddleJob": {"Master": 1, "Worker": 2},
}


@pytest.mark.parametrize("kind", sorted(JOBS))
class TestValidation:
    def messages(self, kind: str, policy: dict[str, Any]) -> list[str]:
        job = make_job(kind, JOBS[kind], run_policy={"schedulingPolicy": policy})
        return [str(error) for error in validate(job)]

    def test_a_full_policy_is_valid(self, kind):
        policy = {
            "minAvailable": 3,
            "queue": "gpu-a100",
            "minResources": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 3},
            "priorityClass": "high.priority",
            "scheduleTimeoutSeconds": 0,
        }
        assert self.messages(kind, policy) == []

    @pytest.mark.parametrize(
        ("policy", "message"),
        [
            (
                {"minAvailable": 4},
                "minAvailable: is 4, more than the job's 3 replicas: the gang could never start",
            ),
            ({"minAvailable": 0}, "minAvailable: must be at least 1, not 0"),
            ({"scheduleTimeoutSeconds": -1}, "scheduleTimeoutSeconds: must be at least 0, not -1"),
            (
                {"queue": "GPU_queue"},
                "queue: 'GPU_queue' is not a valid name: a lowercase RFC 1123 subdomain",
            ),
            (
                {"priorityClass": "High"},
                "priorityClass: 'High' is not a valid name: a lowercase RFC 1123 subdomain",
            ),
            ({"minResources": {"cpu": "lots"}}, "minResources.cpu: 'lots' is not a Kubernetes quantity"),
            ({"minResources": {"memory": -1}}, "minResources.memory: must not be negative, not -1"),
        ],
    )
    def test_each_bad_value_names_its_field(self, kind, policy, message):
        found = self.messages(kind, policy)
        assert len(found) == 1
        assert found[0].startswith(f"spec.runPolicy.schedulingPolicy.{message}")
