"""trainer.operator.status: a TrainJob's conditions and jobsStatus from its plan and pods, which steps start,
which pods go — as Trainer 2.3 and JobSet would decide, with no cluster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trainer import constants as c
from trainer.operator import plan, resolution, spec, status
from trainer.tests import factories as f

NOW = datetime(2026, 6, 1, 8, 0, 0, tzinfo=UTC)
CREATED = NOW - timedelta(seconds=30)


def planned(job: dict[str, Any], runtime: dict[str, Any]) -> tuple[spec.TrainJob, plan.Plan, dict, list]:
    parsed = spec.parse_train_job(job)
    resolved = resolution.resolve(parsed, spec.parse_runtime(runtime))
    replicas = {rjob.name: rjob.replicas for rjob in resolved.replicated_jobs}
    trainers = [rjob.name for rjob in resolved.replicated_jobs if rjob.ancestor == c.ANCESTOR_TRAINER]
    return parsed, plan.plan(resolved), replicas, trainers


def with_phase(pod: dict[str, Any], phase: str, *, ready: bool = False, deleting: bool = False) -> dict:
    pod = {**pod, "metadata": {**pod["metadata"], "uid": "u-" + pod["metadata"]["name"]}}
    pod["status"] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-06-01T08:00:00Z"
    return pod


def decide(job, runtime, pods=(), previous=None, *, now=NOW, created_at=CREATED) -> status.Outcome:
    parsed, desired, replicas, trainers = planned(job, runtime)
    return status.decide(
        parsed, desired, replicas, trainers, list(pods), previous or {}, created_at=created_at, now=now
    )


def torch(nodes: int = 2, **spec_fields: Any) -> tuple[dict, dict]:
    return f.train_job(trainer={"numNodes": nodes}, **spec_fields), f.torch_runtime()


def names(pods) -> list[str]:
    return [pod["metadata"]["name"] for pod in pods]


def condition(outcome: status.Outcome, type_: str) -> dict[str, Any] | None:
    return next((c for c in outcome.status.get("conditions", []) if c["type"] == type_), None)


def all_pods(job, runtime, phase: str, **kwargs: Any) -> list[dict]:
    _, desired, _, _ = planned(job, runtime)
    return [with_phase(pod, phase, **kwargs) for pod in desired.pods]


# --- A new TrainJob -------------------------------------------------------------------------------------
def test_a_new_torch_job_creates_every_node_and_reports_its_replicated_job_with_zero_counts():
    outcome = decide(*torch(2))
    assert names(outcome.create) == ["test-job-node-0-0", "test-job-node-0-1"]
    assert outcome.status == {
        "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}]
    }
    assert outcome.delete == ()
    assert outcome.requeue_after is None


def test_pods_that_exist_are_not_created_again():
    job, runtime = torch(2)
    first = all_pods(job, runtime, "Running")[:1]
    assert names(decide(job, runtime, first).create) == ["test-job-node-0-1"]


def test_the_previous_status_keeps_what_others_wrote_such_as_the_trainer_progress():
    job, runtime = torch(1)
    previous = {"trainerStatus": {"progressPercentage": 40}}
    assert decide(job, runtime, previous=previous).status["trainerStatus"] == {"progressPercentage": 40}


# --- Counting Jobs as JobSet does -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        (["Pending", "Pending"], {"ready": 0, "succeeded": 0, "failed": 0, "active": 1}),
        (["Running", "Running"], {"ready": 0, "succeeded": 0, "failed": 0, "active": 1}),
        (["Running!", "Running!"], {"ready": 1, "succeeded": 0, "failed": 0, "active": 1}),
        (["Running!", "Succeeded"], {"ready": 1, "succeeded": 0, "failed": 0, "active": 1}),
        (["Succeeded", "Succeeded"], {"ready": 0, "succeeded": 1, "failed": 0, "active": 0}),
        (["Succeeded", "Failed"], {"ready": 0, "succeeded": 0, "failed": 1, "active": 0}),
        (["Running!", "Failed"], {"ready": 0, "succeeded": 0, "failed": 1, "active": 0}),
    ],
)
def test_a_replicated_job_counts_its_one_job_by_the_phases_of_its_pods(phases, expected):
    """`!` marks a ready pod. A Job is ready when ready + succeeded pods cover it, done when all succeeded,
    failed when one failed."""
    job, runtime = torch(2)
    _, desired, replicas, _ = planned(job, runtime)
    pods = [
        with_phase(pod, phase.rstrip("!"), ready=phase.endswith("!"))
        for pod, phase in zip(desired.pods, phases, strict=True)
    ]
    (state,) = status.job_states(desired, replicas, pods, suspended=False)
    assert {key: getattr(state, key) for key in expected} == expected


def restarted(pod: dict[str, Any], phase: str, *counts: int, init: int = 0) -> dict[str, Any]:
    """The pod in `phase` whose containers restarted `counts` times each (its init container `init`)."""
    pod = with_phase(pod, phase)
    pod["status"]["containerStatuses"] = [{"name": f"c{i}", "restartCount": n} for i, n in enumerate(counts)]
    pod["status"]["initContainerStatuses"] = [{"name": "init", "restartCount": init}]
    return pod


def backoff_runtime(limit: int | None, restart_policy: str | None = None) -> dict[str, Any]:
    runtime = f.torch_runtime()
    job_spec = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    if limit is not None:
        job_spec["backoffLimit"] = limit
    if restart_policy is not None:
        job_spec["template"]["spec"]["restartPolicy"] = restart_policy
    return runtime


@pytest.mark.parametrize(
    ("limit", "restarts", "failed"),
    [
        (None, (5,), 0),  # Kubernetes' default backoffLimit is 6
        (None, (6,), 1),
        (None, (3, 3), 1),  # every container's restarts count
        (2, (1,), 0),
        (2, (2,), 1),
        (0, (0,), 0),  # a limit of 0 fails at the first restart
        (0, (1,), 1),
    ],
)
def test_under_on_failure_a_job_fails_once_its_running_pods_restarted_as_often_as_its_backoff_limit(
    limit, restarts, failed
):
    """The Job controller's pastBackoffLimitOnFailure: a crashing trainer restarted in place does not loop
    for ever (issue 32: Kubeflow's SDK waited for a Failed that never came)."""
    job = f.train_job(trainer={"numNodes": 1})
    _, desired, replicas, _ = planned(job, backoff_runtime(limit))
    (state,) = status.job_states(
        desired, replicas, [restarted(desired.pods[0], "Running", *restarts)], suspended=False
    )
    assert state.failed == failed


def test_init_container_restarts_count_and_finished_pods_do_not():
    job = f.train_job(trainer={"numNodes": 2})
    _, desired, replicas, _ = planned(job, backoff_runtime(2))
    running = restarted(desired.pods[0], "Running", 0, init=2)
    (state,) = status.job_states(desired, replicas, [running, desired.pods[1]], suspended=False)
    assert state.failed == 1
    done = restarted(desired.pods[0], "Succeeded", 5)
    (state,) = status.job_states(
        desired, replicas, [done, with_phase(desired.pods[1], "Running")], suspended=False
    )
    assert state.failed == 0


def test_under_never_restarts_do_not_count_and_a_failed_pod_fails_its_job():
    job = f.train_job(trainer={"numNodes": 1})
    _, desired, replicas, _ = planned(job, backoff_runtime(1, "Never"))
    assert desired.steps[0].restarts_to_fail is None
    (state,) = status.job_states(
        desired, replicas, [restarted(desired.pods[0], "Running", 9)], suspended=False
    )
    assert state.failed == 0


def test_a_trainjob_whose_trainer_crashes_past_its_backoff_limit_fails_and_its_pods_are_stopped():
    job = f.train_job(trainer={"numNodes": 2})
    runtime = backoff_runtime(3)
    _, desired, _, _ = planned(job, runtime)
    pods = [restarted(desired.pods[0], "Running", 3), with_phase(desired.pods[1], "Running")]
    outcome = decide(job, runtime, pods)
    failed = condition(outcome, "Failed")
    assert failed is not None
    assert (failed["status"], failed["reason"]) == ("True", "FailedJobs")
    assert names(outcome.delete) == ["test-job-node-0-0", "test-job-node-0-1"]
    assert outcome.create == ()


def test_a_pod_being_deleted_counts_neither_as_active_nor_as_ready():
    job, runtime = torch(1)
    _, desired, replicas, _ = planned(job, runtime)
    pods = [with_phase(desired.pods[0], "Running", ready=True, deleting=True)]
    (state,) = status.job_states(desired, replicas, pods, suspended=False)
    assert (state.active, state.ready) == (0, 0)


def test_replicas_of_a_plain_replicated_job_are_counted_as_separate_jobs():
    runtime = f.runtime(f.replicated_job("worker", replicas=3))
    job = f.train_job()
    _, desired, replicas, _ = planned(job, runtime)
    pods = [with_phase(pod, "Succeeded") for pod in desired.pods[:2]] + [
        with_phase(desired.pods[2], "Running")
    ]
    (state,) = status.job_states(desired, replicas, pods, suspended=False)
    assert (state.replicas, state.succeeded, state.active) == (3, 2, 1)
    assert not state.reached("Complete")
    assert not state.reached("Ready")


def test_jobs_status_follows_the_runtimes_order_not_the_step_order():
    """A trainer listed before an initializer, with no dependsOn, still waits for it (plan's step order)."""
    runtime = f.runtime(
        f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER),
        f.replicated_job(
            "dataset-initializer", f.container("dataset-initializer"), ancestor=c.DATASET_INITIALIZER
        ),
        ml_policy={"numNodes": 1, "torch": {}},
    )
    job = f.train_job()
    _, desired, _, _ = planned(job, runtime)
    assert [step.name for step in desired.steps] == ["dataset-initializer", "node"]
    outcome = decide(job, runtime)
    assert [entry["name"] for entry in outcome.status["jobsStatus"]] == ["node", "dataset-initializer"]
    assert names(outcome.create) == ["test-job-dataset-initializer-0-0"]


