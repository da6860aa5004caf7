"""Reading trials back from a Workflow's status.nodes, and a sweep's counts, best trial and stop reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hyperparam.manifests import build_batch, sweep_of
from hyperparam.sweep import Objective, parse_sweep
from hyperparam.tests import fake_argo
from hyperparam.tests.conftest import make_spec
from hyperparam.trials import (
    ERROR,
    FAILED,
    METRICS_UNAVAILABLE,
    PENDING,
    PHASES,
    RUNNING,
    STOP_TARGET_REACHED,
    STOP_TOO_MANY_FAILURES,
    SUCCEEDED,
    TrialResult,
    read_trials,
    stop_reason,
    summarize,
)

Outcome = fake_argo.Outcome


def loss_of(arguments: dict[str, str]) -> str:
    """A known function of the parameters: lowest at lr=0.2, batch-size=64."""
    return repr((float(arguments["lr"]) - 0.2) ** 2 + (int(arguments["batch-size"]) - 64) ** 2 / 10_000)


def ran(hpw, outcome=lambda position, arguments: Outcome(metric=loss_of(arguments)), **kwargs):
    return fake_argo.run(build_batch(hpw, 0), outcome, **kwargs)


def test_every_trial_of_a_3x4_grid_is_read_with_parameters_phase_times_and_metric(hpw):
    trials = read_trials(ran(hpw), "loss")
    assert [t.index for t in trials] == list(range(12))
    assert trials[6].params == {"lr": "0.2", "batch-size": "64"}
    assert all(t.phase == SUCCEEDED for t in trials)
    assert trials[6].metric == 0.0
    assert trials[0].metric == pytest.approx(0.01 + 48**2 / 10_000)
    assert trials[0].started_at == datetime(2025, 1, 1, 10, 0, tzinfo=UTC)
    assert trials[0].finished_at == datetime(2025, 1, 1, 10, 30, tzinfo=UTC)
    assert trials[0].workflow == "mnist-sweep-0"
    assert trials[0].node_id is not None


def test_the_parameters_read_back_are_those_the_template_received(hpw):
    workflow = ran(hpw)
    received = [arguments for _, arguments in fake_argo.expand(workflow)]
    assert [t.params for t in read_trials(workflow, "loss")] == received


def test_trials_without_a_node_yet_are_pending(hpw):
    workflow = ran(
        hpw, lambda p, a: Outcome(phase="Running", metric=None) if p < 4 else None, workflow_phase="Running"
    )
    phases = [t.phase for t in read_trials(workflow, "loss")]
    assert phases == [RUNNING] * 4 + [PENDING] * 8


def test_a_workflow_not_started_yet_has_every_trial_pending(hpw):
    workflow = build_batch(hpw, 0)
    trials = read_trials(workflow, "loss")
    assert [t.phase for t in trials] == [PENDING] * 12
    assert trials[0].started_at is None


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        (None, "output parameter 'loss' is missing"),
        ("not-a-number", "output parameter 'loss' is not a number: 'not-a-number'"),
        ("nan", "output parameter 'loss' is not a finite number: 'nan'"),
        ("inf", "output parameter 'loss' is not a finite number: 'inf'"),
    ],
)
def test_a_succeeded_trial_without_a_numeric_metric_is_metrics_unavailable(hpw, metric, message):
    trial = read_trials(ran(hpw, lambda p, a: Outcome(metric=metric)), "loss")[0]
    assert trial.phase == METRICS_UNAVAILABLE
    assert trial.metric is None
    assert trial.message == message


def test_metrics_with_surrounding_whitespace_are_read(hpw):
    assert read_trials(ran(hpw, lambda p, a: Outcome(metric=" 0.25\n")), "loss")[0].metric == 0.25


@pytest.mark.parametrize(
    ("argo_phase", "phase"),
    [("Failed", FAILED), ("Error", ERROR), ("Skipped", FAILED), ("Omitted", FAILED), ("Pending", PENDING)],
)
def test_argo_node_phases_map_to_trial_phases(hpw, argo_phase, phase):
    workflow = ran(
        hpw, lambda p, a: Outcome(phase=argo_phase, metric=None, message="boom"), workflow_phase="Running"
    )
    trial = read_trials(workflow, "loss")[0]
    assert trial.phase == phase
    assert "boom" in trial.message
    assert trial.metric is None


def test_trials_that_never_finished_in_a_finished_workflow_are_failed(hpw):
    workflow = ran(
        hpw,
        lambda p, a: Outcome(metric="1")
        if p == 0
        else (Outcome(phase="Running", metric=None) if p == 1 else None),
        workflow_phase="Failed",
        message="Stopped with strategy 'Terminate'",
    )
    first, second, third = read_trials(workflow, "loss")[:3]
    assert first.phase == SUCCEEDED
    assert (second.phase, third.phase) == (FAILED, FAILED)
    assert third.message == "never finished: the workflow ended Failed. Stopped with strategy 'Terminate'"


def test_a_retried_trial_is_read_from_its_retry_node_not_its_attempts(hpw):
    workflow = ran(hpw)
    nodes = workflow["status"]["nodes"]
    group = nodes[fake_argo.node_id("mnist-sweep-0", "mnist-sweep-0[0]")]
    retry = nodes[group["children"][0]]
    attempt = {
        **retry,
        "id": retry["id"] + "-a0",
        "name": retry["name"] + "(0)",
        "displayName": retry["displayName"] + "(0)",
    }
    attempt["phase"], attempt["outputs"] = "Failed", {}
    retry |= {"type": "Retry", "children": [attempt["id"]]}
    nodes[attempt["id"]] = attempt
    trials = read_trials(workflow, "loss")
    assert len(trials) == 12
    assert trials[0].phase == SUCCEEDED


def test_nodes_nested_inside_a_trial_are_not_taken_for_trials(hpw):
    workflow = ran(hpw)
    nodes = workflow["status"]["nodes"]
    trial_node = next(n for n in nodes.values() if n["displayName"].startswith("trial(3:"))
    inner = {
        **trial_node,
        "id": "inner",
        "name": trial_node["name"] + "[0].trial(0:x)",
        "displayName": "trial(0:x)",
        "phase": "Failed",
    }
    nodes["inner"] = inner
    trial_node["children"] = ["inner"]
    assert [t.phase for t in read_trials(workflow, "loss")] == [SUCCEEDED] * 12


# --- summary, best trial, stop reasons ----------------------------------------------------------------------


def result(index: int, phase: str = SUCCEEDED, metric: float | None = None) -> TrialResult:
    return TrialResult(index, {"x": str(index)}, phase, metric=metric)


def test_counts_by_phase_include_every_phase(hpw):
    summary = summarize(read_trials(ran(hpw), "loss"), Objective("loss", "minimize"))
    assert set(summary.counts) == set(PHASES)
    assert summary.counts[SUCCEEDED] == 12
    assert summary.counts[FAILED] == 0
    assert (summary.total, summary.finished, summary.failed) == (12, 12, 0)


def test_the_best_trial_of_the_3x4_grid_is_the_functions_minimum(hpw):
    summary = summarize(read_trials(ran(hpw), "loss"), Objective("loss", "minimize"))
    assert summary.best is not None
    assert summary.best.params == {"lr": "0.2", "batch-size": "64"}
    assert summary.best.metric == 0.0


def test_maximize_picks_the_largest_metric():
    trials = [result(0, metric=0.5), result(1, metric=0.9), result(2, metric=0.7)]
    assert summarize(trials, Objective("acc", "maximize")).best == trials[1]
    assert summarize(trials, Objective("acc", "minimize")).best == trials[0]


def test_ties_go_to_the_lowest_trial_index_whatever_the_order():
    trials = [result(5, metric=0.1), result(2, metric=0.1), result(9, metric=0.1)]
    assert summarize(trials, Objective("loss", "minimize")).best == trials[1]


def test_failed_trials_never_become_best_and_count_as_failed():
    trials = [
        result(0, FAILED),
        result(1, METRICS_UNAVAILABLE),
        result(2, ERROR),
        result(3, RUNNING),
        result(4, PENDING),
    ]
    summary = summarize(trials, Objective("loss", "minimize"))
    assert summary.best is None
    assert summary.failed == 3
    assert summary.finished == 3


def test_a_summary_streams_over_many_trials():
    trials = (result(i, metric=float((i - 50_000) ** 2)) for i in range(100_000))
    summary = summarize(trials, Objective("loss", "minimize"))
    assert summary.best is not None
    assert summary.best.index == 50_000
    assert summary.counts[SUCCEEDED] == 100_000


def sweep(**overrides):
    return parse_sweep(make_spec(**overrides))


def test_the_sweep_stops_when_the_target_is_reached():
    target = sweep(objective={"metric": "loss", "goal": "minimize", "target": 0.1})
    assert stop_reason(summarize([result(0, metric=0.2)], target.objective), target) is None
    assert stop_reason(summarize([result(0, metric=0.05)], target.objective), target) == STOP_TARGET_REACHED


def test_the_sweep_stops_after_more_failures_than_allowed():
    tolerant = sweep(maxFailedTrials=2)
    two_failures = summarize([result(0, FAILED), result(1, METRICS_UNAVAILABLE)], tolerant.objective)
    three_failures = summarize([result(0, FAILED), result(1, ERROR), result(2, FAILED)], tolerant.objective)
    assert stop_reason(two_failures, tolerant) is None
    assert stop_reason(three_failures, tolerant) == STOP_TOO_MANY_FAILURES


def test_without_limits_a_sweep_never_stops_early():
    unlimited = sweep()
    many_failures = summarize([result(i, FAILED) for i in range(100)], unlimited.objective)
    assert stop_reason(many_failures, unlimited) is None


def test_the_controller_can_read_trials_with_the_sweeps_own_metric(hpw):
    sweep_ = sweep_of(hpw)
    trials = read_trials(ran(hpw), sweep_.objective.metric)
    assert summarize(trials, sweep_.objective).counts[SUCCEEDED] == 12


def test_without_an_objective_a_trial_succeeds_or_fails_by_its_node_alone(hpw):
    outcomes = {0: Outcome(metric=None), 1: Outcome(phase="Failed", metric=None, message="exit code 1")}
    trials = read_trials(ran(hpw, lambda position, arguments: outcomes.get(position, Outcome())), None)
    assert (trials[0].phase, trials[0].metric, trials[0].message) == (SUCCEEDED, None, "")
    assert (trials[1].phase, trials[1].message) == (FAILED, "exit code 1")
    summary = summarize(trials, None)
    assert summary.best is None
    assert (summary.counts[SUCCEEDED], summary.failed) == (11, 1)


def test_without_an_objective_only_max_failed_trials_stops_a_sweep():
    spec = make_spec(maxFailedTrials=1)
    del spec["objective"]
    plain = parse_sweep(spec)
    one, two = summarize([result(0, FAILED)], None), summarize([result(0, FAILED), result(1, ERROR)], None)
    assert stop_reason(one, plain) is None
    assert stop_reason(two, plain) == STOP_TOO_MANY_FAILURES
