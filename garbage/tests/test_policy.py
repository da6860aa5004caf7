"""The pure rules: what is garbage, measured from when it finished, in which namespaces."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from garbage.policy import (
    JobState,
    NamespaceOverride,
    Owner,
    OwnerRef,
    Reason,
    Rules,
    finish_time,
    is_namespace_name,
    job_finish_time,
    job_owner_reference,
    judge_job_child,
    judge_workflow_pod,
    parse_time,
    pod_outcome,
)

from .factories import DAY, HOUR, START, finished_job_status, pod, pod_status, stamp, workflow_pod

NOW = START
RULES = Rules(succeeded_seconds=HOUR, failed_seconds=DAY)
JOB_KINDS = ("TFJob", "MXJob", "PyTorchJob")


def ago(seconds: float) -> str:
    return stamp(NOW - timedelta(seconds=seconds))


# --- finish time -------------------------------------------------------------------------------------


def test_finish_time_is_the_last_container_to_terminate():
    status = {
        "phase": "Succeeded",
        "containerStatuses": [
            {"name": "wait", "state": {"terminated": {"finishedAt": ago(100)}}},
            {"name": "main", "state": {"terminated": {"finishedAt": ago(300)}}},
        ],
        "initContainerStatuses": [{"name": "init", "state": {"terminated": {"finishedAt": ago(900)}}}],
    }
    assert finish_time({"status": status}) == NOW - timedelta(seconds=100)


def test_finish_time_counts_init_containers_when_the_main_ones_never_ran():
    status = {
        "phase": "Failed",
        "initContainerStatuses": [{"name": "init", "state": {"terminated": {"finishedAt": ago(50)}}}],
        "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}],
    }
    assert finish_time({"status": status}) == NOW - timedelta(seconds=50)


def test_finish_time_falls_back_to_when_the_pod_stopped_being_ready():
    status = {
        "phase": "Failed",
        "reason": "Evicted",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": ago(5000)},
            {"type": "Ready", "status": "False", "lastTransitionTime": ago(700)},
            {"type": "ContainersReady", "status": "False", "lastTransitionTime": ago(600)},
        ],
    }
    assert finish_time({"status": status}) == NOW - timedelta(seconds=600)


def test_finish_time_ignores_conditions_that_are_still_true():
    status = {
        "phase": "Failed",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ago(9)}],
    }
    assert finish_time({"status": status}) is None


def test_finish_time_is_never_the_creation_time():
    old = pod("p", status={"phase": "Succeeded"})
    old["metadata"]["creationTimestamp"] = ago(30 * DAY)
    assert finish_time(old) is None


@pytest.mark.parametrize(
    "status",
    [
        None,
        "Succeeded",
        {"containerStatuses": "nope"},
        {"containerStatuses": [{"state": {"terminated": {"finishedAt": "yesterday"}}}]},
        {"containerStatuses": [{"state": {"terminated": None}}]},
        {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": 12}]},
    ],
)
def test_finish_time_of_malformed_statuses_is_unknown(status: Any):
    assert finish_time({"status": status}) is None


def test_parse_time_reads_api_timestamps_and_rejects_the_rest():
    assert parse_time("2024-05-01T12:00:00Z") == START
    assert parse_time("2024-05-01T12:00:00") == START
    assert parse_time("") is None
    assert parse_time(None) is None
    assert parse_time("not a time") is None


# --- outcome --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "completed", "outcome"),
    [
        ("Succeeded", None, "Succeeded"),
        ("Failed", None, "Failed"),
        ("Pending", None, None),
        ("Running", None, None),
        ("Running", "true", None),
        ("Pending", "true", None),
        ("Unknown", None, None),
        ("Unknown", "true", "Failed"),
        (None, "true", "Failed"),
        ("Unknown", "false", None),
        ("Succeeded", "false", "Succeeded"),
    ],
)
def test_pod_outcome(phase: str | None, completed: str | None, outcome: str | None):
    labels = {} if completed is None else {"workflows.argoproj.io/completed": completed}
    status = {} if phase is None else {"phase": phase}
    assert pod_outcome(pod("p", labels=labels, status=status)) == outcome


# --- workflow pods ---------------------------------------------------------------------------------


def test_a_succeeded_pod_past_its_retention_is_deleted():
    verdict = judge_workflow_pod(workflow_pod("p", finished_ago=HOUR + 1), NOW, RULES)
    assert verdict == (True, Reason.WORKFLOW_SUCCEEDED, HOUR + 1)


def test_a_succeeded_pod_is_deleted_exactly_at_its_retention():
    assert judge_workflow_pod(workflow_pod("p", finished_ago=HOUR), NOW, RULES).delete


def test_a_succeeded_pod_within_its_retention_is_kept_with_its_age():
    verdict = judge_workflow_pod(workflow_pod("p", finished_ago=HOUR - 1), NOW, RULES)
    assert verdict == (False, Reason.WITHIN_RETENTION, HOUR - 1)


def test_a_failed_pod_has_the_longer_failed_retention():
    assert not judge_workflow_pod(workflow_pod("p", phase="Failed", finished_ago=2 * HOUR), NOW, RULES).delete
    verdict = judge_workflow_pod(workflow_pod("p", phase="Failed", finished_ago=DAY), NOW, RULES)
    assert verdict == (True, Reason.WORKFLOW_FAILED, DAY)


@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_pending_or_running_pod_is_never_deleted(phase: str):
    old = workflow_pod("p", phase=phase, extra_labels={"workflows.argoproj.io/completed": "true"})
    old["metadata"]["creationTimestamp"] = ago(365 * DAY)
    assert judge_workflow_pod(old, NOW, RULES) == (False, Reason.NOT_FINISHED, None)


def test_a_pod_in_unknown_phase_that_argo_marked_completed_is_collected_as_failed():
    unknown = workflow_pod(
        "p", phase="Unknown", finished_ago=DAY, extra_labels={"workflows.argoproj.io/completed": "true"}
    )
    assert judge_workflow_pod(unknown, NOW, RULES) == (True, Reason.WORKFLOW_FAILED, DAY)


def test_a_pod_in_unknown_phase_without_argo_s_completed_label_is_kept():
    unknown = workflow_pod("p", phase="Unknown", finished_ago=DAY)
    assert judge_workflow_pod(unknown, NOW, RULES).reason == Reason.NOT_FINISHED


def test_a_pod_without_the_workflow_label_is_never_deleted():
    unlabelled = pod("p", labels={"app": "x"}, status=pod_status("Succeeded", NOW - timedelta(days=30)))
    assert judge_workflow_pod(unlabelled, NOW, RULES) == (False, Reason.NOT_LABELLED, None)


def test_a_finished_pod_whose_finish_time_is_unknown_is_kept():
    assert (
        judge_workflow_pod(workflow_pod("p", finished_ago=None), NOW, RULES).reason
        == Reason.FINISH_TIME_UNKNOWN
    )


def test_a_pod_already_terminating_is_left_to_finish():
    terminating = workflow_pod("p", finished_ago=DAY)
    terminating["metadata"]["deletionTimestamp"] = ago(10)
    assert judge_workflow_pod(terminating, NOW, RULES).reason == Reason.TERMINATING


def test_a_pod_that_finished_in_the_future_by_clock_skew_is_within_retention():
    skewed = workflow_pod("p", finished_ago=-60)
    assert judge_workflow_pod(skewed, NOW, RULES) == (False, Reason.WITHIN_RETENTION, -60)


# --- namespaces and overrides ------------------------------------------------------------------------


def test_every_namespace_is_included_by_default():
    assert RULES.includes("default")
    assert RULES.includes("team-a")


def test_an_allow_list_admits_only_its_namespaces_and_patterns():
    rules = Rules(HOUR, DAY, allow=("research", "team-*"))
    assert rules.includes("research")
    assert rules.includes("team-a")
    assert not rules.includes("default")
    assert not rules.includes("research-2")


def test_the_deny_list_wins_over_the_allow_list():
    rules = Rules(HOUR, DAY, allow=("team-*",), deny=("team-secret", "kube-*"))
    assert rules.includes("team-a")
    assert not rules.includes("team-secret")
    assert not Rules(HOUR, DAY, deny=("kube-*",)).includes("kube-system")


def test_an_excluded_namespace_keeps_everything():
    rules = Rules(HOUR, DAY, overrides={"precious": NamespaceOverride(excluded=True)})
    verdict = judge_workflow_pod(workflow_pod("p", "precious", finished_ago=30 * DAY), NOW, rules)
    assert verdict == (False, Reason.NAMESPACE_EXCLUDED, None)


def test_a_namespace_override_replaces_only_the_retentions_it_sets():
    rules = Rules(HOUR, DAY, overrides={"fast": NamespaceOverride(succeeded_seconds=60)})
    assert rules.retention_seconds("fast", succeeded=True) == 60
    assert rules.retention_seconds("fast", succeeded=False) == DAY
    assert rules.retention_seconds("default", succeeded=True) == HOUR
    assert judge_workflow_pod(workflow_pod("p", "fast", finished_ago=61), NOW, rules).delete
    assert not judge_workflow_pod(workflow_pod("p", "default", finished_ago=61), NOW, rules).delete


def test_a_zero_retention_collects_as_soon_as_the_pod_finished():
    rules = Rules(0, 0)
    assert judge_workflow_pod(workflow_pod("p", finished_ago=0), NOW, rules).delete


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"succeeded_seconds": -1, "failed_seconds": 1}, "succeeded_seconds"),
        ({"succeeded_seconds": 1, "failed_seconds": 1.5}, "failed_seconds"),
        ({"succeeded_seconds": True, "failed_seconds": 1}, "succeeded_seconds"),
        ({"succeeded_seconds": 1, "failed_seconds": 1, "allow": ("",)}, "allow"),
        ({"succeeded_seconds": 1, "failed_seconds": 1, "deny": (" ",)}, "deny"),
    ],
)
def test_bad_rules_name_the_field(arguments: dict[str, Any], field: str):
    with pytest.raises(ValueError, match=field):
        Rules(**arguments)


def test_a_negative_override_names_the_field():
    with pytest.raises(ValueError, match="failed_seconds"):
        NamespaceOverride(failed_seconds=-5)


@pytest.mark.parametrize(
    ("text", "valid"),
    [("default", True), ("team-a", True), ("a" * 63, True), ("a" * 64, False), ("Team", False),
     ("-a", False), ("a-", False), ("a_b", False), ("", False), ("ns\n", False)],
)  # fmt: skip
def test_namespace_names(text: str, valid: bool):
    assert is_namespace_name(text) is valid


# --- jobs and their children -------------------------------------------------------------------------


def job_state(
    *, finished: bool = True, clean_pod_policy: str = "All", finished_ago: float = HOUR
) -> JobState:
    return JobState(
        kind="TFJob",
        namespace="default",
        name="train",
        uid="job-uid",
        finished_at=NOW - timedelta(seconds=finished_ago) if finished else None,
        finished=finished,
        clean_pod_policy=clean_pod_policy,
    )


def job_pod(phase: str = "Succeeded", finished_ago: float | None = 100, **labels: str) -> dict[str, Any]:
    finished_at = None if finished_ago is None else NOW - timedelta(seconds=finished_ago)
    return pod(
        "train-worker-0",
        labels={"argoml.io/job-name": "train", **labels},
        status=pod_status(phase, finished_at),
    )


def job_service() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "train-worker-0",
            "namespace": "default",
            "labels": {"argoml.io/job-name": "train"},
        }
    }


def test_a_finished_job_with_clean_pod_policy_all_loses_its_finished_pods_and_services():
    assert judge_job_child("Pod", job_pod(), job_state(), NOW, RULES) == (
        True,
        Reason.JOB_CLEAN_POD_POLICY,
        100,
    )
    verdict = judge_job_child("Service", job_service(), job_state(finished_ago=500), NOW, RULES)
    assert verdict == (True, Reason.JOB_CLEAN_POD_POLICY, 500)


@pytest.mark.parametrize("policy", ["Running", "None"])
def test_other_clean_pod_policies_keep_the_finished_children(policy: str):
    assert judge_job_child("Pod", job_pod(), job_state(clean_pod_policy=policy), NOW, RULES).reason == (
        Reason.CLEAN_POD_POLICY_KEEPS
    )
    assert not judge_job_child(
        "Service", job_service(), job_state(clean_pod_policy=policy), NOW, RULES
    ).delete


def test_the_children_of_a_job_still_running_are_kept():
    verdict = judge_job_child("Service", job_service(), job_state(finished=False), NOW, RULES)
    assert verdict == (False, Reason.JOB_NOT_FINISHED, None)


@pytest.mark.parametrize("owner", [Owner.GONE, "job"])
@pytest.mark.parametrize("phase", ["Pending", "Running"])
def test_a_running_job_pod_is_never_deleted_even_when_orphaned_or_cleaned(phase: str, owner: Any):
    owner = job_state() if owner == "job" else owner
    assert judge_job_child("Pod", job_pod(phase, None), owner, NOW, RULES).reason == Reason.NOT_FINISHED


def test_orphans_are_deleted():
    assert judge_job_child("Pod", job_pod(), Owner.GONE, NOW, RULES) == (True, Reason.ORPHAN, 100)
    assert judge_job_child("Service", job_service(), Owner.GONE, NOW, RULES) == (True, Reason.ORPHAN, None)


def test_a_child_whose_owner_could_not_be_read_is_kept():
    assert judge_job_child("Service", job_service(), Owner.UNKNOWN, NOW, RULES).reason == Reason.OWNER_UNKNOWN


def test_an_ownerless_child_of_an_existing_job_is_not_that_job_s_to_clean():
    assert judge_job_child("Service", job_service(), Owner.NOT_CONTROLLED, NOW, RULES).reason == (
        Reason.NOT_CONTROLLED
    )


def test_job_children_need_the_job_label_and_an_included_namespace():
    unlabelled = pod("x", status=pod_status("Succeeded", NOW))
    assert judge_job_child("Pod", unlabelled, Owner.GONE, NOW, RULES).reason == Reason.NOT_LABELLED
    rules = Rules(HOUR, DAY, deny=("default",))
    assert (
        judge_job_child("Service", job_service(), Owner.GONE, NOW, rules).reason == Reason.NAMESPACE_EXCLUDED
    )


def test_a_workflow_pod_that_also_names_a_job_is_left_to_the_workflow_rules():
    both = job_pod(**{"workflows.argoproj.io/workflow": "wf"})
    assert judge_job_child("Pod", both, Owner.GONE, NOW, RULES).reason == Reason.WORKFLOW_POD


def test_a_terminating_child_is_left_alone():
    service = job_service()
    service["metadata"]["deletionTimestamp"] = ago(1)
    assert judge_job_child("Service", service, Owner.GONE, NOW, RULES).reason == Reason.TERMINATING


def test_job_state_reads_kind_policy_and_finish():
    job = {
        "kind": "TFJob",
        "metadata": {"name": "train", "namespace": "ml", "uid": "u1"},
        "spec": {"tfReplicaSpecs": {}, "runPolicy": {"cleanPodPolicy": "All"}},
        "status": finished_job_status(NOW - timedelta(hours=2), "Failed"),
    }
    assert JobState.from_job(job) == JobState(
        "TFJob", "ml", "train", "u1", NOW - timedelta(hours=2), True, "All"
    )


@pytest.mark.parametrize(
    ("kind", "default"), [("TFJob", "Running"), ("PyTorchJob", "None"), ("MXJob", "None")]
)
def test_job_state_defaults_the_clean_pod_policy_as_the_operator_does(kind: str, default: str):
    job = {"kind": kind, "metadata": {"name": "j", "uid": "u"}, "spec": {}}
    state = JobState.from_job(job)
    assert state.clean_pod_policy == default
    assert not state.finished
    assert state.finished_at is None


def test_job_state_of_an_unknown_kind_cleans_nothing():
    assert JobState.from_job({"kind": "Mystery", "metadata": {}}).clean_pod_policy == "None"


def test_job_finish_time_falls_back_to_the_finished_condition():
    status = finished_job_status(NOW - timedelta(minutes=5))
    del status["completionTime"]
    assert job_finish_time(status) == NOW - timedelta(minutes=5)
    assert (
        job_finish_time({"conditions": [{"type": "Running", "status": "True", "lastTransitionTime": ago(1)}]})
        is None
    )


def test_the_owner_reference_must_be_a_controller_reference_to_one_of_our_job_kinds():
    def child(*references: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"ownerReferences": list(references)}}

    ours = {"apiVersion": "argoml.io/v1alpha1", "kind": "TFJob", "name": "t", "uid": "u", "controller": True}
    assert job_owner_reference(child(ours), JOB_KINDS) == OwnerRef("TFJob", "t", "u")
    assert job_owner_reference(child({**ours, "controller": False}), JOB_KINDS) is None
    assert job_owner_reference(child({**ours, "apiVersion": "kubeflow.org/v1"}), JOB_KINDS) is None
    assert job_owner_reference(child({**ours, "kind": "Workflow"}), JOB_KINDS) is None
    assert job_owner_reference({"metadata": {}}, JOB_KINDS) is None
