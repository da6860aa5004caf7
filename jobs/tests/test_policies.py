"""Policies and the reconcile plan: restarts, backoff, deadline, TTL, clean-up, suspend and scaling."""

import copy
from datetime import timedelta

import pytest

from jobs.frameworks import TensorFlow
from jobs.policies import (
    RestartLedger,
    backoff_exceeded,
    is_retryable_exit_code,
    pods_to_clean,
    seconds_until,
    will_restart,
)
from jobs.status import current_state
from jobs.tests.fakes import T0, FakeCluster, created, make_job, plan_job, tf_job, with_state
from kube.controller.children import Deletion, Event, creation_event, deletion_event


def pod(name: str, phase: str = "Running", *, uid: str | None = None, restarts: int = 0, **state) -> dict:
    base = {
        "metadata": {"name": name, "uid": uid or f"uid-{name}"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "tensorflow"}]},
    }
    return with_state(base, phase, restarts=restarts, **state)


def deleted(result) -> list[tuple[str, str, str]]:
    return [(d.kind, d.name, d.reason) for d in result.delete]


def names(manifests) -> list[str]:
    return [f"{m['kind']}/{m['metadata']['name']}" for m in manifests]


class TestExitCodes:
    @pytest.mark.parametrize(
        ("code", "retryable"),
        [(0, False), (1, False), (127, False), (128, True), (137, True), (143, True), (None, True)],
    )
    def test_signal_deaths_and_unknown_failures_are_retryable(self, code, retryable):
        assert is_retryable_exit_code(code) is retryable

    @pytest.mark.parametrize(
        ("policy", "code", "restart"),
        [
            ("Never", 137, False),
            ("ExitCode", 1, False),
            ("ExitCode", 137, True),
            ("OnFailure", 1, True),
            ("Always", 1, True),
        ],
    )
    def test_which_failed_pods_will_restart(self, policy, code, restart):
        assert will_restart(policy, pod("w", "Failed", exit_code=code), "tensorflow") is restart


class TestRestartLedger:
    def test_counts_each_recreation_once_even_if_asked_twice(self):
        failed = pod("w-0", "Failed", exit_code=137, restarts=2)
        once = RestartLedger().recreating([failed])
        assert once == RestartLedger(3, {"w-0": "uid-w-0"})
        assert once.recreating([failed]) == once

    def test_a_new_pod_of_the_same_name_is_counted_again(self):
        first = RestartLedger().recreating([pod("w-0", "Failed", exit_code=137)])
        second = first.recreating([pod("w-0", "Failed", uid="uid-2", exit_code=137)])
        assert second == RestartLedger(2, {"w-0": "uid-2"})

    def test_the_total_adds_live_pods_restarts_but_not_those_already_counted(self):
        counted = pod("w-0", "Failed", exit_code=137, restarts=4)
        ledger = RestartLedger().recreating([counted])
        assert ledger.total([counted, pod("w-1", restarts=2)]) == 5 + 2

    def test_round_trips_through_the_status_and_tolerates_garbage(self):
        ledger = RestartLedger(3, {"b": "2", "a": "1"})
        assert ledger.to_status() == {"deletedPodRestarts": 3, "countedPods": {"a": "1", "b": "2"}}
        assert RestartLedger.from_status({"restartLedger": ledger.to_status()}) == ledger
        assert RestartLedger.from_status(
            {"restartLedger": {"deletedPodRestarts": "x", "countedPods": 3}}
        ) == (RestartLedger())


@pytest.mark.parametrize(
    ("restarts", "limit", "exceeded"),
    [(0, 0, False), (1, 0, True), (3, 3, False), (4, 3, True), (100, None, False)],
)
def test_backoff_limit_is_the_number_of_restarts_allowed(restarts, limit, exceeded):
    assert backoff_exceeded(restarts, limit) is exceeded


def test_seconds_until_counts_down_and_goes_negative():
    assert seconds_until(T0, 60, T0 + timedelta(seconds=20)) == 40
    assert seconds_until(T0, 60, T0 + timedelta(seconds=90)) == -30
    assert seconds_until(None, 60, T0) is None
    assert seconds_until(T0, None, T0) is None