def test_a_suspended_job_counts_its_unfinished_jobs_as_suspended():
    job, runtime = torch(2, suspend=True)
    outcome = decide(job, runtime)
    assert outcome.status["jobsStatus"][0]["suspended"] == 1


# --- Steps and their dependencies -----------------------------------------------------------------------
def initializer_runtime() -> dict[str, Any]:
    return f.runtime(
        f.replicated_job(
            "dataset-initializer", f.container("dataset-initializer"), ancestor="dataset-initializer"
        ),
        f.replicated_job("model-initializer", f.container("model-initializer"), ancestor="model-initializer"),
        f.replicated_job(
            "node",
            f.container(),
            ancestor=c.ANCESTOR_TRAINER,
            depends_on=[("dataset-initializer", "Complete"), ("model-initializer", "Complete")],
        ),
        ml_policy={"numNodes": 2, "torch": {}},
    )


def test_initializers_run_first_and_the_trainer_waits_until_both_complete():
    job, runtime = f.train_job(), initializer_runtime()
    _, desired, _, _ = planned(job, runtime)
    assert names(decide(job, runtime).create) == [
        "test-job-dataset-initializer-0-0",
        "test-job-model-initializer-0-0",
    ]
    dataset, model = (with_phase(desired.pod(n), "Succeeded") for n in names(decide(job, runtime).create))
    running_model = {**model, "status": {"phase": "Running"}}
    assert decide(job, runtime, [dataset, running_model]).create == ()
    assert names(decide(job, runtime, [dataset, model]).create) == ["test-job-node-0-0", "test-job-node-0-1"]


