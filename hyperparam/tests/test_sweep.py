"""Validating a HyperparamWorkflow spec into a Sweep, and the trials a grid or random sweep plans."""

from __future__ import annotations

import pytest

from fields import SpecError
from hyperparam.sweep import DEFAULT_PARALLELISM, parse_sweep, seed_from_uid
from hyperparam.tests.conftest import make_spec


def problems(spec: object) -> list[str]:
    with pytest.raises(SpecError) as raised:
        parse_sweep(spec)
    return [str(error) for error in raised.value.errors]


def test_a_valid_spec_becomes_a_sweep(spec):
    sweep = parse_sweep(spec)
    assert sweep.space.names == ("lr", "batch-size")
    assert sweep.algorithm.name == "grid"
    assert sweep.parallelism == 4
    assert sweep.objective.metric == "loss"
    assert sweep.objective.goal == "minimize"
    assert sweep.trial_count == 12
    assert sweep.entrypoint == "train"
    assert sweep.workflow is spec["workflow"]


def test_defaults_are_grid_search_and_katibs_parallelism(spec):
    del spec["parallelism"]
    sweep = parse_sweep(spec)
    assert sweep.algorithm.name == "grid"
    assert sweep.parallelism == DEFAULT_PARALLELISM
    assert sweep.max_trials is None
    assert sweep.max_failed_trials is None


def test_a_hyperparameter_the_entrypoint_does_not_declare_is_rejected(spec):
    spec["hyperparams"].append({"name": "momentum", "values": [0.9]})
    assert problems(spec) == [
        "spec.hyperparams[2].name: 'momentum' is not an input parameter of the entrypoint template 'train' "
        "(spec.workflow.templates[0].inputs.parameters declares: lr, batch-size, epochs)"
    ]


def test_an_entrypoint_input_nothing_fills_is_rejected(spec):
    spec["workflow"]["templates"][0]["inputs"]["parameters"].append({"name": "seed"})
    assert problems(spec) == [
        "spec.workflow.templates[0].inputs.parameters[3]: 'seed' has no value: sweep it in spec.hyperparams, "
        "set it in spec.workflow.arguments.parameters, or give it a default"
    ]


def test_entrypoint_inputs_from_workflow_arguments_are_passed_through(spec):
    spec["workflow"]["templates"][0]["inputs"]["parameters"].append({"name": "dataset"})
    assert parse_sweep(spec).passthrough_parameters == ("dataset",)


@pytest.mark.parametrize(
    ("workflow", "expected"),
    [
        (None, "spec.workflow: required: an Argo Workflow spec"),
        ({"templates": [{"name": "train"}]}, "spec.workflow.entrypoint: required"),
        ({"entrypoint": "train"}, "spec.workflow.templates: required: a non-empty list"),
        (
            {"entrypoint": "main", "templates": [{"name": "train"}]},
            "spec.workflow.entrypoint: no template named 'main' in spec.workflow.templates",
        ),
    ],
)
def test_a_missing_or_broken_workflow_is_rejected(workflow, expected):
    assert any(message.startswith(expected) for message in problems(make_spec(workflow=workflow)))


def test_the_metric_must_be_an_output_of_the_entrypoint(spec):
    spec["objective"]["metric"] = "accuracy"
    assert problems(spec) == [
        "spec.objective.metric: 'accuracy' is not an output parameter of the entrypoint template 'train' "
        "(spec.workflow.templates[0].outputs.parameters declares: loss)"
    ]


@pytest.mark.parametrize(
    ("objective", "expected"),
    [
        ("loss", "spec.objective: must be an object {metric"),
        ({"goal": "minimize"}, "spec.objective.metric: required"),
        (
            {"metric": "loss", "goal": "lower"},
            "spec.objective.goal: must be minimize or maximize, not 'lower'",
        ),
        (
            {"metric": "loss", "goal": "maximize", "target": "high"},
            "spec.objective.target: must be a finite number",
        ),
        (
            {"metric": "loss", "goal": "maximize", "target": float("nan")},
            "spec.objective.target: must be a finite",
        ),
        ({"metric": "loss", "goal": "maximize", "limit": 1}, "spec.objective.limit: unknown field"),
    ],
)
def test_a_bad_objective_is_rejected(objective, expected):
    assert any(message.startswith(expected) for message in problems(make_spec(objective=objective)))