@pytest.mark.parametrize(
    ("policy", "cleaned"),
    [("All", ["p-run", "p-pend", "p-ok", "p-bad"]), ("Running", ["p-run", "p-pend"]), ("None", [])],
)
def test_clean_pod_policy_picks_pods_and_skips_those_already_going(policy, cleaned):
    pods = [
        pod("p-run"),
        pod("p-pend", "Pending"),
        pod("p-ok", "Succeeded", exit_code=0),
        pod("p-bad", "Failed", exit_code=1),
        pod("p-gone"),
    ]
    pods[-1]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    assert [p["metadata"]["name"] for p in pods_to_clean(pods, policy)] == cleaned


class TestANewJob:
    def test_a_tfjob_with_chief_2_ps_and_4_workers_plans_7_services_then_7_pods(self):
        result = plan_job(tf_job(chief=1, ps=2, workers=4, name="mnist"), [], [], T0)
        replicas = ["chief-0", "ps-0", "ps-1", "worker-0", "worker-1", "worker-2", "worker-3"]
        assert names(result.create) == [f"Service/mnist-{r}" for r in replicas] + [
            f"Pod/mnist-{r}" for r in replicas
        ]
        assert result.delete == ()
        assert result.events == (Event("Normal", "TFJobCreated", "TFJob mnist is created."),)
        assert current_state(result.status) == "Created"
        assert (result.status["restarts"], result.delete_job, result.requeue_after) == (0, False, None)

    def test_planning_twice_gives_the_same_plan(self):
        job = tf_job()
        assert plan_job(job, [], [], T0) == plan_job(copy.deepcopy(job), [], [], T0)

    def test_nothing_is_created_twice(self):
        cluster = FakeCluster(tf_job())
        cluster.reconcile()
        again = cluster.reconcile()
        assert (again.create, again.delete, again.events) == ((), (), ())

    def test_the_cluster_domain_reaches_tf_config(self):
        result = plan_job(tf_job(chief=0, ps=0, workers=2), [], [], T0, cluster_domain="corp.local")
        env = result.create[-1]["spec"]["containers"][0]["env"]
        assert "train-worker-0.ml.svc.corp.local:2222" in next(
            e["value"] for e in env if e["name"] == "TF_CONFIG"
        )