def test_a_dependency_on_ready_is_met_once_every_pod_is_ready_as_mpi_launchers_wait_for_their_nodes():
    job = f.train_job(trainer={"numNodes": 2})
    runtime = f.runtime(
        f.replicated_job("node", f.container()),
        f.replicated_job(
            "launcher", f.container(), ancestor=c.ANCESTOR_TRAINER, depends_on=[("node", "Ready")]
        ),
        ml_policy={"numNodes": 2, "mpi": {}},
    )
    _, desired, _, _ = planned(job, runtime)
    assert names(decide(job, runtime).create) == ["test-job-node-0-0", "test-job-node-0-1"]
    nodes = [desired.pod("test-job-node-0-0"), desired.pod("test-job-node-0-1")]
    half = [with_phase(nodes[0], "Running", ready=True), with_phase(nodes[1], "Running")]
    assert decide(job, runtime, half).create == ()
    ready = [with_phase(node, "Running", ready=True) for node in nodes]
    assert names(decide(job, runtime, ready).create) == ["test-job-launcher-0-0"]


# --- Complete -------------------------------------------------------------------------------------------
def test_every_trainer_pod_succeeded_completes_the_job_with_jobsets_reason_and_message():
    job, runtime = torch(2)
    outcome = decide(job, runtime, all_pods(job, runtime, "Succeeded"))
    assert condition(outcome, "Complete") == {
        "type": "Complete",
        "status": "True",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
        "lastTransitionTime": "2026-06-01T08:00:00Z",
    }
    assert outcome.create == ()
    assert outcome.delete == ()