def test_the_objective_target_is_kept_as_a_float(spec):
    spec["objective"]["target"] = 1
    assert parse_sweep(spec).objective.target == 1.0


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"algorithm": {"name": "bayes"}},
            "spec.algorithm.name: must be one of grid, random, tpe, cmaes, qmc",
        ),
        (
            {"algorithm": "bayes"},
            "spec.algorithm: must be one of grid, random, tpe, cmaes, qmc, not 'bayes'",
        ),
        ({"algorithm": 3}, "spec.algorithm: must be an algorithm name (grid | random | tpe | cmaes | qmc)"),
        (
            {"algorithm": {"name": "grid", "samples": 5}},
            "spec.algorithm.samples: only random search takes samples",
        ),
        ({"algorithm": {"name": "random"}}, "spec.algorithm.samples: required for random search"),
        (
            {"algorithm": {"name": "random", "samples": 0}},
            "spec.algorithm.samples: must be at least 1, not 0",
        ),
        (
            {"algorithm": {"name": "random", "samples": 5, "seed": -1}},
            "spec.algorithm.seed: must be between 0",
        ),
        (
            {"algorithm": {"name": "random", "samples": 5, "seed": 2**32}},
            "spec.algorithm.seed: must be between",
        ),
        ({"algorithm": {"name": "random", "samples": 5, "seeds": 1}}, "spec.algorithm.seeds: unknown field"),
        ({"algorithm": {"name": "tpe"}}, "spec.maxTrials: required for tpe search"),
        ({"parallelism": 0}, "spec.parallelism: must be at least 1, not 0"),
        ({"parallelism": "4"}, "spec.parallelism: must be an integer, not '4'"),
        ({"parallelism": True}, "spec.parallelism: must be an integer, not True"),
        ({"maxTrials": 0}, "spec.maxTrials: must be at least 1, not 0"),
        ({"maxFailedTrials": -1}, "spec.maxFailedTrials: must be at least 0, not -1"),
        ({"maxTrial": 5}, "spec.maxTrial: unknown field"),
    ],
)
def test_bad_sweep_settings_are_rejected_with_their_path(overrides, expected):
    assert any(message.startswith(expected) for message in problems(make_spec(**overrides)))


def test_grid_search_needs_finite_domains(spec):
    spec["hyperparams"][1] = {"name": "batch-size", "loguniform": {"min": 1, "max": 100}}
    assert problems(spec) == [
        "spec.hyperparams[1]: grid search needs a finite domain (values, range, int or categorical), "
        "not loguniform"
    ]


def test_a_grid_past_the_trial_ceiling_needs_max_trials(spec):
    spec["hyperparams"][0] = {"name": "lr", "range": {"min": 0, "max": 10**7}}
    assert problems(spec) == [
        "spec.hyperparams: must be at most 100000 combinations (MAX_TRIALS_PER_SWEEP), "
        f"not {4 * (10**7 + 1)}: narrow the space or set spec.maxTrials"
    ]
    spec["maxTrials"] = 1000
    assert parse_sweep(spec).trial_count == 1000


def test_every_problem_is_reported_together(spec):
    spec["parallelism"] = 0
    spec["objective"]["goal"] = "up"
    spec["hyperparams"][0]["range"]["step"] = 0
    assert sorted(error.split(":")[0] for error in problems(spec)) == [
        "spec.hyperparams[0].range.step",
        "spec.objective.goal",
        "spec.parallelism",
    ]


def test_a_spec_that_is_not_an_object_is_rejected():
    assert problems(["workflow"]) == ["spec: must be an object"]


def test_max_trials_caps_a_grid(spec):
    spec["maxTrials"] = 5
    sweep = parse_sweep(spec)
    assert sweep.trial_count == 5
    assert [trial.index for trial in sweep.planned_trials(0, 5)] == [0, 1, 2, 3, 4]
    with pytest.raises(IndexError):
        list(sweep.planned_trials(0, 6))


def test_grid_trials_are_numbered_in_grid_order(spec):
    sweep = parse_sweep(spec)
    trials = list(sweep.planned_trials(4, 6))
    assert [(t.index, t.params) for t in trials] == [
        (4, {"lr": "0.2", "batch-size": "16"}),
        (5, {"lr": "0.2", "batch-size": "32"}),
    ]


