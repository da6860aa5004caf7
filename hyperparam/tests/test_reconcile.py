"""The reconcile on kubesim, one run at a time, with the tests' fake Argo writing the Workflows' status:
batches created in order, trials mirrored, the sweep's status and when it ends."""

from __future__ import annotations

from typing import Any

import pytest

from hyperparam.models import SamplerRound, Sweep, Trial
from hyperparam.reconcile import HPW, reconcile_hyperparam_workflow
from hyperparam.tests import fake_argo
from hyperparam.tests.conftest import make_hpw, make_spec
from kube.client import get_client
from kube.resources import EVENT, WORKFLOW

pytestmark = pytest.mark.django_db

NAMESPACE = "team-a"
GRID_LOSS = {("0.1", "16"): 0.9, ("0.2", "32"): 0.15, ("0.3", "128"): 0.4}


def create_sweep(spec: dict[str, Any] | None = None, name: str = "mnist-sweep") -> dict[str, Any]:
    manifest = make_hpw(spec, name=name, uid="")
    return get_client().create(HPW, manifest)


def reconcile(name: str = "mnist-sweep") -> dict[str, Any]:
    reconcile_hyperparam_workflow(NAMESPACE, name)
    return get_client().get(HPW, name, NAMESPACE)


def workflows(name: str = "mnist-sweep") -> list[dict[str, Any]]:
    """Every Workflow of the sweep, completed or not, in batch order."""
    items = get_client().list(WORKFLOW, NAMESPACE)["items"]
    return sorted(
        (wf for wf in items if wf["metadata"]["labels"]["argoml.io/hyperparam-workflow"] == name),
        key=lambda wf: int(wf["metadata"]["labels"]["argoml.io/hyperparam-batch"]),
    )


def loss_of(arguments: dict[str, str]) -> str:
    return str(GRID_LOSS.get((arguments["lr"], arguments["batch-size"]), 0.5))


def finish(cluster, workflow: dict[str, Any], outcome=None, phase: str = "Succeeded") -> None:
    """Write the status Argo would write once every trial of `workflow` ran."""
    outcome = outcome or (lambda position, arguments: fake_argo.Outcome(metric=loss_of(arguments)))
    done = fake_argo.run(workflow, outcome, workflow_phase=phase)

    def change(obj: dict[str, Any]) -> None:
        obj["status"] = done["status"]
        if phase in ("Succeeded", "Failed", "Error"):
            obj["metadata"]["labels"]["workflows.argoproj.io/completed"] = "true"

    cluster.store.mutate("workflows.argoproj.io", workflow["metadata"]["name"], change, namespace=NAMESPACE)


def event_reasons() -> list[str]:
    return [event["reason"] for event in get_client().list(EVENT, NAMESPACE)["items"]]


def test_a_grid_sweep_creates_its_workflow_mirrors_every_trial_and_finds_the_best(cluster):
    create_sweep()
    hpw = reconcile()

    (workflow,) = workflows()
    assert workflow["metadata"]["name"] == "mnist-sweep-0"
    assert workflow["metadata"]["ownerReferences"][0]["uid"] == hpw["metadata"]["uid"]
    assert hpw["status"]["phase"] == "Running"
    assert hpw["status"]["workflows"] == ["mnist-sweep-0"]
    assert hpw["status"]["progress"] == "0/12"
    assert Trial.objects.filter(phase="Pending").count() == 12
    assert "SuccessfulCreate" in event_reasons()

    finish(cluster, workflow)
    hpw = reconcile()

    status = hpw["status"]
    assert status["phase"] == "Succeeded"
    assert status["progress"] == "12/12"
    assert status["trials"]["Succeeded"] == 12
    assert status["bestTrial"]["parameters"] == {"lr": "0.2", "batch-size": "32"}
    assert status["bestTrial"]["metric"] == 0.15
    assert status["completionTime"]
    sweep = Sweep.objects.get(uid=hpw["metadata"]["uid"])
    assert (sweep.phase, sweep.best_metric, sweep.trials_finished) == ("Succeeded", 0.15, 12)
    rows = {trial.index: trial for trial in Trial.objects.filter(sweep=sweep)}
    assert len(rows) == 12
    assert (rows[0].params, rows[0].metric) == ({"lr": "0.1", "batch-size": "16"}, 0.9)
    assert (rows[11].params, rows[11].metric) == ({"lr": "0.3", "batch-size": "128"}, 0.4)
    assert all(row.workflow == "mnist-sweep-0" and row.node_id for row in rows.values())


def test_reconciling_again_changes_nothing(cluster):
    create_sweep()
    reconcile()
    before = get_client().get(HPW, "mnist-sweep", NAMESPACE)["metadata"]["resourceVersion"]
    after = reconcile()
    assert after["metadata"]["resourceVersion"] == before
    assert len(workflows()) == 1
    assert Trial.objects.count() == 12


