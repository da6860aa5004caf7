"""batch/v1 Jobs: the apiserver's defaults and the Job controller running pods on the simulated kubelet,
through the official client and the real kubectl. Frozen clock: tests move time with `sim.advance()`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubesim.kubelet import SCRIPT_ANNOTATION
from kubesim.kubelet.jobs import INDEX_KEY, JobSpec, format_indexes, indexes_to_run
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL


@pytest.fixture
def sim(kubesim_factory: Callable[..., Simulator]) -> Simulator:
    return kubesim_factory(frozen_clock=True, kubelet=True)


@pytest.fixture
def api(sim: Simulator) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(sim.kubeconfig_path))


def job(name: str, script: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    template: dict[str, Any] = {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "trainer:1"}]},
    }
    if script is not None:
        template["metadata"]["annotations"] = {SCRIPT_ANNOTATION: json.dumps(script)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {**spec, "template": template},
    }


def read(api: client.ApiClient, name: str) -> dict[str, Any]:
    found = client.BatchV1Api(api).read_namespaced_job(name, "default")
    return dict(api.sanitize_for_serialization(found))


def conditions(api: client.ApiClient, name: str) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in read(api, name)["status"].get("conditions") or []]


def pods_of(api: client.ApiClient, name: str) -> list[Any]:
    return client.CoreV1Api(api).list_namespaced_pod("default", label_selector=f"job-name={name}").items


# --- the apiserver's defaults ---


def test_a_job_gets_the_apiservers_defaults_and_a_generated_selector(api: client.ApiClient) -> None:
    """The Job reference: completions and parallelism default to 1 ("Defaults to 1" when neither is set),
    backoffLimit to 6, completionMode to NonIndexed, podReplacementPolicy to TerminatingOrFailed; and
    "manualSelector controls generation of pod labels and pod selectors. Leave manualSelector unset
    unless you are certain what you are doing" — the system adds `controller-uid` labels and selects them."""
    client.BatchV1Api(api).create_namespaced_job("default", job("defaults"))
    created = read(api, "defaults")
    uid, spec = created["metadata"]["uid"], created["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["podReplacementPolicy"], spec["suspend"]) == (
        "NonIndexed",
        "TerminatingOrFailed",
        False,
    )
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "app": "defaults",
        "batch.kubernetes.io/controller-uid": uid,
        "controller-uid": uid,
        "batch.kubernetes.io/job-name": "defaults",
        "job-name": "defaults",
    }


def test_a_work_queue_job_keeps_completions_unset(api: client.ApiClient) -> None:
    """The Jobs concept page: for "Parallel Jobs with a work queue" — "do not specify
    .spec.completions, default to .spec.parallelism"."""
    client.BatchV1Api(api).create_namespaced_job("default", job("queue", parallelism=2))
    spec = read(api, "queue")["spec"]
    assert "completions" not in spec
    assert spec["parallelism"] == 2


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"manualSelector": True}, "spec.selector"),
        ({"selector": {"matchLabels": {"app": "mine"}}}, "spec.selector"),
        ({"restart": "Always"}, "spec.template.spec.restartPolicy"),
    ],
)
def test_a_job_the_apiserver_refuses(api: client.ApiClient, changes: dict[str, Any], field: str) -> None:
    """A manual selector must be given; a selector without `manualSelector: true` is "`selector` not
    auto-generated"; "Only a RestartPolicy equal to Never or OnFailure is allowed"."""
    body = job("refused", **{k: v for k, v in changes.items() if k != "restart"})
    if "restart" in changes:
        body["spec"]["template"]["spec"]["restartPolicy"] = changes["restart"]
    with pytest.raises(ApiException) as refused:
        client.BatchV1Api(api).create_namespaced_job("default", body)
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["details"]["causes"][0]["field"] == field


# --- the controller ---


def test_a_suspended_job_starts_no_pods(sim: Simulator, api: client.ApiClient) -> None:
    """The Jobs concept page: "When a Job is suspended … the Job controller … will not create new Pods";
    a Job that never ran has no startTime."""
    client.BatchV1Api(api).create_namespaced_job("default", job("paused", suspend=True))
    sim.advance(5)
    assert pods_of(api, "paused") == []
    assert "startTime" not in (read(api, "paused").get("status") or {})


