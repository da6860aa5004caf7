"""An Experiment as our engine's plan: the space, the algorithm, the budgets, the objective and early
stopping, and everything that cannot run refused by field before a trial is created."""

from __future__ import annotations

import pytest

import fields
import limits
from fields import SpecError
from hyperparam import sweep
from hyperparam.space import Choice, IntUniform
from katib.algorithms import MedianStop
from katib.plan import Budget, experiment_plan
from katib.tests import fake
from katib.tests.fake import edited

VALID = fake.experiment()


def refusals(experiment):
    with pytest.raises(SpecError) as refused:
        experiment_plan(experiment)
    return [str(error) for error in refused.value.errors]


def test_the_fake_experiment_plans_as_written_after_katibs_defaults():
    plan = experiment_plan(VALID)
    assert plan.space.domains == (IntUniform("lr", 1, 5), Choice("momentum", ("0.95", "0.85", "0.75")))
    assert (plan.algorithm.katib_name, plan.algorithm.engine, plan.algorithm.seed) == ("random", "random", 1)
    assert plan.budget == Budget(max_trials=6, parallel_trials=3, max_failed_trials=None)
    assert plan.objective.sweep == sweep.Objective("testme", "maximize", 0.11)
    assert plan.objective.additional_metrics == ()
    assert plan.objective.strategies == (("testme", "max"),)
    assert plan.early_stopping == MedianStop(min_trials_required=1, start_step=4)
    assert plan.resume_policy == "Never"


def test_a_plan_is_the_same_from_a_raw_or_a_stored_experiment():
    from katib.defaults import with_defaults

    assert experiment_plan(VALID) == experiment_plan(with_defaults(VALID))


def test_the_objective_carries_additional_metrics_and_each_strategy():
    objective = {
        "type": "minimize",
        "goal": 1,
        "objectiveMetricName": "loss",
        "additionalMetricNames": ["accuracy", "f1"],
        "metricStrategies": [{"name": "accuracy", "value": "max"}],
    }
    plan = experiment_plan(fake.experiment(objective=objective))
    assert plan.objective.sweep == sweep.Objective("loss", "minimize", 1.0)
    assert plan.objective.additional_metrics == ("accuracy", "f1")
    assert plan.objective.strategies == (("accuracy", "max"), ("loss", "min"), ("f1", "min"))
    assert (plan.objective.strategy("accuracy"), plan.objective.strategy("f1")) == ("max", "min")
    assert plan.objective.strategy("unlisted") == "latest"
    assert experiment_plan(edited(VALID, "spec.objective.goal", None)).objective.sweep.target is None


def test_an_objective_plan_refuses_what_no_engine_reads():
    assert refusals(edited(VALID, "spec.objective.goal", "high")) == [
        "spec.objective.goal: must be a finite number, not 'high'"
    ]
    for names in (["loss", 3], "loss"):
        assert refusals(edited(VALID, "spec.objective.additionalMetricNames", names)) == [
            "spec.objective.additionalMetricNames: must list metric names"
        ]
    strategies = [{"name": "testme", "value": "median"}]
    assert refusals(edited(VALID, "spec.objective.metricStrategies", strategies)) == [
        "spec.objective.metricStrategies[0].value: must be one of min, max, latest, not 'median'"
    ]


def test_without_random_state_the_seed_comes_from_the_uid_so_restarts_draw_the_same_trials():
    unseeded = edited(edited(VALID, "spec.algorithm.algorithmSettings", None), "metadata.uid", "abc-123")
    plan = experiment_plan(unseeded)
    assert (plan.algorithm.seed, plan.algorithm.seeded) == (sweep.seed_from_uid("abc-123"), False)
    assert experiment_plan(edited(unseeded, "metadata.uid", None)).algorithm.seed == 0


def test_an_invalid_experiment_is_refused_with_katibs_errors():
    assert refusals(edited(VALID, "spec.maxTrialCount", 0)) == [
        "spec.maxTrialCount: Invalid value: 0: must be greater than 0",
        "spec.parallelTrialCount: Invalid value: 3: should be less than or equal to spec.maxTrialCount",
    ]


