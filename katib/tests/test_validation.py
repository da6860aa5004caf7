"""Katib's validator_test.go (v0.19.0, pkg/webhook/v1beta1/experiment/validator), case by case: each test
names Katib's test function and the case's testDescription. Like Katib's, the cases compare each error's
path and type (Invalid value, Required value, Forbidden), not its detail; the wording has its own tests.
Where a case differs because we refuse what we do not run, the test says so."""

from __future__ import annotations

import copy

import pytest

from katib import constants as k
from katib.tests import fake
from katib.tests.fake import edited, kinds
from katib.validation import validate, validate_parameters

INVALID, REQUIRED, FORBIDDEN = "Invalid value", "Required value", "Forbidden"
VALID = fake.experiment()


def succeeded(experiment, reason=k.EXPERIMENT_MAX_TRIALS_REACHED_REASON):
    finished = copy.deepcopy(experiment)
    finished["status"] = {
        "conditions": [
            {"type": "Created", "status": "True"},
            {"type": "Running", "status": "False"},
            {"type": "Succeeded", "status": "True", "reason": reason},
        ]
    }
    return finished


# TestValidateExperiment: (testDescription, instance, old instance, wanted errors)
EXPERIMENT_CASES = [
    ("Name is invalid", edited(VALID, "metadata.name", "1234-test"), None, [("metadata.name", INVALID)]),
    (
        "Name is invalid (too long)",
        edited(VALID, "metadata.name", "test-manymanymanyextracharactersthatgobeyondlimit"),
        None,
        [("metadata.name", INVALID)],
    ),
    ("Objective is nil", edited(VALID, "spec.objective", None), None, [("spec.objective", REQUIRED)]),
    (
        "Objective type is unknown",
        edited(VALID, "spec.objective.type", ""),
        None,
        [("spec.objective.type", INVALID)],
    ),
    (
        "Objective metric name is empty",
        edited(VALID, "spec.objective.objectiveMetricName", ""),
        None,
        [("spec.objective.objectiveMetricName", REQUIRED)],
    ),
    (
        "additionalMetricNames should not contain objective metric name",
        edited(
            edited(VALID, "spec.objective.objectiveMetricName", "objective"),
            "spec.objective.additionalMetricNames",
            ["objective", "objective-1"],
        ),
        None,
        [("spec.objective.additionalMetricNames", INVALID)],
    ),
    ("Algorithm is nil", edited(VALID, "spec.algorithm", None), None, [("spec.algorithm", REQUIRED)]),
    (
        "Algorithm name is empty",
        edited(VALID, "spec.algorithm.algorithmName", ""),
        None,
        [("spec.algorithm.algorithmName", REQUIRED)],
    ),
    ("EarlyStopping is nil", edited(VALID, "spec.earlyStopping", None), None, []),
    (
        "EarlyStopping AlgorithmName is empty",
        edited(VALID, "spec.earlyStopping.algorithmName", ""),
        None,
        [("spec.earlyStopping.algorithmName", REQUIRED)],
    ),
    ("Run validator for correct experiment", VALID, None, []),
    (
        "Max failed trial count is negative",
        edited(VALID, "spec.maxFailedTrialCount", -1),
        None,
        [("spec.maxFailedTrialCount", INVALID)],
    ),
    (
        "Max trial count is negative",
        edited(VALID, "spec.maxTrialCount", -1),
        None,
        [("spec.maxTrialCount", INVALID)],
    ),
    (
        "Parallel trial count is negative",
        edited(VALID, "spec.parallelTrialCount", -1),
        None,
        [("spec.parallelTrialCount", INVALID)],
    ),
    ("Run validator to correct resume experiment", VALID, VALID, []),
    (
        "Resume succeeded experiment with ResumePolicy = NeverResume",
        VALID,
        succeeded(edited(VALID, "spec.resumePolicy", k.RESUME_NEVER)),
        [("spec.resumePolicy", INVALID), ("spec", FORBIDDEN)],
    ),
    (
        "Resume experiment with MaxTrialCount <= Status.Trials",
        VALID,
        {**edited(VALID, "spec.maxFailedTrialCount", 2), "status": {"trials": 6}},
        [("spec.maxTrialCount", INVALID)],
    ),
    (
        "Change algorithm name when resuming experiment",
        VALID,
        edited(VALID, "spec.algorithm.algorithmName", "not-test"),
        [("spec", FORBIDDEN)],
    ),
    (
        "Invalid resume policy",
        edited(VALID, "spec.resumePolicy", "invalid-policy"),
        None,
        [("spec.resumePolicy", INVALID)],
    ),
    (
        "Parameters and NAS config is nil",
        edited(VALID, "spec.parameters", []),
        None,
        [("spec", REQUIRED)],
    ),
    (
        # Katib: one error; we also refuse NAS by its field.
        "Parameters and NAS config is not nil",
        edited(VALID, "spec.nasConfig", {"operations": [{"operationType": "op1"}]}),
        None,
        [("spec", INVALID), ("spec.nasConfig", INVALID)],
    ),
    (
        "Trial template is nil",
        edited(VALID, "spec.trialTemplate", None),
        None,
        [("spec.trialTemplate", REQUIRED)],
    ),
    (
        "Invalid feasible space in parameters",
        edited(VALID, "spec.parameters.1.feasibleSpace.max", "5"),
        None,
        [("spec.parameters[1].feasibleSpace", INVALID)],
    ),
    (
        "maxFailedTrialCount greater than maxTrialCount",
        edited(edited(VALID, "spec.maxTrialCount", 5), "spec.maxFailedTrialCount", 6),
        None,
        [("spec.maxFailedTrialCount", INVALID)],
    ),
    (
        "maxFailedTrialCount equal to maxTrialCount",
        edited(edited(VALID, "spec.maxTrialCount", 5), "spec.maxFailedTrialCount", 5),
        None,
        [],
    ),
    (
        "parallelTrialCount greater than maxTrialCount",
        edited(edited(VALID, "spec.maxTrialCount", 5), "spec.parallelTrialCount", 6),
        None,
        [("spec.parallelTrialCount", INVALID)],
    ),
    (
        "parallelTrialCount equal to maxTrialCount",
        edited(edited(VALID, "spec.maxTrialCount", 5), "spec.parallelTrialCount", 5),
        None,
        [],
    ),
]