def test_a_job_runs_its_completions_with_bounded_parallelism(sim: Simulator, api: client.ApiClient) -> None:
    """The Jobs concept page: "A Job creates one or more Pods and will continue to retry execution of the
    Pods until a specified number of them successfully terminate"; with completions and parallelism, at
    most parallelism pods run at once. On success the Job gets `SuccessCriteriaMet` then `Complete`
    (1.31+), `completionTime`, and its pods carry the job-name and controller-uid labels."""
    client.BatchV1Api(api).create_namespaced_job("default", job("train", completions=3, parallelism=2))
    sim.advance(0)
    status = read(api, "train")["status"]
    assert status["active"] == 2
    assert status["startTime"]
    assert len(pods_of(api, "train")) == 2
    assert sim.run_until(lambda: read(api, "train")["status"].get("succeeded") == 3, within=60)
    sim.advance(0)
    done = read(api, "train")
    status = done["status"]
    assert "active" not in status
    assert status["completionTime"]
    assert conditions(api, "train") == [
        ("SuccessCriteriaMet", "CompletionsReached"),
        ("Complete", "CompletionsReached"),
    ]
    pods = pods_of(api, "train")
    assert len(pods) == 3
    uid = done["metadata"]["uid"]
    for pod in pods:
        labels = pod.metadata.labels
        assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "train"
        assert labels["batch.kubernetes.io/controller-uid"] == labels["controller-uid"] == uid
        assert pod.metadata.name.startswith("train-")
        assert pod.metadata.owner_references[0].kind == "Job"


def test_failures_beyond_the_backoff_limit_fail_the_job(sim: Simulator, api: client.ApiClient) -> None:
    """The Jobs concept page: "Set .spec.backoffLimit to specify the number of retries before considering
    a Job as failed"; the Job gets `FailureTarget` then `Failed`, reason `BackoffLimitExceeded`."""
    failing = job("flaky", script={"main": {"duration": 1, "exitCode": 1}}, backoffLimit=1)
    client.BatchV1Api(api).create_namespaced_job("default", failing)
    assert sim.run_until(lambda: ("Failed", "BackoffLimitExceeded") in conditions(api, "flaky"), within=60)
    status = read(api, "flaky")["status"]
    assert status["failed"] == 2
    assert [c[0] for c in conditions(api, "flaky")] == ["FailureTarget", "Failed"]
    assert "completionTime" not in status
    assert len(pods_of(api, "flaky")) == 2


def test_the_active_deadline_stops_the_job(sim: Simulator, api: client.ApiClient) -> None:
    """The Jobs concept page: "Once a Job reaches activeDeadlineSeconds, all of its running Pods are
    terminated and the Job status will become type: Failed with reason: DeadlineExceeded"."""
    forever = job("slow", script={"main": {"duration": None}}, activeDeadlineSeconds=10)
    client.BatchV1Api(api).create_namespaced_job("default", forever)
    sim.advance(5)
    assert read(api, "slow")["status"]["active"] == 1
    assert sim.run_until(lambda: ("Failed", "DeadlineExceeded") in conditions(api, "slow"), within=120)
    assert [c[0] for c in conditions(api, "slow")] == ["FailureTarget", "Failed"]
    assert all(p.metadata.deletion_timestamp is None for p in pods_of(api, "slow"))
    assert "active" not in read(api, "slow")["status"]


