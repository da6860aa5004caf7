"""Algorithm settings read as the suggestion service katib-config names for each algorithm reads them
(Katib 0.19: hyperopt for random and tpe, Optuna for grid and multivariate-tpe, Goptuna for cmaes and
sobol), with the services' messages; and the median stopping rule's settings as its service reads them."""

from __future__ import annotations

import pytest

from katib.algorithms import MedianStop, read_algorithm, read_early_stopping


def algorithm(name, *settings):
    return {
        "algorithmName": name,
        "algorithmSettings": [{"name": key, "value": value} for key, value in settings],
    }


def read(name, *settings, fallback_seed=7):
    errors = []
    result = read_algorithm(algorithm(name, *settings), fallback_seed, errors)
    return result, [str(error) for error in errors]


@pytest.mark.parametrize(
    ("name", "engine"),
    [
        ("random", "random"),
        ("grid", "grid"),
        ("tpe", "tpe"),
        ("multivariate-tpe", "multivariate-tpe"),
        ("cmaes", "cmaes"),
        ("sobol", "qmc"),
    ],
)
def test_each_katib_name_maps_to_our_engines(name, engine):
    plan, errors = read(name)
    assert errors == []
    assert (plan.katib_name, plan.engine, plan.seed, plan.seeded, plan.options) == (
        name,
        engine,
        7,
        False,
        (),
    )


def test_which_algorithms_hyperparam_runs_today():
    runnable = {
        name: read(name)[0].runnable
        for name in ("random", "grid", "tpe", "multivariate-tpe", "cmaes", "sobol")
    }
    assert runnable == {
        "random": True,
        "grid": True,
        "tpe": True,
        "multivariate-tpe": False,
        "cmaes": True,
        "sobol": True,
    }


@pytest.mark.parametrize("name", ["random", "grid", "tpe", "multivariate-tpe", "cmaes"])
def test_random_state_is_the_seed(name):
    plan, errors = read(name, ("random_state", "42"))
    assert errors == []
    assert (plan.seed, plan.seeded) == (42, True)


def test_sobol_ignores_every_setting_as_goptuna_does():
    plan, errors = read("sobol", ("random_state", "x"), ("anything", "y"))
    assert errors == []
    assert (plan.seed, plan.options) == (7, ())


def test_hyperopt_tpe_settings_are_read_and_checked_in_its_words():
    plan, errors = read("tpe", ("gamma", "0.25"), ("prior_weight", "1.5"), ("n_EI_candidates", "24"))
    assert errors == []
    assert plan.options == (("gamma", 0.25), ("prior_weight", 1.5), ("n_EI_candidates", 24))
    assert plan.option("gamma") == 0.25
    assert read("tpe", ("gamma", "1"))[1] == [
        "spec.algorithm.algorithmSettings[0]: gamma should be in the range of (0, 1)"
    ]
    assert read("tpe", ("prior_weight", "0"))[1] == [
        "spec.algorithm.algorithmSettings[0]: prior_weight should be great than zero"
    ]
    assert read("tpe", ("n_EI_candidates", "0"))[1] == [
        "spec.algorithm.algorithmSettings[0]: n_EI_candidates should be great than zero"
    ]
    assert read("tpe", ("n_startup_trials", "5"))[1] == [
        "spec.algorithm.algorithmSettings[0]: unknown setting n_startup_trials for algorithm tpe"
    ]
    assert read("tpe", ("gamma", "abc"))[1] == [
        "spec.algorithm.algorithmSettings[0]: failed to validate gamma(abc): could not convert "
        "string to float: "
        "'abc'"
    ]


def test_hyperopt_random_takes_only_a_seed():
    assert read("random", ("random_state", "-1"))[1] == [
        "spec.algorithm.algorithmSettings[0]: random_state should be great or equal than zero"
    ]
    assert read("random", ("random_state", "x"))[1] == [
        "spec.algorithm.algorithmSettings[0]: failed to validate random_state(x): invalid literal "
        "for int() with "
        "base 10: 'x'"
    ]
    assert read("random", ("gamma", "0.5"))[1] == [
        "spec.algorithm.algorithmSettings[0]: unknown setting gamma for algorithm random"
    ]


def test_optuna_multivariate_tpe_settings():
    plan, errors = read("multivariate-tpe", ("n_startup_trials", "5"), ("n_ei_candidates", "10"))
    assert errors == []
    assert plan.options == (("n_startup_trials", 5), ("n_ei_candidates", 10))
    assert read("multivariate-tpe", ("n_startup_trials", "-1"))[1] == [
        "spec.algorithm.algorithmSettings[0]: n_startup_trials should be greate or equal than zero"
    ]
    assert read("multivariate-tpe", ("gamma", "0.1"))[1] == [
        "spec.algorithm.algorithmSettings[0]: unknown setting gamma for algorithm multivariate-tpe"
    ]