def test_an_mpi_job_completes_with_its_launcher_and_its_running_nodes_are_deleted():
    job = f.train_job(trainer={"numNodes": 2})
    runtime = f.mpi_runtime(2)
    _, desired, _, _ = planned(job, runtime)
    pods = [
        with_phase(pod, "Running", ready=True) for pod in desired.pods if "-node-" in pod["metadata"]["name"]
    ]
    pods.append(with_phase(desired.pod("test-job-launcher-0-0"), "Succeeded"))
    outcome = decide(job, runtime, pods)
    assert condition(outcome, "Complete")["status"] == "True"
    assert names(outcome.delete) == ["test-job-node-0-0", "test-job-node-0-1"]
    assert outcome.delete_reason == "jobset completed successfully"


def test_a_finished_job_keeps_its_conditions_and_creates_nothing_even_with_pods_gone():
    job, runtime = torch(2)
    done = decide(job, runtime, all_pods(job, runtime, "Succeeded"), now=NOW)
    later = decide(job, runtime, [], done.status, now=NOW + timedelta(hours=1))
    assert later.status["conditions"] == done.status["conditions"]
    assert later.create == ()


# --- Failed ---------------------------------------------------------------------------------------------
def test_a_failed_pod_fails_the_job_as_jobset_does_with_no_failure_policy_and_stops_the_others():
    job, runtime = torch(2)
    pods = all_pods(job, runtime, "Running", ready=True)
    pods[1] = with_phase(pods[1], "Failed")
    outcome = decide(job, runtime, pods)
    failed = condition(outcome, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "FailedJobs",
        "jobset failed due to one or more job failures",
    )
    assert names(outcome.delete) == ["test-job-node-0-0"]
    assert outcome.status["jobsStatus"][0]["failed"] == 1


def test_an_initializer_that_fails_fails_the_job_and_the_trainer_never_starts():
    job, runtime = f.train_job(), initializer_runtime()
    _, desired, _, _ = planned(job, runtime)
    pods = [
        with_phase(desired.pod("test-job-dataset-initializer-0-0"), "Failed"),
        with_phase(desired.pod("test-job-model-initializer-0-0"), "Succeeded"),
    ]
    outcome = decide(job, runtime, pods)
    assert condition(outcome, "Failed")["status"] == "True"
    assert outcome.create == ()


# --- activeDeadlineSeconds ------------------------------------------------------------------------------
def test_a_running_job_with_a_deadline_asks_to_be_looked_at_when_it_runs_out():
    job, runtime = torch(1, activeDeadlineSeconds=60)
    outcome = decide(job, runtime, all_pods(job, runtime, "Running"))
    assert outcome.requeue_after == 30.0
    assert condition(outcome, "Failed") is None


def test_past_its_deadline_a_job_fails_with_trainers_reason_and_its_pods_are_deleted():
    job, runtime = torch(2, activeDeadlineSeconds=20)
    outcome = decide(job, runtime, all_pods(job, runtime, "Running"))
    failed = condition(outcome, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded",
        "TrainJob exceeded its active deadline",
    )
    assert names(outcome.delete) == ["test-job-node-0-0", "test-job-node-0-1"]
    assert outcome.delete_reason == "TrainJob exceeded its active deadline"


def test_the_deadline_counts_from_the_last_resume_not_from_creation():
    job, runtime = torch(1, activeDeadlineSeconds=20)
    resumed = {"type": "Suspended", "status": "False", "reason": "Resumed", "message": "TrainJob is resumed",
               "lastTransitionTime": "2026-06-01T07:59:50Z"}  # fmt: skip
    outcome = decide(job, runtime, all_pods(job, runtime, "Running"), {"conditions": [resumed]})
    assert condition(outcome, "Failed") is None
    assert outcome.requeue_after == 10.0