@pytest.mark.parametrize(
    ("instance", "old", "wanted"),
    [case[1:] for case in EXPERIMENT_CASES],
    ids=[case[0] for case in EXPERIMENT_CASES],
)
def test_validate_experiment(instance, old, wanted):
    """TestValidateExperiment."""
    assert kinds(validate(instance, old)) == wanted


def _parameters(index, field, value):
    return edited(VALID, f"spec.parameters.{index}.{field}", value)["spec"]["parameters"]


PARAMETER_CASES = [
    (
        "Invalid parameter type",
        _parameters(0, "parameterType", "invalid-type"),
        [("spec.parameters[0].parameterType", INVALID)],
    ),
    (
        "Feasible space is nil",
        _parameters(0, "feasibleSpace", {}),
        [("spec.parameters[0].feasibleSpace", REQUIRED)],
    ),
    (
        "Not empty list for int parameter type",
        _parameters(0, "feasibleSpace.list", ["invalid-list"]),
        [("spec.parameters[0].feasibleSpace.list", INVALID)],
    ),
    (
        "Empty max and min for int parameter type",
        _parameters(0, "feasibleSpace", {"max": "", "min": "", "step": "1"}),
        [("spec.parameters[0].feasibleSpace.max", REQUIRED)],
    ),
    (
        "Not empty max for categorical parameter type",
        _parameters(1, "feasibleSpace.max", "1"),
        [("spec.parameters[1].feasibleSpace", INVALID)],
    ),
    (
        "Invalid distribution type",
        _parameters(0, "feasibleSpace.distribution", "invalid-distribution"),
        [("spec.parameters[0].feasibleSpace.distribution", INVALID)],
    ),
    ("Valid parameters case", VALID["spec"]["parameters"], []),
]


@pytest.mark.parametrize(
    ("parameters", "wanted"),
    [case[1:] for case in PARAMETER_CASES],
    ids=[case[0] for case in PARAMETER_CASES],
)
def test_validate_parameters(parameters, wanted):
    """TestValidateParameters."""
    assert kinds(validate_parameters(parameters)) == wanted


def test_every_parameter_type_and_distribution_katib_declares_is_accepted():
    for kind in k.PARAMETER_TYPES:
        space = {"list": ["a"]} if kind in ("categorical", "discrete") else {"min": "1", "max": "2"}
        assert validate_parameters([{"name": "p", "parameterType": kind, "feasibleSpace": space}]) == []
    for distribution in k.DISTRIBUTIONS:
        space = {"min": "1", "max": "2", "distribution": distribution}
        assert validate_parameters([{"name": "p", "parameterType": "double", "feasibleSpace": space}]) == []