def test_optuna_grid_takes_only_a_seed():
    assert read("grid", ("random_state", "-3"))[1] == [
        "spec.algorithm.algorithmSettings[0]: random_state should be great or equal than zero"
    ]
    assert read("grid", ("step", "1"))[1] == [
        "spec.algorithm.algorithmSettings[0]: unknown setting step for algorithm grid"
    ]


def test_goptuna_cmaes_settings_in_gos_words():
    plan, errors = read("cmaes", ("restart_strategy", "ipop"), ("sigma", "0.3"), ("unknown", "ignored"))
    assert errors == []
    assert plan.options == (("restart_strategy", "ipop"), ("sigma", 0.3))
    prefix = "spec.algorithm.algorithmSettings[0]: Failed to create goptuna study and search space: "
    assert read("cmaes", ("restart_strategy", "ipopp"))[1] == [f"{prefix}invalid restart_strategy: 'ipopp'"]
    assert read("cmaes", ("sigma", "big"))[1] == [
        f'{prefix}strconv.ParseFloat: parsing "big": invalid syntax'
    ]
    assert read("cmaes", ("random_state", "1.5"))[1] == [
        f'{prefix}strconv.Atoi: parsing "1.5": invalid syntax'
    ]
    assert read("cmaes", ("restart_strategy", "bipop"))[0].option("restart_strategy") == "bipop"


def test_a_seed_our_samplers_cannot_take_is_refused():
    assert read("cmaes", ("random_state", "-1"))[1] == [
        "spec.algorithm.algorithmSettings[0].value: random_state must be between 0 and 4294967295 "
        "(our samplers "
        "seed numpy, which takes 32-bit seeds), not -1"
    ]
    assert read("random", ("random_state", str(2**32)))[1][0].endswith(f"not {2**32}")


def test_every_bad_setting_is_reported_at_once():
    _, errors = read("tpe", ("gamma", "2"), ("bad", "x"))
    assert [error.split(":")[0] for error in errors] == [
        "spec.algorithm.algorithmSettings[0]",
        "spec.algorithm.algorithmSettings[1]",
    ]


def test_malformed_settings_are_refused_not_crashed_on():
    errors = []
    assert read_algorithm({"algorithmName": "random", "algorithmSettings": "x"}, 0, errors) is None
    assert [str(error) for error in errors] == ["spec.algorithm.algorithmSettings: must be a list, not str"]
    errors = []
    assert read_algorithm({"algorithmName": "random", "algorithmSettings": [{"name": 1}]}, 0, errors) is None
    assert [str(error) for error in errors] == [
        "spec.algorithm.algorithmSettings[0]: name and value must be strings"
    ]


def test_median_stop_defaults_and_settings_as_its_service_reads_them():
    errors = []
    assert read_early_stopping({"algorithmName": "medianstop"}, errors) == MedianStop(3, 4)
    settings = [{"name": "min_trials_required", "value": "1"}, {"name": "start_step", "value": "2"}]
    assert read_early_stopping(
        {"algorithmName": "medianstop", "algorithmSettings": settings}, errors
    ) == MedianStop(1, 2)
    assert errors == []
    assert read_early_stopping(None, errors) is None


def test_malformed_median_stop_settings_are_refused():
    errors = []
    assert read_early_stopping({"algorithmName": "medianstop", "algorithmSettings": {}}, errors) is None
    assert [str(error) for error in errors] == [
        "spec.earlyStopping.algorithmSettings: must be a list, not dict"
    ]


@pytest.mark.parametrize(
    ("name", "value", "wanted"),
    [
        ("min_trials_required", "0", "min_trials_required must be greater than zero (>0)"),
        ("start_step", "0", "start_step must be greater or equal than one (>=1)"),
        ("start_step", "x", "failed to validate start_step(x): invalid literal for int() with base 10: 'x'"),
        ("rule", "x", "unknown setting rule for algorithm medianstop"),
    ],
)
def test_median_stop_settings_are_refused_in_its_services_words(name, value, wanted):
    errors = []
    raw = {"algorithmName": "medianstop", "algorithmSettings": [{"name": name, "value": value}]}
    assert read_early_stopping(raw, errors) is None
    assert [str(error) for error in errors] == [f"spec.earlyStopping.algorithmSettings[0]: {wanted}"]