def test_an_indexed_job_gives_each_pod_its_completion_index(sim: Simulator, api: client.ApiClient) -> None:
    """The Jobs concept page: with `completionMode: Indexed` "the Pods get an associated completion index
    from 0 to .spec.completions-1", available "as the Pod annotation
    batch.kubernetes.io/job-completion-index", the label of the same name, and "the environment variable
    JOB_COMPLETION_INDEX"; the Job is complete when there is one successful Pod for each index."""
    indexed = job("shards", completions=3, parallelism=3, completionMode="Indexed")
    client.BatchV1Api(api).create_namespaced_job("default", indexed)
    sim.advance(0)
    pods = pods_of(api, "shards")
    assert sorted(p.metadata.annotations[INDEX_KEY] for p in pods) == ["0", "1", "2"]
    for pod in pods:
        index = pod.metadata.annotations[INDEX_KEY]
        assert pod.metadata.labels[INDEX_KEY] == index
        assert pod.metadata.name.startswith(f"shards-{index}-")
        (env,) = [e for e in pod.spec.containers[0].env if e.name == "JOB_COMPLETION_INDEX"]
        assert env.value_from.field_ref.field_path == f"metadata.labels['{INDEX_KEY}']"
    assert sim.run_until(lambda: ("Complete", "CompletionsReached") in conditions(api, "shards"), within=60)
    assert read(api, "shards")["status"]["completedIndexes"] == "0-2"


def test_kubectl_waits_for_a_job_to_complete_and_shows_its_logs(
    sim: Simulator, api: client.ApiClient
) -> None:
    """The kubectl reference: `kubectl wait --for=condition=complete job/myjob` and `kubectl logs
    job/myjob` ("Return snapshot logs from first container of a job named hello")."""
    env = {"KUBECONFIG": str(sim.kubeconfig_path), "HOME": str(Path(str(sim.kubeconfig_path)).parent)}
    talker = job("talk", script={"main": {"duration": 3, "output": ["step 1", "step 2"]}})
    client.BatchV1Api(api).create_namespaced_job("default", talker)
    waiter = subprocess.Popen(
        [str(KUBECTL), "wait", "--for=condition=complete", "job/talk", "--timeout=60s"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert sim.run_until(lambda: ("Complete", "CompletionsReached") in conditions(api, "talk"), within=60)
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert out.strip() == "job.batch/talk condition met"
    logs = subprocess.run(
        [str(KUBECTL), "logs", "job/talk"], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    assert logs.stdout == "step 1\nstep 2\n"
    table = subprocess.run(
        [str(KUBECTL), "get", "job", "talk"], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    assert table.stdout.split("\n")[1].split()[:3] == ["talk", "Complete", "1/1"]


# --- the pure half ---


@pytest.mark.parametrize(
    ("indexes", "text"),
    [(set(), ""), ({0}, "0"), ({0, 1, 2}, "0-2"), ({1, 3, 4, 5, 7}, "1,3-5,7"), ({2, 0}, "0,2")],
)
def test_completed_indexes_are_written_as_ranges(indexes: set[int], text: str) -> None:
    assert format_indexes(indexes) == text


def _pod(phase: str, index: int | None = None) -> dict[str, Any]:
    annotations = {INDEX_KEY: str(index)} if index is not None else {}
    return {"metadata": {"annotations": annotations}, "status": {"phase": phase}}


def _spec(**changes: Any) -> JobSpec:
    base = {"completions": 3, "parallelism": 2, "backoff_limit": 6, "deadline": None}
    return JobSpec(**{**base, "indexed": False, "suspended": False, **changes})


def test_indexes_to_run_respect_parallelism_completions_and_indexes() -> None:
    assert indexes_to_run(_spec(), []) == [None, None]
    assert indexes_to_run(_spec(), [_pod("Succeeded"), _pod("Succeeded"), _pod("Running")]) == []
    assert indexes_to_run(_spec(), [_pod("Succeeded"), _pod("Succeeded")]) == [None]
    assert indexes_to_run(_spec(), [_pod("Failed"), _pod("Running")]) == [None]
    assert indexes_to_run(_spec(suspended=True), []) == []
    assert indexes_to_run(_spec(completions=None), [_pod("Succeeded")]) == []
    indexed = _spec(indexed=True, parallelism=3, completions=4)
    assert indexes_to_run(indexed, [_pod("Succeeded", 0), _pod("Running", 2)]) == [1, 3]
    assert indexes_to_run(indexed, [_pod("Failed", 1)]) == [0, 1, 2]
