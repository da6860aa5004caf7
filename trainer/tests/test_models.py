"""The mirror rows' columns from a TrainJob and its pods as the API returns them (no database needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from trainer.models import TrainJob, TrainJobPod


def train_job(
    status: dict | None = None, annotations: dict | None = None, labels: dict | None = None
) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": "mnist", "namespace": "team", "uid": "u1", "resourceVersion": "7", "generation": 2,
            "creationTimestamp": "2026-06-01T08:00:00Z", "annotations": annotations or {},
            "labels": labels or {},
        },
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
        "status": status or {},
    }  # fmt: skip


def cond(type_: str, status: str = "True", reason: str = "", at: str = "2026-06-01T08:05:00Z") -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": f"{type_} says so",
            "lastTransitionTime": at}  # fmt: skip


def job_status(name: str, **counts: int) -> dict:
    return {"name": name, "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0, **counts}


@pytest.mark.parametrize(
    ("status", "phase"),
    [
        ({}, "Created"),
        ({"jobsStatus": [job_status("node")]}, "Created"),
        ({"jobsStatus": [job_status("node", active=1)]}, "Running"),
        ({"conditions": [cond("Suspended")], "jobsStatus": [job_status("node", suspended=1)]}, "Suspended"),
        (
            {"conditions": [cond("Suspended", "False")], "jobsStatus": [job_status("node", active=1)]},
            "Running",
        ),
        ({"conditions": [cond("Complete")]}, "Complete"),
        ({"conditions": [cond("Suspended"), cond("Failed")]}, "Failed"),
        ({"conditions": "not a list", "jobsStatus": "nor this"}, "Created"),
    ],
)
def test_the_phase_is_the_terminal_condition_else_suspended_else_running_while_a_step_is_active(
    status, phase
):
    assert TrainJob.observed_fields(train_job(status))["phase"] == phase


def test_a_trainjob_row_names_its_runtime_generation_steps_progress_and_times():
    status = {
        "conditions": [
            cond("Suspended", "False", "Resumed", "2026-06-01T08:01:00Z"),
            cond("Complete", reason="AllJobsCompleted"),
        ],
        "jobsStatus": [job_status("dataset-initializer", succeeded=1), job_status("node", succeeded=1)],
        "trainerStatus": {"progressPercentage": 100, "estimatedRemainingSeconds": 0},
    }  # fmt: skip
    fields = TrainJob.observed_fields(train_job(status, {"argoml.io/runtime-generation": "3"}))
    assert (fields["runtime_kind"], fields["runtime_name"]) == ("ClusterTrainingRuntime", "torch-distributed")
    assert fields["runtime_generation"] == 3
    assert fields["steps_summary"] == "dataset-initializer 1 succeeded · node 1 succeeded"
    assert (fields["state_reason"], fields["state_message"]) == ("AllJobsCompleted", "Complete says so")
    assert (fields["progress_percentage"], fields["estimated_remaining_seconds"]) == (100, 0)
    assert fields["start_time"] == datetime(2026, 6, 1, 8, 1, tzinfo=UTC)  # the last resume
    assert fields["completion_time"] == datetime(2026, 6, 1, 8, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("labels", "label", "uid"),
    [
        ({}, "", ""),
        ({"argoml.io/hyperparam-workflow": "lr-sweep"}, "lr-sweep", ""),
        ({"argoml.io/hyperparam-workflow-uid": "0b9f-uid", "app": "x"}, "", "0b9f-uid"),
        ({"argoml.io/hyperparam-workflow": 7, "argoml.io/hyperparam-workflow-uid": None}, "", ""),
        ({"argoml.io/hyperparam-workflow": "x" * 80}, "x" * 63, ""),
    ],
)
def test_a_trainjob_row_keeps_the_sweep_labels_of_the_trial_that_created_it(labels, label, uid):
    fields = TrainJob.observed_fields(train_job(labels=labels))
    assert (fields["sweep_label"], fields["sweep_uid"]) == (label, uid)


def test_a_new_trainjob_starts_at_creation_with_no_generation_progress_or_completion():
    fields = TrainJob.observed_fields(train_job({}, {"argoml.io/runtime-generation": "x"}))
    assert fields["start_time"] == datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    assert fields["runtime_generation"] is None
    assert fields["progress_percentage"] is None
    assert fields["completion_time"] is None
    assert fields["steps_summary"] == ""


def test_a_pod_row_keeps_its_step_indexes_exit_code_restarts_and_node_not_its_spec():
    pod = {
        "metadata": {
            "name": "mnist-node-0-1", "namespace": "team", "uid": "p1", "resourceVersion": "9",
            "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/job-index": "0",
                       "batch.kubernetes.io/job-completion-index": "1"},
            "ownerReferences": [{"kind": "TrainJob", "name": "mnist", "uid": "u1", "controller": True}],
        },
        "spec": {"nodeName": "node-a", "containers": [{"name": "node"}]},
        "status": {
            "phase": "Failed", "podIP": "10.0.0.7",
            "containerStatuses": [{"name": "node", "restartCount": 2,
                                   "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}],
        },
    }  # fmt: skip
    fields = TrainJobPod.observed_fields(pod)
    assert fields["train_job_id"] == "u1"
    assert (fields["step"], fields["job_index"], fields["completion_index"]) == ("node", 0, 1)
    assert (fields["exit_code"], fields["restarts"], fields["node"], fields["pod_ip"]) == (
        137,
        2,
        "node-a",
        "10.0.0.7",
    )
    assert fields["message"] == "OOMKilled"
    assert fields["phase"] == "Failed"
    assert (fields["spec"], fields["status"]) == ({}, {})