class TestChildrenItDoesNotOwn:
    def test_are_neither_counted_nor_touched(self):
        cluster = FakeCluster(tf_job(chief=0, ps=0, workers=1))
        cluster.reconcile()
        stranger = pod("train-worker-7", "Failed", exit_code=1)
        stranger["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
        cluster.pods["train-worker-7"] = stranger
        result = cluster.reconcile()
        assert result.delete == ()
        assert current_state(result.status) == "Created"


class TestLifecycle:
    def test_a_job_runs_succeeds_and_cleans_its_running_pods(self):
        cluster = FakeCluster(tf_job(chief=1, ps=2, workers=2))
        cluster.reconcile()
        cluster.run_all()
        assert cluster.reconcile().events == (Event("Normal", "TFJobRunning", "TFJob ml/train is running."),)
        cluster.set_pod("train-worker-0", "Succeeded", exit_code=0)
        cluster.set_pod("train-chief-0", "Succeeded", exit_code=0)
        result = cluster.reconcile()
        assert cluster.state == "Succeeded"
        assert result.events == (Event("Normal", "TFJobSucceeded", "TFJob ml/train successfully completed."),)
        assert deleted(result) == [
            (kind, f"train-{r}", "CleanPodPolicy")
            for r in ("ps-0", "ps-1", "worker-1")
            for kind in ("Pod", "Service")
        ]
        assert sorted(cluster.pods) == ["train-chief-0", "train-worker-0"]
        assert (result.create, result.requeue_after) == ((), None)

    @pytest.mark.parametrize(
        ("policy", "left"),
        [
            ("All", []),
            ("Running", ["train-chief-0"]),
            ("None", ["train-chief-0", "train-worker-0", "train-worker-1"]),
        ],
    )
    def test_clean_pod_policy_decides_which_pods_outlive_the_job(self, policy, left):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=2, run_policy={"cleanPodPolicy": policy}))
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("train-chief-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert sorted(cluster.pods) == left
        assert sorted(cluster.services) == left

    def test_clean_pod_policy_all_also_removes_services_whose_pods_are_already_gone(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=1, run_policy={"cleanPodPolicy": "All"}))
        cluster.reconcile()
        cluster.set_pod("train-chief-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        cluster.services["train-ps-0"] = created(
            plan_job(tf_job(chief=0, ps=1, workers=1), [], [], T0).create[0]
        )
        assert deleted(cluster.reconcile()) == [("Service", "train-ps-0", "CleanPodPolicy")]

    def test_pytorch_keeps_its_pods_by_default(self):
        cluster = FakeCluster(make_job("PyTorchJob", {"Master": 1, "Worker": 1}))
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("train-master-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert sorted(cluster.pods) == ["train-master-0", "train-worker-0"]

    def test_a_replica_failing_under_never_fails_the_job_without_restarting_it(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=2, restart_policy="Never"))
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        cluster.set_pod("train-worker-1", "Failed", exit_code=1)
        result = cluster.reconcile()
        assert cluster.state == "Failed"
        assert result.events == (
            Event(
                "Warning",
                "TFJobFailed",
                "TFJob ml/train has failed because train-worker-1 exited with code 1.",
            ),
        )
        assert result.create == ()
        assert "train-worker-1" in cluster.pods
        assert sorted(cluster.pods) == ["train-worker-1"]  # cleanPodPolicy Running (TF default) took the rest

    def test_a_finished_job_plans_nothing_more(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=1, run_policy={"cleanPodPolicy": "None"}))
        cluster.reconcile()
        cluster.set_pod("train-chief-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        cluster.set_pod("train-worker-0", "Failed", exit_code=1)
        result = cluster.reconcile()
        assert (result.create, result.delete, result.events, cluster.state) == ((), (), (), "Succeeded")


class TestExitCodePolicy:
    def job(self, **run_policy):
        return tf_job(chief=1, ps=0, workers=2, restart_policy="ExitCode", run_policy=run_policy or None)

    def test_a_signal_death_recreates_the_pod_and_counts_a_restart(self):
        cluster = FakeCluster(self.job())
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        cluster.set_pod("train-worker-1", "Failed", exit_code=137)
        failed_uid = cluster.pods["train-worker-1"]["metadata"]["uid"]
        result = cluster.reconcile()
        assert result.delete == (
            Deletion("Pod", "train-worker-1", failed_uid, "Recreate", "exited with code 137; recreating it"),
        )
        assert result.events == (
            Event(
                "Warning",
                "TFJobRestarting",
                "TFJob ml/train is restarting: train-worker-1 exited with code 137.",
            ),
        )
        assert result.status["restarts"] == 1
        assert result.status["restartLedger"] == {
            "deletedPodRestarts": 1,
            "countedPods": {"train-worker-1": failed_uid},
        }
        assert "train-worker-1" in cluster.services  # the replica keeps its DNS name
        recreated = cluster.reconcile()
        assert names(recreated.create) == ["Pod/train-worker-1"]
        assert recreated.status["restarts"] == 1

    def test_the_same_observation_planned_twice_counts_one_restart(self):
        cluster = FakeCluster(self.job())
        cluster.reconcile()
        cluster.set_pod("train-worker-0", "Failed", exit_code=143)
        job, pods = copy.deepcopy(cluster.job), list(cluster.pods.values())
        first = plan_job(job, pods, [], T0)
        job["status"] = first.status
        second = plan_job(job, pods, [], T0)
        assert first.status["restarts"] == second.status["restarts"] == 1
        assert first.delete == second.delete

    def test_a_pod_still_terminating_is_waited_for_not_recreated(self):
        cluster = FakeCluster(self.job())
        cluster.reconcile()
        cluster.pods["train-worker-0"]["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:05Z"
        result = cluster.reconcile()
        assert (result.create, result.delete) == ((), ())
        assert cluster.state == "Restarting"

    def test_a_program_error_fails_the_job(self):
        cluster = FakeCluster(self.job())
        cluster.reconcile()
        cluster.set_pod("train-worker-0", "Failed", exit_code=2)
        result = cluster.reconcile()
        assert cluster.state == "Failed"
        assert ("Pod", "train-worker-0", "Recreate") not in deleted(result)

    def test_backoff_limit_counts_exit_code_recreations_and_stops_the_job(self):
        cluster = FakeCluster(self.job(backoffLimit=1, cleanPodPolicy="None"))
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("train-worker-0", "Failed", exit_code=137)
        cluster.reconcile()
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        assert cluster.state == "Running"
        cluster.set_pod("train-worker-0", "Failed", exit_code=137)
        result = cluster.reconcile()
        assert cluster.state == "Failed"
        assert result.events == (
            Event(
                "Warning",
                "BackoffLimitExceeded",
                "TFJob ml/train has failed because it would restart 2 times, "
                "more than its backoffLimit of 1.",
            ),
        )
        assert deleted(result) == [
            (kind, f"train-{r}", "BackoffLimitExceeded")
            for r in ("chief-0", "worker-1")
            for kind in ("Pod", "Service")
        ]
        assert result.status["restarts"] == 1


class TestOnFailurePolicy:
    def test_in_place_restarts_count_toward_the_backoff_limit(self):
        cluster = FakeCluster(
            tf_job(chief=1, ps=0, workers=1, restart_policy="OnFailure", run_policy={"backoffLimit": 2})
        )
        cluster.reconcile()
        cluster.set_pod("train-worker-0", "Running", restarts=2)
        assert cluster.reconcile().status["restarts"] == 2
        assert cluster.state == "Running"
        cluster.set_pod("train-worker-0", "Running", restarts=3)
        result = cluster.reconcile()
        assert condition_reason(result.status, "Failed") == "BackoffLimitExceeded"

    def test_an_evicted_pod_is_recreated_with_its_restarts_carried_over(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=1, restart_policy="OnFailure"))
        cluster.reconcile()
        cluster.set_pod("train-worker-0", "Failed", restarts=2, reason="Evicted")
        result = cluster.reconcile()
        assert deleted(result) == [("Pod", "train-worker-0", "Recreate")]
        assert result.delete[0].message == "failed (Evicted); recreating it"
        assert result.status["restarts"] == 3


def condition_reason(status, type_):
    return next(c["reason"] for c in status["conditions"] if c["type"] == type_ and c["status"] == "True")


class TestActiveDeadline:
    def test_a_running_job_asks_to_be_reconciled_at_its_deadline(self):
        cluster = FakeCluster(tf_job(run_policy={"activeDeadlineSeconds": 600}))
        assert cluster.reconcile().requeue_after == 600
        assert cluster.reconcile(seconds_later=100).requeue_after == 500

    def test_past_the_deadline_the_job_fails_and_its_pods_go_whatever_the_clean_policy(self):
        cluster = FakeCluster(
            tf_job(
                chief=1, ps=1, workers=1, run_policy={"activeDeadlineSeconds": 60, "cleanPodPolicy": "None"}
            )
        )
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("train-ps-0", "Failed", exit_code=1)
        result = cluster.reconcile(seconds_later=60)
        assert condition_reason(result.status, "Failed") == "DeadlineExceeded"
        assert result.events[0].message == "TFJob ml/train has failed because it was active longer than 60s."
        assert sorted(cluster.pods) == ["train-ps-0"]
        assert {d.reason for d in result.delete} == {"DeadlineExceeded"}

    def test_time_spent_suspended_does_not_count(self):
        cluster = FakeCluster(tf_job(run_policy={"activeDeadlineSeconds": 60}))
        cluster.reconcile()
        cluster.job["spec"]["runPolicy"]["suspend"] = True
        cluster.reconcile(seconds_later=30)
        cluster.job["spec"]["runPolicy"]["suspend"] = False
        result = cluster.reconcile(seconds_later=3600)
        assert cluster.state != "Failed"
        assert result.requeue_after == 60


class TestTTL:
    def finished(self, ttl: int) -> FakeCluster:
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=1, run_policy={"ttlSecondsAfterFinished": ttl}))
        cluster.reconcile()
        cluster.set_pod("train-chief-0", "Succeeded", exit_code=0)
        return cluster

    def test_a_finished_job_waits_for_its_ttl_then_is_deleted(self):
        cluster = self.finished(ttl=300)
        assert cluster.reconcile().requeue_after == 300
        assert cluster.reconcile(seconds_later=100).requeue_after == 200
        result = cluster.reconcile(seconds_later=200)
        assert result.delete_job
        assert result.events == (Event("Normal", "TTLExpired", "Deleting TFJob train: finished 300s ago"),)
        assert cluster.job is None

    def test_a_ttl_of_zero_deletes_the_job_as_it_finishes(self):
        cluster = self.finished(ttl=0)
        assert cluster.reconcile().delete_job

    def test_without_ttl_a_finished_job_stays(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=1))
        cluster.reconcile()
        cluster.set_pod("train-chief-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        result = cluster.reconcile(seconds_later=10**6)
        assert (result.delete_job, result.requeue_after) == (False, None)


class TestSuspend:
    def test_suspending_removes_every_pod_and_service_and_resuming_brings_them_back(self):
        cluster = FakeCluster(tf_job(chief=1, ps=1, workers=2))
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        cluster.job["spec"]["runPolicy"] = {"suspend": True}
        result = cluster.reconcile()
        assert cluster.state == "Suspended"
        assert (cluster.pods, cluster.services) == ({}, {})
        assert {d.reason for d in result.delete} == {"Suspend"}
        assert result.events == (Event("Normal", "TFJobSuspended", "TFJob train is suspended."),)
        assert cluster.reconcile().delete == ()

        cluster.job["spec"]["runPolicy"]["suspend"] = False
        resumed = cluster.reconcile()
        assert resumed.events == (Event("Normal", "TFJobResumed", "TFJob train is resumed."),)
        assert len(cluster.pods) == len(cluster.services) == 4

    def test_a_job_suspended_from_the_start_creates_nothing(self):
        result = plan_job(tf_job(run_policy={"suspend": True}), [], [], T0)
        assert result.create == ()
        assert current_state(result.status) == "Suspended"


class TestScaling:
    def test_more_replicas_add_pods_and_services(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=2))
        cluster.reconcile()
        cluster.job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
        result = cluster.reconcile()
        assert names(result.create) == [
            "Service/train-worker-2",
            "Service/train-worker-3",
            "Pod/train-worker-2",
            "Pod/train-worker-3",
        ]

    def test_fewer_replicas_remove_the_highest_indexes(self):
        cluster = FakeCluster(tf_job(chief=1, ps=0, workers=3))
        cluster.reconcile()
        cluster.job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 1
        result = cluster.reconcile()
        assert deleted(result) == [
            ("Pod", "train-worker-1", "ScaleDown"),
            ("Pod", "train-worker-2", "ScaleDown"),
            ("Service", "train-worker-1", "ScaleDown"),
            ("Service", "train-worker-2", "ScaleDown"),
        ]
        assert result.status["replicaStatuses"]["Worker"]["active"] == 1