def test_batches_are_created_in_order_as_earlier_ones_finish(cluster):
    create_sweep(make_spec(parallelism=2))
    # A frozen split of five trials per Workflow, as a sweep too large for one Workflow would get.
    get_client().patch_status(HPW, "mnist-sweep", {"trialsPerBatch": 5}, NAMESPACE)

    reconcile()
    assert [wf["metadata"]["name"] for wf in workflows()] == ["mnist-sweep-0"]

    finish(cluster, workflows()[0])
    hpw = reconcile()
    assert [wf["metadata"]["name"] for wf in workflows()] == ["mnist-sweep-0", "mnist-sweep-1"]
    assert hpw["status"]["progress"] == "5/12"

    finish(cluster, workflows()[1])
    reconcile()
    finish(cluster, workflows()[2])
    hpw = reconcile()
    assert len(workflows()) == 3
    assert hpw["status"]["phase"] == "Succeeded"
    assert sorted(Trial.objects.values_list("index", flat=True)) == list(range(12))
    items = [len(wf["spec"]["templates"][-1]["steps"][0][0]["withItems"]) for wf in workflows()]
    assert items == [5, 5, 2]


def test_a_trial_without_its_metric_counts_as_failed(cluster):
    create_sweep()
    reconcile()
    no_metric = fake_argo.Outcome(metric=None)
    finish(cluster, workflows()[0], lambda position, arguments: no_metric if position == 3 else None)
    hpw = reconcile()
    assert hpw["status"]["trials"]["MetricsUnavailable"] == 1
    trial = Trial.objects.get(index=3)
    assert trial.phase == "MetricsUnavailable"
    assert "loss" in trial.message


def plain_grid(**overrides: Any) -> dict[str, Any]:
    """The 3x4 grid as "run every combination": `algorithm: grid` and no objective."""
    spec = make_spec(algorithm="grid", **overrides)
    del spec["objective"]
    return spec


def test_a_plain_grid_succeeds_when_every_trial_succeeded_and_has_no_best(cluster):
    create_sweep(plain_grid())
    reconcile()
    finish(cluster, workflows()[0], lambda position, arguments: fake_argo.Outcome(metric=None))
    hpw = reconcile()
    status = hpw["status"]
    assert (status["phase"], status["progress"], status.get("bestTrial")) == ("Succeeded", "12/12", None)
    assert status["message"] == "all 12 trials finished"
    assert status.get("trialErrors") is None
    sweep = Sweep.objects.get(uid=hpw["metadata"]["uid"])
    assert (sweep.algorithm, sweep.metric_name, sweep.best_metric) == ("grid", "", None)
    assert set(Trial.objects.values_list("phase", flat=True)) == {"Succeeded"}


def test_a_plain_grid_with_failed_trials_fails_and_names_the_first_errors(cluster):
    create_sweep(plain_grid())
    reconcile()
    errored = fake_argo.Outcome(phase="Error", metric=None, message="OOMKilled (exit code 137)")
    ran = fake_argo.Outcome(metric=None)
    finish(cluster, workflows()[0], lambda position, arguments: errored if position in (4, 9) else ran)
    hpw = reconcile()
    status = hpw["status"]
    assert status["phase"] == "Failed"
    assert status["conditions"][-1]["reason"] == "TrialsFailed"
    assert status["message"] == "2 of 12 trials failed; trial 4 (Error): OOMKilled (exit code 137)"
    assert status["trialErrors"] == [
        {"index": 4, "phase": "Error", "message": "OOMKilled (exit code 137)"},
        {"index": 9, "phase": "Error", "message": "OOMKilled (exit code 137)"},
    ]
    assert "Failed" in event_reasons()


def test_a_grid_whose_trials_all_lost_their_metric_fails_instead_of_succeeding(cluster):
    create_sweep()
    reconcile()
    finish(cluster, workflows()[0], lambda position, arguments: fake_argo.Outcome(metric=None))
    status = reconcile()["status"]
    assert (status["phase"], status.get("bestTrial")) == ("Failed", None)
    assert status["conditions"][-1]["reason"] == "NoTrialReportedTheMetric"
    assert status["message"].startswith(
        "no trial reported the objective's metric 'loss' (12 of 12 failed); trial 0 (MetricsUnavailable): "
        "output parameter 'loss' is missing"
    )
    assert len(status["trialErrors"]) == 5


def test_too_many_failed_trials_fail_the_sweep_and_stop_its_workflows(cluster):
    create_sweep(make_spec(maxFailedTrials=1))
    reconcile()
    failed = fake_argo.Outcome(phase="Failed", metric=None)
    # Two trials failed while the Workflow still runs.
    finish(
        cluster, workflows()[0], lambda position, arguments: failed if position < 2 else None, phase="Running"
    )
    hpw = reconcile()

    assert hpw["status"]["phase"] == "Failed"
    assert hpw["status"]["conditions"][-1]["reason"] == "MaxFailedTrialsExceeded"
    assert workflows()[0]["spec"]["shutdown"] == "Stop"
    assert "StoppingWorkflow" in event_reasons()