def random_spec(**algorithm) -> dict:
    return make_spec(
        algorithm={"name": "random", **algorithm},
        hyperparams=[
            {"name": "lr", "loguniform": {"min": 1e-4, "max": 1}},
            {"name": "batch-size", "int": {"min": 8, "max": 256}},
        ],
    )


def test_random_search_with_a_seed_is_reproducible():
    first = list(parse_sweep(random_spec(samples=20, seed=7)).planned_trials(0, 20))
    again = list(parse_sweep(random_spec(samples=20, seed=7)).planned_trials(10, 20))
    other = list(parse_sweep(random_spec(samples=20, seed=8)).planned_trials(0, 20))
    assert first[10:] == again
    assert [t.params for t in first] != [t.params for t in other]


def test_random_search_runs_samples_capped_by_max_trials():
    assert parse_sweep(random_spec(samples=20)).trial_count == 20
    assert parse_sweep({**random_spec(samples=20), "maxTrials": 5}).trial_count == 5
    assert parse_sweep({**random_spec(), "maxTrials": 9}).trial_count == 9


def test_an_unseeded_random_sweep_uses_the_fallback_seed():
    spec = random_spec(samples=3)
    assert parse_sweep(spec, fallback_seed=11).algorithm.seed == 11
    assert parse_sweep(random_spec(samples=3, seed=5), fallback_seed=11).algorithm.seed == 5


def test_the_seed_from_a_uid_is_stable_and_fits_optuna():
    seed = seed_from_uid("6f1c1f0e-2b1d-4c59-9f7e-0d8c2b8a1e11")
    assert seed == seed_from_uid("6f1c1f0e-2b1d-4c59-9f7e-0d8c2b8a1e11")
    assert seed != seed_from_uid("another-uid")
    assert 0 <= seed < 2**32


def test_adaptive_sweeps_run_max_trials_from_the_sampler():
    sweep = parse_sweep({**random_spec(), "algorithm": {"name": "tpe", "seed": 3}, "maxTrials": 30})
    assert sweep.algorithm.adaptive
    assert sweep.trial_count == 30
    with pytest.raises(ValueError, match="tpe trials come from the sampler"):
        list(sweep.planned_trials(0, 1))


@pytest.mark.parametrize(
    ("goal", "target", "value", "reached"),
    [
        ("minimize", 0.1, 0.1, True),
        ("minimize", 0.1, 0.2, False),
        ("maximize", 0.9, 0.95, True),
        ("maximize", 0.9, 0.5, False),
        ("maximize", None, 1e9, False),
    ],
)
def test_the_objective_knows_when_its_target_is_reached(goal, target, value, reached):
    objective = parse_sweep(make_spec(objective={"metric": "loss", "goal": goal, "target": target})).objective
    assert objective.reached(value) is reached


@pytest.mark.parametrize("algorithm", [None, "grid", {"name": "grid"}])
def test_a_plain_grid_needs_no_objective(algorithm):
    spec = make_spec(algorithm=algorithm)
    del spec["objective"]
    sweep = parse_sweep(spec)
    assert (sweep.algorithm.name, sweep.objective, sweep.metric) == ("grid", None, None)
    assert sweep.trial_count == 12


def test_a_random_sweep_needs_no_objective_and_takes_the_shorthand_with_max_trials():
    spec = make_spec(algorithm="random", maxTrials=5)
    del spec["objective"]
    sweep = parse_sweep(spec, fallback_seed=9)
    assert (sweep.algorithm.name, sweep.algorithm.seed, sweep.objective) == ("random", 9, None)
    assert sweep.trial_count == 5


@pytest.mark.parametrize("name", ["tpe", "cmaes", "qmc"])
def test_adaptive_search_still_requires_an_objective_and_says_why(name):
    spec = make_spec(algorithm=name, maxTrials=10)
    del spec["objective"]
    assert problems(spec) == [
        f"spec.objective: required for {name} search: it chooses each round's trials from the metric the "
        "earlier ones reported ({metric: <output parameter of the entrypoint>, goal: minimize | maximize})"
    ]


def test_the_metric_of_an_optimising_sweep_is_its_objectives(spec):
    assert parse_sweep(spec).metric == "loss"