def test_exactly_at_its_deadline_a_job_still_runs_as_in_trainer():
    job, runtime = torch(1, activeDeadlineSeconds=30)
    assert condition(decide(job, runtime, all_pods(job, runtime, "Running")), "Failed") is None


def test_a_suspended_job_has_no_deadline():
    job, runtime = torch(1, activeDeadlineSeconds=1, suspend=True)
    outcome = decide(job, runtime)
    assert condition(outcome, "Failed") is None
    assert outcome.requeue_after is None


def test_a_job_that_completed_is_not_failed_by_its_deadline_afterwards():
    job, runtime = torch(1, activeDeadlineSeconds=10)
    outcome = decide(job, runtime, all_pods(job, runtime, "Succeeded"))
    assert condition(outcome, "Complete")["status"] == "True"
    assert condition(outcome, "Failed") is None


# --- Suspend and resume ---------------------------------------------------------------------------------
def test_suspending_a_running_job_deletes_its_unfinished_pods_and_says_suspended():
    job, runtime = torch(2, suspend=True)
    pods = all_pods(*torch(2), "Running")
    pods[0] = with_phase(pods[0], "Succeeded")
    outcome = decide(job, runtime, pods)
    assert condition(outcome, "Suspended") == {
        "type": "Suspended",
        "status": "True",
        "reason": "Suspended",
        "message": "TrainJob is suspended",
        "lastTransitionTime": "2026-06-01T08:00:00Z",
    }
    assert names(outcome.delete) == ["test-job-node-0-1"]
    assert outcome.delete_reason == "TrainJob is suspended"
    assert outcome.create == ()


def test_resuming_flips_suspended_to_false_with_trainers_reason_and_recreates_the_pods():
    job, runtime = torch(2)
    suspended = decide(*torch(2, suspend=True), now=NOW - timedelta(seconds=5)).status
    outcome = decide(job, runtime, [], suspended)
    resumed = condition(outcome, "Suspended")
    assert (resumed["status"], resumed["reason"], resumed["message"]) == (
        "False",
        "Resumed",
        "TrainJob is resumed",
    )
    assert resumed["lastTransitionTime"] == "2026-06-01T08:00:00Z"
    assert names(outcome.create) == ["test-job-node-0-0", "test-job-node-0-1"]


def test_a_job_never_suspended_has_no_suspended_condition():
    assert condition(decide(*torch(1)), "Suspended") is None


def test_a_condition_that_keeps_its_status_keeps_its_transition_time():
    job, runtime = torch(1, suspend=True)
    first = decide(job, runtime, now=NOW).status
    again = decide(job, runtime, [], first, now=NOW + timedelta(minutes=5))
    assert condition(again, "Suspended")["lastTransitionTime"] == "2026-06-01T08:00:00Z"


def test_conditions_are_kept_in_the_order_they_first_appeared():
    job, runtime = torch(1)
    previous = decide(*torch(1, suspend=True)).status
    done = decide(job, runtime, all_pods(job, runtime, "Succeeded"), previous)
    assert [c["type"] for c in done.status["conditions"]] == ["Suspended", "Complete"]


def test_a_job_past_its_bounds_fails_naming_them_and_keeps_what_others_wrote():
    previous = {"trainerStatus": {"progressPercentage": 5}}
    message = "spec.trainer.numNodes: must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000"

    failed = status.failed_past_limits(previous, message, NOW)

    assert failed["trainerStatus"] == {"progressPercentage": 5}
    assert failed["conditions"] == [
        {
            "type": "Failed",
            "status": "True",
            "reason": "LimitExceeded",
            "message": message,
            "lastTransitionTime": "2026-06-01T08:00:00Z",
        }
    ]
    assert status.failed_past_limits(failed, message, NOW + timedelta(hours=1)) == failed


def test_a_finished_job_keeps_its_ending_when_a_lowered_bound_is_past():
    done = {"conditions": [{"type": "Complete", "status": "True", "reason": "AllJobsCompleted"}]}
    assert status.failed_past_limits(done, "spec.trainer.numNodes: …", NOW) == done