def test_reaching_the_target_ends_the_sweep(cluster):
    spec = make_spec(objective={"metric": "loss", "goal": "minimize", "target": 0.2})
    create_sweep(spec)
    reconcile()
    finish(cluster, workflows()[0], lambda position, arguments: fake_argo.Outcome(metric=loss_of(arguments)))
    hpw = reconcile()
    assert hpw["status"]["phase"] == "Succeeded"
    assert "target" in hpw["status"]["message"]
    assert (
        next(c for c in hpw["status"]["conditions"] if c["type"] == "Succeeded")["reason"] == "TargetReached"
    )


def test_an_invalid_spec_fails_with_the_field_path(cluster):
    spec = make_spec()
    spec["hyperparams"][0]["name"] = "momentum"
    create_sweep(spec)
    hpw = reconcile()
    assert hpw["status"]["phase"] == "Failed"
    assert "spec.hyperparams[0].name" in hpw["status"]["message"]
    assert workflows() == []
    assert "FailedValidation" in event_reasons()


def test_a_workflow_the_linter_refuses_is_never_created(cluster):
    spec = make_spec()
    spec["workflow"]["templates"][0]["retryStrategy"] = {"retryPolicy": "Sometimes"}
    create_sweep(spec)
    hpw = reconcile()
    assert hpw["status"]["phase"] == "Failed"
    assert hpw["status"]["conditions"][-1]["reason"] == "WorkflowLintFailed"
    assert "Sometimes is not a valid RetryPolicy" in hpw["status"]["message"]
    assert workflows() == []


def quadratic(arguments: dict[str, str]) -> fake_argo.Outcome:
    value = (float(arguments["lr"]) - 0.3) ** 2 + (float(arguments["batch-size"]) + 0.2) ** 2
    return fake_argo.Outcome(metric=repr(value))


def test_an_adaptive_sweep_asks_one_round_at_a_time_and_stores_it(cluster):
    spec = make_spec(
        hyperparams=[
            {"name": "lr", "uniform": {"min": -1, "max": 1}},
            {"name": "batch-size", "uniform": {"min": -1, "max": 1}},
        ],
        algorithm={"name": "tpe", "seed": 3},
        maxTrials=30,
        parallelism=10,
    )
    create_sweep(spec)
    for round_number in range(3):
        hpw = reconcile()
        assert len(workflows()) == round_number + 1
        assert SamplerRound.objects.count() == round_number + 1
        reconcile()  # a run that repeats asks nothing new
        assert SamplerRound.objects.count() == round_number + 1
        finish(cluster, workflows()[round_number], lambda position, arguments: quadratic(arguments))
    hpw = reconcile()

    assert hpw["status"]["phase"] == "Succeeded"
    assert hpw["status"]["progress"] == "30/30"
    by_round = [
        sorted(
            Trial.objects.filter(index__gte=r * 10, index__lt=r * 10 + 10).values_list("metric", flat=True)
        )
        for r in range(3)
    ]
    mean = [sum(values) / len(values) for values in by_round]
    assert mean[2] < mean[0], f"the third round should improve on the random first one: {mean}"


def test_a_finished_batch_whose_workflow_was_deleted_is_not_run_again(cluster):
    create_sweep(make_spec(parallelism=2))
    get_client().patch_status(HPW, "mnist-sweep", {"trialsPerBatch": 5}, NAMESPACE)
    reconcile()
    finish(cluster, workflows()[0])
    reconcile()
    # A garbage collector (or Argo's TTL) removes the finished first batch.
    get_client().delete(WORKFLOW, "mnist-sweep-0", NAMESPACE)
    hpw = reconcile()
    assert [wf["metadata"]["name"] for wf in workflows()] == ["mnist-sweep-1"]
    assert hpw["status"]["progress"] == "5/12"

    finish(cluster, workflows()[0])
    reconcile()
    finish(cluster, workflows()[1])
    hpw = reconcile()
    assert [wf["metadata"]["name"] for wf in workflows()] == ["mnist-sweep-1", "mnist-sweep-2"]
    assert hpw["status"]["phase"] == "Succeeded"
    assert hpw["status"]["progress"] == "12/12"


def test_a_completed_workflow_is_read_once_and_never_listed_again(cluster):
    create_sweep(make_spec(parallelism=2))
    get_client().patch_status(HPW, "mnist-sweep", {"trialsPerBatch": 5}, NAMESPACE)
    reconcile()
    finish(cluster, workflows()[0])
    cluster.counters.reset()
    reconcile()
    assert (
        cluster.counters.count(verb="get", resource="workflows.argoproj.io") == 1
    )  # the completed batch, once
    assert Trial.objects.filter(index__lt=5, phase="Succeeded").count() == 5

    cluster.counters.reset()
    hpw = reconcile()
    assert cluster.counters.count(verb="get", resource="workflows.argoproj.io") == 0
    listed = get_client().list(WORKFLOW, NAMESPACE, label_selector="workflows.argoproj.io/completed!=true")
    assert [wf["metadata"]["name"] for wf in listed["items"]] == ["mnist-sweep-1"]
    assert hpw["status"]["workflows"] == ["mnist-sweep-0", "mnist-sweep-1"]