def test_every_plan_problem_is_reported_at_once():
    broken = edited(
        edited(VALID, "spec.parameters.0.feasibleSpace.min", "x"),
        "spec.algorithm.algorithmSettings.0.value",
        "-1",
    )
    assert [error.split(":")[0] for error in refusals(broken)] == [
        "spec.parameters[0].feasibleSpace.min",
        "spec.algorithm.algorithmSettings[0]",
    ]


def test_grid_plans_katibs_combinations_and_refuses_a_larger_budget():
    grid = edited(VALID, "spec.algorithm", {"algorithmName": "grid"})
    assert experiment_plan(edited(grid, "spec.maxTrialCount", 15)).space.grid_size_up_to(100) == 15
    assert refusals(edited(grid, "spec.maxTrialCount", 16)) == [
        "spec.maxTrialCount: Max Trial Count: 16 > all possible search combinations: 15"
    ]
    continuous = edited(
        grid,
        "spec.parameters.0",
        {"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.1", "max": "1"}},
    )
    assert refusals(continuous) == [
        "spec.parameters[0].feasibleSpace.step: Param lr step is nil; For discrete search space, "
        "all parameters "
        "must include step"
    ]


def test_grid_without_a_budget_runs_the_whole_grid_within_the_deployments_bound():
    grid = edited(edited(VALID, "spec.algorithm", {"algorithmName": "grid"}), "spec.maxTrialCount", None)
    assert experiment_plan(grid).budget.max_trials is None
    huge = edited(grid, "spec.parameters.0.feasibleSpace.max", "1000000")
    with limits.overridden(trials_per_sweep=1000):
        assert refusals(huge) == [
            "spec.parameters: must be at most 1000 combinations (MAX_TRIALS_PER_SWEEP), not "
            "3000000: narrow the space "
            "or set spec.maxTrialCount"
        ]


def test_other_searches_need_a_trial_budget_to_stop():
    for name in ("random", "tpe", "cmaes"):
        unbounded = edited(
            edited(VALID, "spec.algorithm", {"algorithmName": name}), "spec.maxTrialCount", None
        )
        if name == "cmaes":
            unbounded = edited(
                unbounded,
                "spec.parameters.1",
                {"name": "momentum", "parameterType": "int", "feasibleSpace": {"min": "1", "max": "2"}},
            )
        assert refusals(unbounded) == [
            f"spec.maxTrialCount: required for {name} search on Argo-ML: our engine stops a search "
            "at its trial "
            "budget (Katib's SDK requires it too)"
        ]


def test_cmaes_needs_two_continuous_parameters_in_goptunas_words():
    cmaes = edited(VALID, "spec.algorithm", {"algorithmName": "cmaes"})
    assert refusals(cmaes) == [
        "spec.parameters: CMA-ES only supports two or more dimensional continuous search space."
    ]
    two = edited(
        cmaes,
        "spec.parameters.1",
        {"name": "momentum", "parameterType": "double", "feasibleSpace": {"min": "0", "max": "1"}},
    )
    assert experiment_plan(two).algorithm.engine == "cmaes"


def test_budgets_past_the_deployments_bounds_are_refused_in_limits_words():
    with limits.overridden(trials_per_sweep=5, parallel_trials=2):
        assert refusals(edited(VALID, "spec.parallelTrialCount", 3)) == [
            "spec.maxTrialCount: must be at most 5 trials (MAX_TRIALS_PER_SWEEP), not 6",
            "spec.parallelTrialCount: must be at most 2 trials at once (MAX_PARALLEL_TRIALS), not 3",
        ]


def test_early_stopping_settings_are_checked_by_the_plan():
    bad = edited(VALID, "spec.earlyStopping.algorithmSettings.0.value", "0")
    assert refusals(bad) == [
        "spec.earlyStopping.algorithmSettings[0]: min_trials_required must be greater than zero (>0)"
    ]
    assert experiment_plan(edited(VALID, "spec.earlyStopping", None)).early_stopping is None


def test_a_refusal_lists_the_first_problems_and_counts_the_rest():
    unknown = [{"name": f"p{index}", "parameterType": "unknown"} for index in range(500)]
    errors = refusals(edited(VALID, "spec.parameters", VALID["spec"]["parameters"] + unknown))
    assert len(errors) == fields.MAX_LISTED + 1
    unlisted = 500 - fields.MAX_LISTED - 1
    assert errors[-1].endswith(
        f"this and {unlisted} more problems after it are not listed (a report lists the first "
        f"{fields.MAX_LISTED})"
    )
