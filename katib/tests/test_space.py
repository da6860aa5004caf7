"""Katib's parameters as our domains: each exact mapping, and each refusal by field."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hyperparam.space import Choice, IntUniform, Range, Uniform
from katib.space import continuous_count, grid_problems, search_space


def parameter(kind, name="p", **space):
    return {"name": name, "parameterType": kind, "feasibleSpace": space}


def domains(*parameters):
    errors = []
    space = search_space(list(parameters), errors)
    assert errors == []
    assert space is not None
    return space.domains


def refusals(*parameters):
    errors = []
    assert search_space(list(parameters), errors) is None
    return [str(error) for error in errors]


@pytest.mark.parametrize(
    ("given", "domain"),
    [
        (parameter("int", min="1", max="5"), IntUniform("p", 1, 5)),
        (parameter("int", min="1", max="5", distribution="uniform"), IntUniform("p", 1, 5)),
        (parameter("int", min="0", max="10", step="5"), IntUniform("p", 0, 10, 5)),
        (parameter("int", min="-3", max="3", step="2"), IntUniform("p", -3, 3, 2)),
        (parameter("int", min="32", max="64", distribution="logUniform"), IntUniform("p", 32, 64, log=True)),
        (
            parameter("int", min="1", max="8", step="1", distribution="logUniform"),
            IntUniform("p", 1, 8, log=True),
        ),
        (parameter("double", min="0.01", max="0.05"), Uniform("p", 0.01, 0.05)),
        (
            parameter("double", min="0.001", max="3", distribution="logUniform"),
            Uniform("p", 0.001, 3.0, log=True),
        ),
        (
            parameter("double", min="0.01", max="0.05", step="0.005"),
            Range("p", Decimal("0.01"), Decimal("0.05"), Decimal("0.005")),
        ),
        (parameter("categorical", list=["sgd", "adam"]), Choice("p", ("sgd", "adam"))),
        (parameter("discrete", list=["0.95", "0.85"]), Choice("p", ("0.95", "0.85"))),
        (parameter("discrete", list=[1, 2.5, True]), Choice("p", ("1", "2.5", "true"))),
    ],
)
def test_each_exact_mapping(given, domain):
    assert domains(given) == (domain,)


def test_a_stepped_double_yields_katibs_grid_exactly_in_decimal():
    (domain,) = domains(parameter("double", min="0.01", max="0.05", step="0.005"))
    # Written to the step's precision (hyperparam's Range): the numbers Katib's np.arange gives, without its
    # float drift.
    assert list(domain.values()) == [
        "0.010",
        "0.015",
        "0.020",
        "0.025",
        "0.030",
        "0.035",
        "0.040",
        "0.045",
        "0.050",
    ]


def test_parameters_keep_their_order_and_names():
    space = domains(parameter("int", "a", min="1", max="2"), parameter("categorical", "b", list=["x"]))
    assert [domain.name for domain in space] == ["a", "b"]


@pytest.mark.parametrize(
    ("given", "wanted"),
    [
        (
            parameter("double", min="0", max="1", distribution="normal"),
            "spec.parameters[0].feasibleSpace.distribution: distribution normal has no domain in Argo-ML's "
            "engine: use uniform or logUniform",
        ),
        (
            parameter("int", min="1", max="9", distribution="logNormal"),
            "spec.parameters[0].feasibleSpace.distribution: distribution logNormal has no domain in "
            "Argo-ML's "
            "engine: use uniform or logUniform",
        ),
        (
            parameter("double", min="0", max="1", distribution="unknown"),
            "spec.parameters[0].feasibleSpace.distribution: distribution unknown has no domain in Argo-ML's "
            "engine: use uniform or logUniform",
        ),
        (
            parameter("unknown", min="0", max="1"),
            "spec.parameters[0].parameterType: parameterType 'unknown' has no domain in Argo-ML's "
            "engine: use "
            "int, double, categorical or discrete",
        ),
        (
            parameter("double", min="0.1", max="1", step="0.1", distribution="logUniform"),
            "spec.parameters[0].feasibleSpace.step: a step on a logUniform parameter has no domain "
            "in Argo-ML's "
            "engine: remove the step, or use distribution uniform",
        ),
        (
            parameter("int", min="1", max="64", step="2", distribution="logUniform"),
            "spec.parameters[0].feasibleSpace.step: a step on a logUniform parameter has no domain "
            "in Argo-ML's "
            "engine: remove the step, or use distribution uniform",
        ),
        (
            parameter("int", min="0", max="64", distribution="logUniform"),
            "spec.parameters[0].feasibleSpace.min: must be at least 1 for a logUniform int, not 0",
        ),
        (
            parameter("double", min="0", max="1", distribution="logUniform"),
            "spec.parameters[0].feasibleSpace.min: must be greater than 0 for a logUniform double, not 0",
        ),
        (
            parameter("int", min="1.5", max="3"),
            "spec.parameters[0].feasibleSpace.min: must be an integer for parameterType int, not '1.5'",
        ),
        (
            parameter("double", min="abc", max="3"),
            "spec.parameters[0].feasibleSpace.min: must be a number written as a string, not 'abc'",
        ),
        (
            parameter("double", min=0.1, max="3"),
            "spec.parameters[0].feasibleSpace.min: must be a number written as a string, not 0.1",
        ),
        (
            parameter("double", min="1e999", max="3"),
            "spec.parameters[0].feasibleSpace.min: must be a number a 64-bit float holds, not '1e999'",
        ),
        (
            parameter("int", min="1", max="99999999999999999999"),
            "spec.parameters[0].feasibleSpace.max: must be a 64-bit integer, not '99999999999999999999'",
        ),
        (
            parameter("double", min="5", max="1"),
            "spec.parameters[0].feasibleSpace.max: must be at least feasibleSpace.min (5), not 1",
        ),
        (
            parameter("double", min="1", max="5", step="0"),
            "spec.parameters[0].feasibleSpace.step: must be greater than 0, not 0",
        ),
        (parameter("double", max="5"), "spec.parameters[0].feasibleSpace.min: must be specified"),
        (parameter("categorical"), "spec.parameters[0].feasibleSpace.list: must list at least one value"),
        (
            parameter("categorical", list=[{"a": 1}]),
            "spec.parameters[0].feasibleSpace.list: must list strings",
        ),
    ],
)
def test_what_has_no_exact_domain_is_refused_by_field(given, wanted):
    assert refusals(given) == [wanted]


def test_names_must_be_given_and_unique():
    assert refusals(parameter("int", "", min="1", max="2"), parameter("int", "a", min="1", max="2")) == [
        "spec.parameters[0].name: must be specified"
    ]
    assert refusals(parameter("int", "a", min="1", max="2"), parameter("int", "a", min="1", max="2")) == [
        "spec.parameters[1].name: duplicate of spec.parameters[0].name ('a')"
    ]


def test_every_refusal_is_reported_at_once():
    assert len(refusals(parameter("double", min="x", max="y"), parameter("unknown"))) == 3


def space_of(*parameters):
    errors = []
    space = search_space(list(parameters), errors)
    assert space is not None
    return space


def test_grid_needs_a_step_on_every_double_in_katibs_words():
    space = space_of(parameter("int", "a", min="1", max="3"), parameter("double", "lr", min="0.1", max="0.5"))
    assert [str(error) for error in grid_problems(space, 3)] == [
        "spec.parameters[1].feasibleSpace.step: Param lr step is nil; For discrete search space, "
        "all parameters "
        "must include step"
    ]


def test_grid_refuses_more_trials_than_combinations_in_katibs_words():
    space = space_of(parameter("int", "a", min="1", max="3"), parameter("categorical", "b", list=["x", "y"]))
    assert grid_problems(space, 6) == []
    assert grid_problems(space, None) == []
    assert [str(error) for error in grid_problems(space, 7)] == [
        "spec.maxTrialCount: Max Trial Count: 7 > all possible search combinations: 6"
    ]


def test_continuous_parameters_are_int_and_double():
    given = [parameter("int"), parameter("double"), parameter("categorical"), parameter("discrete"), "x"]
    assert continuous_count(given) == 2
    assert continuous_count(None) == 0
