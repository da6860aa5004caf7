"""Status aggregation: a job and its pods → conditions, replica counts and times."""

import copy
from datetime import timedelta

import pytest

from jobs import spec as jobspec
from jobs.frameworks import MXNet, PyTorch, TensorFlow
from jobs.manifests import desired_pods
from jobs.status import Failure, aggregate, current_state, order_conditions, transitions
from jobs.tests.fakes import T0, created, make_job, tf_job, with_state
from kube.conditions import set_condition

LATER = T0 + timedelta(minutes=5)
SELECTOR = "argoml.io/job-name=train,argoml.io/replica-type="  # + the replica type, lowercase


def pods_of(job, framework=None) -> dict[str, dict]:
    framework = framework or TensorFlow()
    return {p["metadata"]["name"]: created(p) for p in desired_pods(job, framework)}


def status_after(job, pods, now=T0, framework=None, **kwargs) -> dict:
    """Aggregate, store the status on the job (as the reconcile loop would) and return it."""
    status = aggregate_job(job, list(pods.values()), now, framework=framework or TensorFlow(), **kwargs)
    job["status"] = status
    return status


def aggregate_job(job, pods, now, *, framework, **kwargs) -> dict:
    """`aggregate` of the job as written: parsed, with its status as read."""
    parsed = jobspec.parse(job, framework)
    return aggregate(parsed, job.get("status") or {}, pods, now, framework=framework, **kwargs)


def condition(status, type_) -> dict:
    return next(c for c in status["conditions"] if c["type"] == type_)


def states(status) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


def running(pods, *names):
    for name in names or list(pods):
        pods[name] = with_state(pods[name], "Running")


class TestANewJob:
    def test_is_created_with_zero_counts_a_start_time_and_its_generation(self):
        job = tf_job(chief=1, ps=1, workers=2)
        status = status_after(job, {})
        assert status == {
            "observedGeneration": 1,
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "TFJobCreated",
                    "message": "TFJob train is created.",
                    "lastUpdateTime": "2024-05-01T12:00:00Z",
                    "lastTransitionTime": "2024-05-01T12:00:00Z",
                }
            ],
            "replicaStatuses": {
                "Chief": {"active": 0, "succeeded": 0, "failed": 0, "selector": SELECTOR + "chief"},
                "PS": {"active": 0, "succeeded": 0, "failed": 0, "selector": SELECTOR + "ps"},
                "Worker": {"active": 0, "succeeded": 0, "failed": 0, "selector": SELECTOR + "worker"},
            },
            "startTime": "2024-05-01T12:00:00Z",
        }

    def test_with_pending_pods_counts_them_active_but_is_not_running(self):
        job = tf_job(chief=1, ps=0, workers=2)
        status = status_after(job, pods_of(job))
        assert current_state(status) == "Created"
        assert status["replicaStatuses"]["Worker"] == {
            "active": 2,
            "succeeded": 0,
            "failed": 0,
            "selector": SELECTOR + "worker",
        }


class TestARunningJob:
    def test_is_running_once_a_pod_runs_and_keeps_its_created_times(self):
        job = tf_job(chief=1, ps=0, workers=2)
        pods = pods_of(job)
        status_after(job, pods)
        running(pods, "train-worker-1")
        status = status_after(job, pods, LATER)
        assert current_state(status) == "Running"
        assert condition(status, "Running")["reason"] == "TFJobRunning"
        assert condition(status, "Running")["message"] == "TFJob ml/train is running."
        assert condition(status, "Created")["lastTransitionTime"] == "2024-05-01T12:00:00Z"
        assert status["startTime"] == "2024-05-01T12:00:00Z"

    def test_an_unchanged_observation_changes_nothing(self):
        job = tf_job(chief=1, ps=0, workers=2)
        pods = pods_of(job)
        running(pods)
        first = copy.deepcopy(status_after(job, pods))
        assert status_after(job, pods, LATER) == first


