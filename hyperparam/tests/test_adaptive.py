"""Adaptive rounds: Optuna's suggestions as exact template strings, reproducible from the seed, learning from
earlier rounds rebuilt from stored trials, each sampler keeping its own bookkeeping between rounds."""

from __future__ import annotations

import pytest

from hyperparam.adaptive import PastTrial, ask_round, distribution_of, native_value
from hyperparam.manifests import sweep_of
from hyperparam.tests.conftest import make_hpw, make_spec


def adaptive(name: str, seed: int = 7, hyperparams: list | None = None):
    hyperparams = hyperparams or [
        {"name": "lr", "uniform": {"min": -1, "max": 1}},
        {"name": "batch-size", "uniform": {"min": -1, "max": 1}},
    ]
    spec = make_spec(
        hyperparams=hyperparams, algorithm={"name": name, "seed": seed}, maxTrials=30, parallelism=10
    )
    return sweep_of(make_hpw(spec))


def quadratic(params: dict[str, str]) -> float:
    return (float(params["lr"]) - 0.3) ** 2 + (float(params["batch-size"]) + 0.2) ** 2


def run_rounds(sweep, rounds: int = 3) -> list[list[float]]:
    history: list[PastTrial] = []
    attrs: dict = {}
    values_by_round = []
    for number in range(rounds):
        asked = ask_round(sweep, number, range(number * 10, number * 10 + 10), history, attrs)
        attrs = asked.study_system_attrs
        values = [quadratic(s.params) for s in asked.suggestions]
        history += [
            PastTrial(s.index, s.params, "Succeeded", v, s.system_attrs)
            for s, v in zip(asked.suggestions, values, strict=True)
        ]
        values_by_round.append(values)
    return values_by_round


@pytest.mark.parametrize("name", ["tpe", "cmaes"])
def test_a_model_based_sampler_improves_on_a_quadratic_over_three_rounds(name):
    rounds = run_rounds(adaptive(name))
    means = [sum(values) / len(values) for values in rounds]
    assert means[2] < means[0] / 2, means
    assert min(rounds[2]) < 0.05


def test_the_same_seed_asks_the_same_trials_and_another_seed_other_ones():
    first = ask_round(adaptive("tpe", seed=1), 0, range(5), [], {})
    again = ask_round(adaptive("tpe", seed=1), 0, range(5), [], {})
    other = ask_round(adaptive("tpe", seed=2), 0, range(5), [], {})
    assert [s.params for s in first.suggestions] == [s.params for s in again.suggestions]
    assert [s.params for s in first.suggestions] != [s.params for s in other.suggestions]


def test_qmc_continues_its_sequence_from_the_stored_study_attributes():
    sweep = adaptive("qmc")
    first = ask_round(sweep, 0, range(4), [], {})
    past = [PastTrial(s.index, s.params, "Succeeded", 1.0, s.system_attrs) for s in first.suggestions]
    second = ask_round(sweep, 1, range(4, 8), past, first.study_system_attrs)
    restarted = ask_round(sweep, 1, range(4, 8), past, {})
    seen = {tuple(s.params.values()) for s in first.suggestions}
    assert not seen & {tuple(s.params.values()) for s in second.suggestions}
    # Without them the sequence starts over (Optuna draws a study's very first trial at random, then
    # QMC's point 0 follows): the stored attributes are what keeps rounds apart.
    assert restarted.suggestions[0].params == first.suggestions[1].params


def test_suggestions_are_the_exact_strings_of_each_domain():
    sweep = adaptive(
        "tpe",
        hyperparams=[
            {"name": "lr", "range": {"min": 0.1, "max": 0.5, "step": 0.1}},
            {"name": "batch-size", "values": [16, "32", 64.5]},
        ],
    )
    asked = ask_round(sweep, 0, range(20), [], {})
    for suggestion in asked.suggestions:
        assert suggestion.params["lr"] in {"0.1", "0.2", "0.3", "0.4", "0.5"}
        assert suggestion.params["batch-size"] in {"16", "32", "64.5"}


def test_failed_and_unfinished_trials_are_told_as_such_or_left_out():
    sweep = adaptive("tpe")
    history = [
        PastTrial(0, {"lr": "0.1", "batch-size": "0.2"}, "Failed", None, {}),
        PastTrial(1, {"lr": "0.1", "batch-size": "0.2"}, "MetricsUnavailable", None, {}),
        PastTrial(2, {"lr": "0.1", "batch-size": "0.2"}, "Running", None, {}),
        PastTrial(3, {"lr": "9", "batch-size": "0.2"}, "Succeeded", 1.0, {}),  # outside the space now
    ]
    asked = ask_round(sweep, 1, range(4, 6), history, {})
    assert [s.index for s in asked.suggestions] == [4, 5]


def test_each_domain_maps_to_a_distribution_that_contains_its_values():
    sweep = adaptive(
        "tpe",
        hyperparams=[
            {"name": "lr", "range": {"min": "0.10", "max": "0.30", "step": "0.05"}},
            {"name": "batch-size", "int": {"min": 8, "max": 256, "step": 8}},
        ],
    )
    for domain in sweep.space.domains:
        distribution = distribution_of(domain)
        for text in domain.values():
            native = native_value(domain, text)
            assert distribution._contains(distribution.to_internal_repr(native))
            assert domain.render(native) == text