def test_discrete_refuses_min_max_and_step_as_categorical_does():
    space = {"list": ["1", "2"], "step": "1"}
    errors = validate_parameters([{"name": "p", "parameterType": "discrete", "feasibleSpace": space}])
    assert [str(error) for error in errors] == [
        'spec.parameters[0].feasibleSpace: Invalid value: "": feasibleSpace .max, .min and .step is not '
        "supported for parameterType: discrete"
    ]


# TestValidateConfigData: where Katib's katib-config has no entry for the algorithm, the early stopping
# rule or the collector, ours refuses the names it does not serve.
@pytest.mark.parametrize(
    ("instance", "path"),
    [
        (
            edited(VALID, "spec.metricsCollectorSpec.collector.kind", k.PROMETHEUS_COLLECTOR),
            "spec.metricsCollectorSpec.collector.kind",
        ),
        (
            edited(VALID, "spec.earlyStopping.algorithmName", "unknown-rule"),
            "spec.earlyStopping.algorithmName",
        ),
        (edited(VALID, "spec.algorithm.algorithmName", "hyperband"), "spec.algorithm.algorithmName"),
    ],
    ids=[
        "Get metrics collector config data error",
        "Get early stopping config data error",
        "Get suggestion config data error",
    ],
)
def test_validate_config_data(instance, path):
    """TestValidateConfigData."""
    assert path in [error.path for error in validate(instance)]


@pytest.mark.parametrize(
    "algorithm", ["hyperband", "pbt", "enas", "darts", "bayesianoptimization", "test", "Random"]
)
def test_algorithms_we_do_not_run_are_refused_by_field_with_what_to_use(algorithm):
    errors = validate(edited(VALID, "spec.algorithm.algorithmName", algorithm))
    assert [str(error) for error in errors] == [
        f'spec.algorithm.algorithmName: Invalid value: "{algorithm}": the "{algorithm}" algorithm is not '
        "served by Argo-ML: use one of random, grid, tpe, multivariate-tpe, cmaes, sobol"
    ]


@pytest.mark.parametrize("algorithm", ["random", "grid", "tpe", "multivariate-tpe", "cmaes", "sobol"])
def test_every_served_algorithm_is_accepted(algorithm):
    assert validate(edited(VALID, "spec.algorithm.algorithmName", algorithm)) == []


def test_an_early_stopping_rule_we_do_not_run_is_refused_by_field():
    errors = validate(edited(VALID, "spec.earlyStopping.algorithmName", "hyperband-stop"))
    assert [str(error) for error in errors] == [
        'spec.earlyStopping.algorithmName: Invalid value: "hyperband-stop": the "hyperband-stop" early '
        "stopping algorithm is not served by Argo-ML: use one of medianstop"
    ]


def test_nas_alone_is_refused_by_its_field():
    spec_without_parameters = edited(VALID, "spec.parameters", None)
    errors = validate(edited(spec_without_parameters, "spec.nasConfig", {"graphConfig": {"numLayers": 8}}))
    assert [error.path for error in errors] == ["spec.nasConfig"]
    assert "neural architecture search is not served by Argo-ML" in errors[0].message


def test_an_objective_error_stops_validation_as_katib_returns_early():
    broken = edited(edited(VALID, "spec.objective.type", "best"), "spec.algorithm", None)
    assert kinds(validate(broken)) == [("spec.objective.type", INVALID)]


def test_errors_read_as_katibs_in_apimachinerys_words():
    broken = edited(edited(VALID, "spec.maxTrialCount", 0), "metadata.name", "Bad")
    assert [str(error) for error in validate(broken)] == [
        'metadata.name: Invalid value: "Bad": name must consist of lower case alphanumeric characters or '
        "'-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name', or "
        "'abc-123', regex used for validation is '^[a-z]([-a-z0-9]*[a-z0-9])?)') and may not be longer than "
        "40 characters. ",
        "spec.maxTrialCount: Invalid value: 0: must be greater than 0",
    ]
    assert [str(error) for error in validate(edited(VALID, "spec.objective", None))] == [
        "spec.objective: Required value: must be specified"
    ]
    assert [str(error) for error in validate(edited(VALID, "spec.objective.type", "best"))] == [
        'spec.objective.type: Invalid value: "best": must be minimize or maximize'
    ]
    additional = edited(VALID, "spec.objective.additionalMetricNames", ["testme", "loss"])
    assert [str(error) for error in validate(additional)] == [
        'spec.objective.additionalMetricNames: Invalid value: []string{"testme", "loss"}: should not contain '
        "spec.objective.objectiveMetricName"
    ]