class TestSuccess:
    def test_a_job_with_a_chief_succeeds_when_the_chief_succeeds(self):
        job = tf_job(chief=1, ps=2, workers=2)
        pods = pods_of(job)
        running(pods)
        status_after(job, pods)
        pods["train-chief-0"] = with_state(pods["train-chief-0"], "Succeeded", exit_code=0)
        status = status_after(job, pods, LATER)
        assert current_state(status) == "Succeeded"
        assert condition(status, "Succeeded")["message"] == "TFJob ml/train successfully completed."
        assert condition(status, "Running")["status"] == "False"
        assert status["completionTime"] == "2024-05-01T12:05:00Z"
        assert status["replicaStatuses"]["Chief"] == {
            "active": 0,
            "succeeded": 1,
            "failed": 0,
            "selector": SELECTOR + "chief",
        }
        # Kubeflow's operator: replicas still active when the job succeeded count as succeeded, so the
        # summary of a finished job does not read "Worker 2/2 running" forever.
        assert {t: (c["active"], c["succeeded"]) for t, c in status["replicaStatuses"].items()} == {
            "Chief": (0, 1),
            "PS": (0, 2),
            "Worker": (0, 2),
        }

    def test_conditions_come_in_kubeflows_order_created_running_succeeded_with_its_wording(self):
        job = tf_job(chief=1, workers=1)
        pods = pods_of(job)
        status_after(job, pods)
        running(pods)
        status_after(job, pods, T0 + timedelta(minutes=1))
        pods["train-chief-0"] = with_state(pods["train-chief-0"], "Succeeded", exit_code=0)
        status = status_after(job, pods, LATER)
        assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
            ("Created", "True", "TFJobCreated", "TFJob train is created."),
            ("Running", "False", "TFJobRunning", "TFJob ml/train is running."),
            ("Succeeded", "True", "TFJobSucceeded", "TFJob ml/train successfully completed."),
        ]

    def test_workers_finishing_do_not_finish_a_job_with_a_chief(self):
        job = tf_job(chief=1, ps=0, workers=2)
        pods = pods_of(job)
        running(pods)
        for name in ("train-worker-0", "train-worker-1"):
            pods[name] = with_state(pods[name], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods)) == "Running"

    def test_without_a_chief_worker_0_exiting_0_succeeds_the_job(self):
        job = tf_job(chief=0, ps=1, workers=3)
        pods = pods_of(job)
        running(pods)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods)) == "Succeeded"

    def test_without_a_chief_another_worker_exiting_0_does_not(self):
        job = tf_job(chief=0, ps=1, workers=3)
        pods = pods_of(job)
        running(pods)
        pods["train-worker-2"] = with_state(pods["train-worker-2"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods)) == "Running"

    def test_under_all_workers_every_worker_must_succeed(self):
        job = tf_job(chief=0, ps=1, workers=2, successPolicy="AllWorkers")
        pods = pods_of(job)
        running(pods)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods)) == "Running"
        pods["train-worker-1"] = with_state(pods["train-worker-1"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods)) == "Succeeded"

    def test_a_pytorch_job_succeeds_with_its_master(self):
        job = make_job("PyTorchJob", {"Master": 1, "Worker": 2})
        pods = pods_of(job, PyTorch())
        pods["train-master-0"] = with_state(pods["train-master-0"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods, framework=PyTorch())) == "Succeeded"

    def test_a_pytorch_job_of_workers_only_succeeds_when_every_worker_does(self):
        job = make_job("PyTorchJob", {"Worker": 2})
        pods = pods_of(job, PyTorch())
        running(pods)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods, framework=PyTorch())) == "Running"
        pods["train-worker-1"] = with_state(pods["train-worker-1"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods, framework=PyTorch())) == "Succeeded"

    def test_an_elastic_pytorch_job_succeeds_when_any_worker_does(self):
        job = make_job("PyTorchJob", {"Worker": 3}, elasticPolicy={"minReplicas": 1, "maxReplicas": 3})
        pods = pods_of(job, PyTorch())
        running(pods)
        pods["train-worker-2"] = with_state(pods["train-worker-2"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods, framework=PyTorch())) == "Succeeded"

    def test_an_mxnet_job_succeeds_with_worker_0(self):
        job = make_job("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 2})
        pods = pods_of(job, MXNet())
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Succeeded", exit_code=0)
        assert current_state(status_after(job, pods, framework=MXNet())) == "Succeeded"

    def test_a_training_container_that_exited_0_beside_a_running_sidecar_has_succeeded(self):
        job = tf_job(chief=0, ps=0, workers=2)
        pods = pods_of(job)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Running", exit_code=0)
        assert current_state(status_after(job, pods)) == "Succeeded"

    def test_success_wins_over_a_failure_seen_at_the_same_time(self):
        job = tf_job(chief=1, ps=0, workers=1)
        pods = pods_of(job)
        pods["train-chief-0"] = with_state(pods["train-chief-0"], "Succeeded", exit_code=0)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Failed", exit_code=1)
        assert current_state(status_after(job, pods)) == "Succeeded"


class TestFailure:
    def test_a_failed_replica_under_never_fails_the_job_naming_the_pod_and_exit_code(self):
        job = tf_job(chief=1, ps=0, workers=2, restart_policy="Never")
        pods = pods_of(job)
        running(pods)
        pods["train-worker-1"] = with_state(pods["train-worker-1"], "Failed", exit_code=3)
        status = status_after(job, pods, LATER)
        assert current_state(status) == "Failed"
        assert condition(status, "Failed") | {"lastUpdateTime": None} == {
            "type": "Failed",
            "status": "True",
            "reason": "TFJobFailed",
            "message": "TFJob ml/train has failed because train-worker-1 exited with code 3.",
            "lastUpdateTime": None,
            "lastTransitionTime": "2024-05-01T12:05:00Z",
        }
        assert status["completionTime"] == "2024-05-01T12:05:00Z"
        assert status["replicaStatuses"]["Worker"] == {
            "active": 1,
            "succeeded": 0,
            "failed": 1,
            "selector": SELECTOR + "worker",
        }

    def test_an_exit_code_below_128_under_exit_code_fails_the_job(self):
        job = tf_job(chief=1, ps=0, workers=1, restart_policy="ExitCode")
        pods = pods_of(job)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Failed", exit_code=127)
        assert current_state(status_after(job, pods)) == "Failed"

    def test_an_evicted_pod_without_exit_code_is_described_by_its_reason(self):
        job = tf_job(chief=1, ps=0, workers=1, restart_policy="Never")
        pods = pods_of(job)
        pods["train-worker-0"]["status"] = {"phase": "Failed", "reason": "Evicted"}
        status = status_after(job, pods)
        assert (
            condition(status, "Failed")["message"]
            == "TFJob ml/train has failed because train-worker-0 failed (Evicted)."
        )

    def test_a_training_container_that_failed_beside_a_running_sidecar_has_failed(self):
        job = tf_job(chief=1, ps=0, workers=1, restart_policy="Never")
        pods = pods_of(job)
        pods["train-worker-0"] = with_state(pods["train-worker-0"], "Running", exit_code=2)
        assert current_state(status_after(job, pods)) == "Failed"

    def test_a_failure_decided_by_policy_wins_with_its_own_reason(self):
        job = tf_job(chief=1, ps=0, workers=1)
        pods = pods_of(job)
        running(pods)
        status = status_after(job, pods, failure=Failure("DeadlineExceeded", "too slow"))
        assert (condition(status, "Failed")["reason"], condition(status, "Failed")["message"]) == (
            "DeadlineExceeded",
            "too slow",
        )


class TestRestarting:
    @pytest.mark.parametrize("exit_code", [128, 137, 143, 255])
    def test_a_signal_death_under_exit_code_is_restarting_not_failed(self, exit_code):
        job = tf_job(chief=1, ps=0, workers=2, restart_policy="ExitCode")
        pods = pods_of(job)
        running(pods)
        status_after(job, pods)
        pods["train-worker-1"] = with_state(pods["train-worker-1"], "Failed", exit_code=exit_code)
        status = status_after(job, pods, LATER)
        assert current_state(status) == "Restarting"
        assert states(status) == {"Created": "True", "Running": "False", "Restarting": "True"}
        assert condition(status, "Restarting")["message"] == (
            f"TFJob ml/train is restarting: train-worker-1 exited with code {exit_code}."
        )

    @pytest.mark.parametrize("policy", ["OnFailure", "Always"])
    def test_a_pod_that_failed_as_a_whole_under_on_failure_or_always_is_restarting(self, policy):
        job = tf_job(chief=1, ps=0, workers=1, restart_policy=policy)
        pods = pods_of(job)
        pods["train-worker-0"]["status"] = {"phase": "Failed", "reason": "Evicted"}
        assert current_state(status_after(job, pods)) == "Restarting"

    def test_a_pod_being_deleted_is_restarting_and_running_again_once_replaced(self):
        job = tf_job(chief=1, ps=0, workers=1)
        pods = pods_of(job)
        running(pods)
        status_after(job, pods)
        pods["train-worker-0"]["metadata"]["deletionTimestamp"] = "2024-05-01T12:01:00Z"
        status = status_after(job, pods, T0 + timedelta(minutes=1))
        assert current_state(status) == "Restarting"
        assert condition(status, "Restarting")["message"] == (
            "TFJob ml/train is restarting: train-worker-0 is being replaced."
        )
        pods = pods_of(job)
        running(pods)
        status = status_after(job, pods, LATER)
        assert current_state(status) == "Running"
        assert states(status)["Restarting"] == "False"
        assert condition(status, "Running")["lastTransitionTime"] == "2024-05-01T12:05:00Z"


class TestTerminalStates:
    @pytest.mark.parametrize(
        ("phase", "exit_code", "state"), [("Succeeded", 0, "Succeeded"), ("Failed", 1, "Failed")]
    )
    def test_a_finished_job_keeps_its_status_whatever_its_pods_do_next(self, phase, exit_code, state):
        job = tf_job(chief=1, ps=0, workers=1, restart_policy="Never")
        pods = pods_of(job)
        pods["train-chief-0"] = with_state(pods["train-chief-0"], phase, exit_code=exit_code)
        finished = copy.deepcopy(status_after(job, pods))
        assert current_state(finished) == state
        job["metadata"]["generation"] = 2
        later_pods = pods_of(job)
        later_pods["train-chief-0"] = with_state(later_pods["train-chief-0"], "Failed", exit_code=2)
        assert status_after(job, later_pods, LATER) == {**finished, "observedGeneration": 2}
        assert (
            status_after(job, {}, LATER, failure=Failure("DeadlineExceeded", "late"))["conditions"]
            == (finished["conditions"])
        )


class TestSuspension:
    def test_a_suspended_job_has_no_active_replicas_and_no_start_time(self):
        job = tf_job(chief=1, ps=0, workers=1)
        pods = pods_of(job)
        running(pods)
        status_after(job, pods)
        job["spec"]["runPolicy"] = {"suspend": True}
        status = status_after(job, pods, LATER)
        assert current_state(status) == "Suspended"
        assert states(status) == {"Created": "True", "Running": "False", "Suspended": "True"}
        assert condition(status, "Suspended")["reason"] == "TFJobSuspended"
        assert "startTime" not in status
        assert status["replicaStatuses"]["Worker"]["active"] == 0

    def test_resuming_marks_suspended_false_and_restarts_the_clock(self):
        job = tf_job(chief=1, ps=0, workers=1, run_policy={"suspend": True})
        status_after(job, {})
        job["spec"]["runPolicy"]["suspend"] = False
        status = status_after(job, {}, LATER)
        assert condition(status, "Suspended") | {"lastUpdateTime": None, "lastTransitionTime": None} == {
            "type": "Suspended",
            "status": "False",
            "reason": "TFJobResumed",
            "message": "TFJob train is resumed.",
            "lastUpdateTime": None,
            "lastTransitionTime": None,
        }
        assert current_state(status) == "Created"
        assert status["startTime"] == "2024-05-01T12:05:00Z"


class TestConditions:
    def test_an_unchanged_condition_keeps_both_times(self):
        conditions = set_condition([], "Running", "True", "R", "m", "t1", updated_last=True)
        assert set_condition(conditions, "Running", "True", "R", "m", "t2", updated_last=True) == conditions

    def test_a_new_message_moves_the_update_time_but_not_the_transition_time(self):
        conditions = set_condition([], "Restarting", "True", "R", "m1", "t1", updated_last=True)
        assert set_condition(conditions, "Restarting", "True", "R", "m2", "t2", updated_last=True) == [
            {
                "type": "Restarting",
                "status": "True",
                "reason": "R",
                "message": "m2",
                "lastUpdateTime": "t2",
                "lastTransitionTime": "t1",
            }
        ]

    def test_a_flip_moves_both_times(self):
        conditions = set_condition([], "Running", "True", "R", "m", "t1", updated_last=True)
        flipped = set_condition(conditions, "Running", "False", "S", "done", "t2", updated_last=True)[0]
        assert (flipped["lastUpdateTime"], flipped["lastTransitionTime"]) == ("t2", "t2")

    def test_conditions_keep_the_order_they_changed_in(self):
        conditions = [
            {"type": "Created", "status": "True", "lastTransitionTime": "2024-01-01T00:00:01Z"},
            {"type": "Running", "status": "False", "lastTransitionTime": "2024-01-01T00:00:09Z"},
            {"type": "Succeeded", "status": "True", "lastTransitionTime": "2024-01-01T00:00:09Z"},
        ]
        assert order_conditions(conditions, "Succeeded") == conditions

    def test_the_condition_of_the_current_state_is_last(self):
        conditions = [
            {"type": "Created", "status": "True", "lastTransitionTime": "2024-01-01T00:00:01Z"},
            {"type": "Running", "status": "False", "lastTransitionTime": "2024-01-01T00:00:09Z"},
        ]
        assert [c["type"] for c in order_conditions(conditions, "Created")] == ["Running", "Created"]

    def test_the_state_of_a_status_without_conditions_is_none(self):
        assert current_state({}) is None
        assert current_state(None) is None

    def test_transitions_report_conditions_that_became_true_and_resumption(self):
        before = {
            "conditions": [{"type": "Created", "status": "True"}, {"type": "Suspended", "status": "True"}]
        }
        after = {
            "conditions": [
                {"type": "Created", "status": "True"},
                {"type": "Suspended", "status": "False"},
                {"type": "Running", "status": "True"},
            ]
        }
        assert [(s, c["type"]) for s, c in transitions(before, after)] == [
            ("False", "Suspended"),
            ("True", "Running"),
        ]


def test_malformed_status_fields_are_tolerated():
    job = tf_job(chief=1, ps=0, workers=1)
    job["status"] = {"conditions": ["junk", {"type": "Created", "status": "True"}], "startTime": 12}
    status = aggregate_job(job, [], T0, framework=TensorFlow())
    assert current_state(status) == "Created"
    assert status["startTime"] == "2024-05-01T12:00:00Z"
