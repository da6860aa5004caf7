"""The sweep's status from what a reconcile observed: phase, reason, conditions, times and progress."""

from __future__ import annotations

from datetime import UTC, datetime

from hyperparam.status import BestTrial, Observed, desired_status, phase_of

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


def test_it_succeeds_once_every_batch_exists_and_none_runs():
    done = observed(active=False, counts={"Succeeded": 10, "Failed": 1, "MetricsUnavailable": 1})
    assert phase_of(done) == ("Succeeded", "AllTrialsFinished", "all 12 trials finished")
    assert phase_of(observed(active=False, all_batches_created=False))[0] == "Running"


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