class TestInvalidJobs:
    def test_an_invalid_spec_fails_the_job_once_with_a_clear_message_and_touches_nothing(self):
        job = tf_job(chief=1, ps=0, workers=1, restart_policy="Sometimes")
        first = plan_job(job, [], [], T0)
        message = (
            "TFJob ml/train is invalid: "
            "spec.tfReplicaSpecs.Chief.restartPolicy: must be one of Always, OnFailure, Never, ExitCode, "
            "not 'Sometimes'; "
            "spec.tfReplicaSpecs.Worker.restartPolicy: must be one of Always, OnFailure, Never, ExitCode, "
            "not 'Sometimes'"
        )
        assert (first.create, first.delete) == ((), ())
        assert condition_reason(first.status, "Failed") == "FailedValidation"
        assert Event("Warning", "FailedValidation", message) in first.events
        job["status"] = first.status
        second = plan_job(job, [], [], T0 + timedelta(seconds=5))
        assert (second.status, second.events) == (first.status, ())

    @pytest.mark.parametrize("spec", [None, [], {"tfReplicaSpecs": "x"}, {"tfReplicaSpecs": {"Worker": 3}}])
    def test_even_a_garbled_spec_gets_a_plan_not_a_crash(self, spec):
        job = {**tf_job(), "spec": spec}
        assert condition_reason(plan_job(job, [], [], T0).status, "Failed") == "FailedValidation"


def test_a_job_being_deleted_is_left_to_the_garbage_collector():
    job = tf_job()
    job["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    job["status"] = {"conditions": []}
    result = plan_job(job, [created(m) for m in plan_job(tf_job(), [], [], T0).create], [], T0)
    assert result == type(result)(status={"conditions": []})


def test_creation_and_deletion_events_name_the_object():
    manifest = plan_job(tf_job(chief=0, ps=0, workers=1), [], [], T0).create[-1]
    assert creation_event(manifest) == Event("Normal", "SuccessfulCreatePod", "Created pod: train-worker-0")
    deletion = Deletion("Service", "train-worker-0", "u", "CleanPodPolicy", "cleanPodPolicy All")
    assert deletion_event(deletion) == Event(
        "Normal", "SuccessfulDeleteService", "Deleted service: train-worker-0 (cleanPodPolicy All)"
    )


def test_an_explicit_framework_is_used_instead_of_the_kind():
    job = tf_job(chief=0, ps=0, workers=1)
    del job["kind"]
    assert names(plan_job(job, [], [], T0, framework=TensorFlow()).create) == [
        "Service/train-worker-0",
        "Pod/train-worker-0",
    ]
