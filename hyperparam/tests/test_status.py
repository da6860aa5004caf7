"""The sweep's status from what a reconcile observed: phase, reason, conditions, times and progress."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hyperparam.status import BestTrial, Observed, TrialError, desired_status, phase_of
from hyperparam.sweep import parse_sweep
from hyperparam.tests.conftest import make_spec
from hyperparam.trials import FAILED, STOP_TOO_MANY_FAILURES, SUCCEEDED, TrialResult, stop_reason, summarize

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
LATER = datetime(2026, 1, 2, 4, 0, 0, tzinfo=UTC)
BEST = BestTrial(5, {"lr": "0.2"}, 0.15, "sweep-0")


def observed(**overrides) -> Observed:
    values = {"planned": 12, "trials_per_batch": 12, "workflows": ("sweep-0",), "active": True,
              "all_batches_created": True, "counts": {"Succeeded": 3, "Running": 9}}  # fmt: skip
    return Observed(**{**values, **overrides})


def test_a_sweep_without_workflows_is_pending_then_running():
    assert phase_of(observed(workflows=(), active=False, all_batches_created=False))[0] == "Pending"
    phase, reason, message = phase_of(observed())
    assert (phase, reason, message) == ("Running", "TrialsRunning", "3/12 trials finished")


ERRORS = (
    TrialError(3, "MetricsUnavailable", "output parameter 'loss' is missing"),
    TrialError(7, "Failed", "Error (exit code 1)"),
)


def test_an_optimising_sweep_succeeds_once_every_trial_ran_and_one_reported_the_metric():
    done = observed(active=False, metric="loss", best=BEST, trial_errors=ERRORS,
                    counts={"Succeeded": 10, "Failed": 1, "MetricsUnavailable": 1})  # fmt: skip
    assert phase_of(done) == (
        "Succeeded",
        "AllTrialsFinished",
        "all 12 trials finished, 2 of them failed; trial 3 (MetricsUnavailable): output parameter 'loss' "
        "is missing",
    )
    assert phase_of(observed(active=False, all_batches_created=False))[0] == "Running"


def test_an_optimising_sweep_whose_trials_reported_no_metric_fails_and_says_why():
    done = observed(active=False, metric="loss", trial_errors=ERRORS[:1], counts={"MetricsUnavailable": 4})
    assert phase_of(done) == (
        "Failed",
        "NoTrialReportedTheMetric",
        "no trial reported the objective's metric 'loss' (4 of 4 failed); trial 3 (MetricsUnavailable): "
        "output parameter 'loss' is missing",
    )


def test_a_sweep_without_an_objective_succeeds_only_when_every_trial_succeeded():
    assert phase_of(observed(active=False, counts={"Succeeded": 12})) == (
        "Succeeded",
        "AllTrialsFinished",
        "all 12 trials finished",
    )
    some_failed = observed(active=False, counts={"Succeeded": 10, "Failed": 2}, trial_errors=ERRORS[1:])
    assert phase_of(some_failed) == (
        "Failed",
        "TrialsFailed",
        "2 of 12 trials failed; trial 7 (Failed): Error (exit code 1)",
    )


def test_max_failed_trials_is_what_a_sweep_without_an_objective_tolerates():
    tolerated = observed(
        active=False, max_failed=2, counts={"Succeeded": 10, "Error": 2}, trial_errors=ERRORS
    )
    assert phase_of(tolerated)[:2] == ("Succeeded", "AllTrialsFinished")


@pytest.mark.parametrize("max_failed", [None, 0, 1, 2])
@pytest.mark.parametrize("failed", [0, 1, 2, 3])
def test_the_stop_and_the_final_verdict_read_max_failed_trials_alike(max_failed, failed):
    """Both ask `trials.too_many_failures`: a tolerance that stops a running sweep also fails an ended one,
    and unset, as the docs promise, nothing stops a sweep early while an ended one fails on any failure."""
    spec = make_spec(**({} if max_failed is None else {"maxFailedTrials": max_failed}))
    del spec["objective"]
    sweep = parse_sweep(spec)
    trials = [TrialResult(i, {}, FAILED) for i in range(failed)] + [TrialResult(failed, {}, SUCCEEDED)]
    stopped = stop_reason(summarize(trials, None), sweep) == STOP_TOO_MANY_FAILURES
    counts = {"Failed": failed, "Succeeded": 1}
    verdict = phase_of(observed(active=False, max_failed=sweep.max_failed_trials, counts=counts))
    assert stopped == (max_failed is not None and failed > max_failed)
    assert (verdict[1] == "TrialsFailed") == (failed > (max_failed or 0))
    if max_failed is not None:
        assert stopped == (verdict[1] == "TrialsFailed")


def test_reaching_the_target_succeeds_once_the_stopped_trials_ended():
    reached = observed(stop="TargetReached", best=BEST, target=0.2)
    assert phase_of(reached)[0] == "Running"
    assert "stopping" in phase_of(reached)[2]
    phase, reason, message = phase_of(observed(stop="TargetReached", best=BEST, target=0.2, active=False))
    assert (phase, reason) == ("Succeeded", "TargetReached")
    assert message == "trial 5 reached the objective's target 0.2 with 0.15"


def test_too_many_failures_and_errors_fail_it():
    failing = observed(stop="MaxFailedTrialsExceeded", max_failed=1, counts={"Failed": 1, "Error": 1})
    assert phase_of(failing) == (
        "Failed",
        "MaxFailedTrialsExceeded",
        "2 trials failed, more than maxFailedTrials (1)",
    )
    named = observed(
        stop="MaxFailedTrialsExceeded", max_failed=0, counts={"Failed": 1}, trial_errors=ERRORS[1:]
    )
    assert phase_of(named)[2] == (
        "1 trials failed, more than maxFailedTrials (0); trial 7 (Failed): Error (exit code 1)"
    )
    assert phase_of(observed(error=("InvalidSpec", "spec.x: bad"))) == (
        "Failed",
        "InvalidSpec",
        "spec.x: bad",
    )


def test_the_status_keeps_its_start_time_and_sets_completion_once():
    running = desired_status(None, 3, observed(best=BEST), NOW)
    assert running["startTime"] == "2026-01-02T03:04:05Z"
    assert running["completionTime"] is None
    assert running["observedGeneration"] == 3
    assert running["progress"] == "3/12"
    assert running["bestTrial"] == {
        "index": 5,
        "parameters": {"lr": "0.2"},
        "metric": 0.15,
        "workflow": "sweep-0",
    }
    assert {c["type"]: c["status"] for c in running["conditions"]} == {"Created": "True", "Running": "True"}
    assert running["trialErrors"] is None

    done = desired_status(running, 3, observed(active=False, counts={"Succeeded": 12}), LATER)
    assert done["startTime"] == running["startTime"]
    assert done["completionTime"] == "2026-01-02T04:00:00Z"
    assert {c["type"]: c["status"] for c in done["conditions"]} == {
        "Created": "True",
        "Running": "False",
        "Succeeded": "True",
    }
    again = desired_status(done, 3, observed(active=False, counts={"Succeeded": 12}), LATER.replace(hour=9))
    assert again == done


def test_an_invalid_spec_is_not_created_and_a_fixed_one_clears_the_failure():
    invalid = desired_status(None, 1, Observed(error=("InvalidSpec", "spec.x: bad")), NOW)
    assert {c["type"]: c["status"] for c in invalid["conditions"]} == {"Running": "False", "Failed": "True"}
    fixed = desired_status(invalid, 2, observed(), LATER)
    assert {c["type"]: c["status"] for c in fixed["conditions"]} == {
        "Running": "True",
        "Failed": "False",
        "Created": "True",
    }
    assert fixed["completionTime"] is None


def test_the_first_failed_trials_are_on_the_status_with_long_messages_cut():
    errors = (TrialError(2, "Error", "x" * 500), *ERRORS)
    status = desired_status(None, 1, observed(trial_errors=errors, counts={"Error": 1}), NOW)
    assert status["trialErrors"][0] == {"index": 2, "phase": "Error", "message": "x" * 300}
    assert [error["index"] for error in status["trialErrors"]] == [2, 3, 7]
