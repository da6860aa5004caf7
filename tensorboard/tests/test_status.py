"""The status a Tensorboard gets from its Deployment: Pending, Ready or Failed, its URL and lastAccess."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tensorboard.conf import TensorboardConf
from tensorboard.status import fetch_report, last_access, tensorboard_status

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
CONF = TensorboardConf()


def tensorboard(
    status: dict[str, Any] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    metadata = {
        "name": "mnist",
        "namespace": "team-a",
        "uid": "u",
        "generation": 3,
        "annotations": annotations or {},
    }
    return {
        "metadata": metadata,
        "spec": {"logdirs": [{"name": "a", "path": "s3://b/k"}]},
        "status": status or {},
    }


def deployment(
    available: str = "True", replicas: int = 1, generation: int = 2, observed: int = 2, **progressing: str
):
    conditions = [
        {
            "type": "Available",
            "status": available,
            "message": "Deployment does not have minimum availability.",
        }
    ]
    if progressing:
        conditions.append({"type": "Progressing", **progressing})
    return {
        "metadata": {"generation": generation},
        "status": {"observedGeneration": observed, "availableReplicas": replicas, "conditions": conditions},
    }


def test_without_a_deployment_the_instance_is_pending_and_already_has_its_url():
    status = tensorboard_status(tensorboard(), None, CONF, NOW)
    assert status["phase"] == "Pending"
    assert status["url"] == "http://tb-mnist.team-a.svc.cluster.local/tensorboards/team-a/mnist/"
    assert status["observedGeneration"] == 3
    assert status["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "Creating",
            "message": "The TensorBoard Deployment is being created.",
            "lastTransitionTime": "2025-01-01T12:00:00Z",
        }
    ]


def test_an_available_deployment_makes_it_ready():
    status = tensorboard_status(tensorboard(), deployment(), CONF, NOW)
    assert (status["phase"], status["conditions"][0]["status"], status["conditions"][0]["reason"]) == (
        "Ready",
        "True",
        "DeploymentAvailable",
    )


def test_a_deployment_still_rolling_out_a_new_template_is_not_ready_yet():
    assert (
        tensorboard_status(tensorboard(), deployment(generation=3, observed=2), CONF, NOW)["phase"]
        == "Pending"
    )
    assert tensorboard_status(tensorboard(), deployment(replicas=0), CONF, NOW)["phase"] == "Pending"
    unavailable = tensorboard_status(tensorboard(), deployment(available="False", replicas=0), CONF, NOW)
    assert unavailable["message"] == "TensorBoard is starting: Deployment does not have minimum availability."


def test_a_deployment_past_its_progress_deadline_fails_the_instance():
    stuck = deployment(
        available="False", replicas=0, status="False", reason="ProgressDeadlineExceeded", message="x"
    )
    status = tensorboard_status(tensorboard(), stuck, CONF, NOW)
    assert (status["phase"], status["message"]) == ("Failed", "x")


def test_a_problem_with_the_spec_fails_the_instance_with_its_message():
    status = tensorboard_status(tensorboard(), None, CONF, NOW, problem=("InvalidSpec", "spec.logdirs: bad"))
    assert (status["phase"], status["message"], status["conditions"][0]["reason"]) == (
        "Failed",
        "spec.logdirs: bad",
        "InvalidSpec",
    )


def test_the_condition_keeps_its_transition_time_while_its_status_holds():
    earlier = tensorboard_status(tensorboard(), deployment(), CONF, NOW)
    later = tensorboard_status(tensorboard(earlier), deployment(), CONF, datetime(2025, 1, 2, tzinfo=UTC))
    assert later["conditions"] == earlier["conditions"]


def test_last_access_is_the_later_of_the_annotation_and_the_status():
    opened = {"argoml.io/last-access": "2025-01-01T11:00:00Z"}
    assert last_access(tensorboard({"lastAccess": "2025-01-01T10:00:00Z"}, opened)) == "2025-01-01T11:00:00Z"
    assert last_access(tensorboard({"lastAccess": "2025-01-01T12:00:00Z"}, opened)) == "2025-01-01T12:00:00Z"
    assert last_access(tensorboard()) is None
    assert last_access(tensorboard(annotations={"argoml.io/last-access": "yesterday"})) is None
    assert (
        tensorboard_status(tensorboard(annotations=opened), None, CONF, NOW)["lastAccess"]
        == "2025-01-01T11:00:00Z"
    )


def fetcher_pod(created: str, terminated: dict[str, Any] | None) -> dict[str, Any]:
    state = {"terminated": terminated} if terminated is not None else {"running": {}}
    return {
        "metadata": {"creationTimestamp": created},
        "status": {"initContainerStatuses": [{"name": "fetch-logs", "state": state}]},
    }


def report(*failed: str, runs: int = 3, **extra: Any) -> dict[str, Any]:
    body = {"runs": runs, "failed": [{"run": r, "url": f"s3://b/{r}", "reason": "NoSuchKey"} for r in failed]}
    return {"exitCode": 0, "message": json.dumps({**body, **extra})}


def fetched_condition(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == "ArtifactsFetched")


def test_the_newest_pods_fetch_report_names_the_runs_left_out():
    pods = [
        fetcher_pod("2025-01-01T10:00:00Z", report("a", "b")),
        fetcher_pod("2025-01-01T11:00:00Z", report("c")),
    ]
    assert fetch_report(pods)["failed"] == [{"run": "c", "url": "s3://b/c", "reason": "NoSuchKey"}]
    status = tensorboard_status(tensorboard(), None, CONF, NOW, pods=pods)
    assert status["fetchProblems"] == [{"run": "c", "url": "s3://b/c", "reason": "NoSuchKey"}]
    assert fetched_condition(status)["message"] == "1 of 3 runs could not be fetched: c: NoSuchKey"


def test_a_report_cut_short_counts_what_did_not_fit_and_a_clean_one_says_all_arrived():
    status = tensorboard_status(
        tensorboard(), None, CONF, NOW, pods=[fetcher_pod("t", report("a", runs=10, more=7))]
    )
    assert fetched_condition(status)["message"].startswith("8 of 10 runs could not be fetched: a: NoSuchKey")
    clean = tensorboard_status(tensorboard(), None, CONF, NOW, pods=[fetcher_pod("t", report())])
    assert (fetched_condition(clean)["status"], fetched_condition(clean)["reason"]) == ("True", "AllFetched")
    assert clean["fetchProblems"] == []


def test_a_fetcher_still_running_keeps_the_last_report_and_none_at_all_adds_nothing():
    previous = tensorboard_status(tensorboard(), None, CONF, NOW, pods=[fetcher_pod("t", report("a"))])
    again = tensorboard_status(tensorboard(previous), None, CONF, NOW, pods=[fetcher_pod("u", None)])
    assert again["fetchProblems"] == previous["fetchProblems"]
    assert fetched_condition(again) == fetched_condition(previous)
    assert "fetchProblems" not in tensorboard_status(tensorboard(), None, CONF, NOW, pods=[])
    assert fetch_report([{"metadata": {}, "status": {}}]) is None


def test_a_fetcher_that_ended_without_a_report_is_said_so():
    pods = [fetcher_pod("t", {"exitCode": 137, "reason": "OOMKilled", "message": ""})]
    status = tensorboard_status(tensorboard(), None, CONF, NOW, pods=pods)
    condition = fetched_condition(status)
    assert (condition["status"], condition["reason"]) == ("False", "FetchFailed")
    assert condition["message"] == "the fetcher ended (OOMKilled) without a report"


def test_a_termination_message_nested_past_the_bound_is_no_report():
    """A pod's termination message is 4 KB at most, but 4,000 brackets were a RecursionError in the loop."""
    deep = {"exitCode": 1, "reason": "Error", "message": '{"failed": ' + "[" * 2000 + "]" * 2000 + "}"}
    assert fetch_report([fetcher_pod("t", deep)]) == {
        "runs": 0,
        "failed": [],
        "error": "the fetcher ended (Error) without a report",
    }