def test_the_name_rule_is_katibs_unanchored_prefix_match_and_forty_characters():
    assert validate(edited(VALID, "metadata.name", "a" * 40)) == []
    assert kinds(validate(edited(VALID, "metadata.name", "a" * 41))) == [("metadata.name", INVALID)]
    # Katib's pattern is not anchored at the end: only the first character is really checked here (the API
    # server's own name rule refuses the rest).
    assert validate(edited(VALID, "metadata.name", "a_B")) == []
    assert kinds(validate(edited(VALID, "metadata.name", ""))) == [("metadata.name", INVALID)]


def test_counts_that_are_not_integers_are_refused_in_our_shared_wording():
    errors = validate(edited(VALID, "spec.maxTrialCount", "6"))
    assert [str(error) for error in errors] == ["spec.maxTrialCount: must be an integer, not '6'"]


def test_a_restart_raises_budgets_only_and_past_the_trials_run():
    old = {**succeeded(edited(VALID, "spec.resumePolicy", k.RESUME_LONG_RUNNING)), "status": {"trials": 6}}
    old["status"]["conditions"] = succeeded(VALID)["status"]["conditions"]
    raised = edited(edited(VALID, "spec.resumePolicy", k.RESUME_LONG_RUNNING), "spec.maxTrialCount", 10)
    assert validate(raised, old) == []
    raised_parallel = edited(raised, "spec.parallelTrialCount", 4)
    assert validate(raised_parallel, old) == []
    # The same budget is no change (Katib checks a restart only when the spec changed); a lower one is.
    assert validate(edited(raised, "spec.maxTrialCount", 6), old) == []
    lowered = edited(raised, "spec.maxTrialCount", 5)
    assert [str(error) for error in validate(lowered, old)] == [
        "spec.maxTrialCount: Invalid value: 5: must be greater than status.trials count"
    ]
    changed = edited(raised, "spec.objective.goal", 0.5)
    assert [str(error) for error in validate(changed, old)] == [
        "spec: Forbidden: only spec.parallelTrialCount, spec.maxTrialCount and spec.maxFailedTrialCount are "
        "editable"
    ]


def test_a_finished_experiment_restarts_only_when_it_reached_its_budget_under_a_resuming_policy():
    raised = edited(edited(VALID, "spec.resumePolicy", k.RESUME_FROM_VOLUME), "spec.maxTrialCount", 10)
    for reason in ("ExperimentGoalReached", k.EXPERIMENT_MAX_TRIALS_REACHED_REASON):
        old = succeeded(edited(VALID, "spec.resumePolicy", k.RESUME_FROM_VOLUME), reason)
        wanted = [] if reason == k.EXPERIMENT_MAX_TRIALS_REACHED_REASON else [("spec.resumePolicy", INVALID)]
        assert kinds(validate(raised, old)) == wanted
    failed = {**VALID, "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    errors = validate(edited(VALID, "spec.maxTrialCount", 10), failed)
    assert str(errors[0]) == (
        'spec.resumePolicy: Invalid value: "": Experiment can be restarted if it is in succeeded state by '
        "reaching max trials and spec.resumePolicy = LongRunning or spec.resumePolicy = FromVolume, when "
        "experiment is completed"
    )


def test_an_unchanged_update_of_a_finished_experiment_is_not_a_restart():
    """Katib validates a restart only when the spec changed, so deleting a finished Experiment (an update
    that adds deletionTimestamp) is never refused."""
    old = succeeded(VALID)
    assert validate(copy.deepcopy(old), old) == []


def test_spec_comparison_treats_unset_and_zero_values_alike_as_go_does():
    old = edited(VALID, "spec.trialTemplate.retain", False)
    assert validate(edited(VALID, "spec.parameters.1.feasibleSpace.step", ""), old) == []


def test_malformed_parts_never_crash_validation():
    for broken in (
        {},
        {"spec": None},
        {"spec": {"objective": "max"}},
        edited(VALID, "spec.parameters", "lr"),
        edited(VALID, "spec.parameters", ["lr"]),
        edited(VALID, "spec.trialTemplate.trialParameters", "x"),
        edited(VALID, "spec.trialTemplate.trialParameters", [None, {"name": 3, "reference": "lr"}]),
        edited(VALID, "spec.metricsCollectorSpec", {"collector": {"kind": "File"}, "source": "x"}),
        edited(VALID, "spec.metricsCollectorSpec.source", {"filter": {"metricsFormat": "x"}}),
    ):
        assert isinstance(validate(broken), list)
