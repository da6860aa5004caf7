"""The search space: parsing each kind of hyperparameter, lazy grids, reproducible random points."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from fields import ErrorList, SpecError
from hyperparam.space import (
    Choice,
    IntUniform,
    Range,
    SearchSpace,
    Uniform,
    parse_hyperparams,
    unit_draw,
)


def parse(*entries: dict) -> list:
    """Parse hyperparams, raising SpecError like the sweep parser does."""
    errors = ErrorList()
    domains = parse_hyperparams(list(entries), "spec.hyperparams", errors, frozenset({"argoml-trial"}))
    errors.raise_if_any()
    return domains


def problems(*entries: object) -> list[str]:
    errors = ErrorList()
    parse_hyperparams(list(entries), "spec.hyperparams", errors, frozenset({"argoml-trial"}))
    return [str(error) for error in errors.errors]


def values_of(entry: dict) -> list[str]:
    (domain,) = parse(entry)
    return list(domain.values())


# --- values -------------------------------------------------------------------------------------------------


def test_values_reach_templates_as_written():
    assert values_of({"name": "opt", "values": ["adam", "sgd"]}) == ["adam", "sgd"]
    assert values_of({"name": "lr", "values": ["0.10", "1e-3", " 7 "]}) == ["0.10", "1e-3", " 7 "]


def test_numbers_in_values_are_written_the_shortest_exact_way():
    assert values_of({"name": "x", "values": [1, 0.1, 1e-05, 2.5e20, -3, 1.0]}) == [
        "1",
        "0.1",
        "1e-05",
        "2.5e+20",
        "-3",
        "1.0",
    ]


def test_booleans_in_values_are_written_as_json_booleans():
    assert values_of({"name": "flag", "values": [True, False]}) == ["true", "false"]


def test_categorical_is_values_under_another_name():
    (domain,) = parse({"name": "opt", "categorical": {"values": ["adam", 3]}})
    assert domain == Choice("opt", ("adam", "3"))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], "spec.hyperparams[0].values: must be a non-empty list"),
        ("adam", "spec.hyperparams[0].values: must be a non-empty list"),
        ([1, [2]], "spec.hyperparams[0].values[1]: must be a string, number or boolean"),
        ([None], "spec.hyperparams[0].values[0]: must be a string, number or boolean"),
        ([math.inf], "spec.hyperparams[0].values[0]: must be a finite number"),
        ([1, "1"], "spec.hyperparams[0].values[1]: duplicate of spec.hyperparams[0].values[0] ('1')"),
        (["{{workflow.name}}"], "spec.hyperparams[0].values[0]: must not contain '{{'"),
    ],
)
def test_bad_values_are_rejected_with_their_path(values, expected):
    [message] = problems({"name": "x", "values": values})
    assert message.startswith(expected)


# --- range --------------------------------------------------------------------------------------------------


def test_float_ranges_do_not_drift():
    assert values_of({"name": "lr", "range": {"min": 0.1, "max": 0.5, "step": 0.1}}) == [
        "0.1",
        "0.2",
        "0.3",
        "0.4",
        "0.5",
    ]


def test_a_long_float_range_lands_exactly_on_max():
    values = values_of({"name": "x", "range": {"min": 0, "max": 1, "step": 0.01}})
    assert len(values) == 101
    assert values[-1] == "1.00"
    assert values[30] == "0.30"
    assert all(Decimal(value) == Decimal(index) / 100 for index, value in enumerate(values))


def test_numeric_strings_keep_their_written_precision():
    assert values_of({"name": "x", "range": {"min": "0.10", "max": "0.25", "step": "0.05"}}) == [
        "0.10",
        "0.15",
        "0.20",
        "0.25",
    ]


def test_integer_ranges_step_and_stop_at_or_before_max():
    assert values_of({"name": "bs", "range": {"min": 1, "max": 10, "step": 3}}) == ["1", "4", "7", "10"]
    assert values_of({"name": "bs", "range": {"min": 1, "max": 9, "step": 3}}) == ["1", "4", "7"]


def test_integer_ranges_default_to_step_one():
    assert values_of({"name": "n", "range": {"min": -2, "max": 2}}) == ["-2", "-1", "0", "1", "2"]


def test_a_range_of_one_value():
    assert values_of({"name": "n", "range": {"min": 0.5, "max": 0.5, "step": 1}}) == ["0.5"]


def test_range_knows_its_size_without_listing_values():
    (domain,) = parse({"name": "n", "range": {"min": 0, "max": 10**12, "step": 1}})
    assert domain.size == 10**12 + 1
    assert domain.value_at(10**12) == str(10**12)


def test_range_integer_flag_follows_how_bounds_were_written():
    integer, decimal = parse(
        {"name": "a", "range": {"min": 1, "max": 5}},
        {"name": "b", "range": {"min": 1.0, "max": 5, "step": 1}},
    )
    assert integer.is_integer
    assert not decimal.is_integer


@pytest.mark.parametrize(
    ("range_", "expected"),
    [
        ({"min": 0, "max": 1, "step": 0}, "spec.hyperparams[0].range.step: must be > 0, not 0"),
        ({"min": 0, "max": 1, "step": -0.5}, "spec.hyperparams[0].range.step: must be > 0, not -0.5"),
        ({"min": 2, "max": 1, "step": 1}, "spec.hyperparams[0].range.max: must be >= min (1 < 2)"),
        ({"min": 0.1, "max": 1}, "spec.hyperparams[0].range.step: required for a range of decimals"),
        ({"max": 1, "step": 1}, "spec.hyperparams[0].range.min: required"),
        (
            {"min": "a", "max": 1, "step": 1},
            "spec.hyperparams[0].range.min: must be a finite number, not 'a'",
        ),
        ({"min": "NaN", "max": 1, "step": 1}, "spec.hyperparams[0].range.min: must be a finite number"),
        ({"min": True, "max": 1, "step": 1}, "spec.hyperparams[0].range.min: must be a finite number"),
        ({"min": 0, "max": 1, "stp": 1}, "spec.hyperparams[0].range.stp: unknown field"),
        ([0, 1], "spec.hyperparams[0].range: must be an object with min, max and step"),
    ],
)
def test_bad_ranges_are_rejected_with_their_path(range_, expected):
    assert any(message.startswith(expected) for message in problems({"name": "x", "range": range_}))


def test_a_range_step_error_names_the_hyperparameter_position():
    messages = problems(
        {"name": "a", "values": [1]},
        {"name": "b", "values": [2]},
        {"name": "c", "range": {"min": 0, "max": 1, "step": 0}},
    )
    assert messages == ["spec.hyperparams[2].range.step: must be > 0, not 0"]


# --- sampled distributions ----------------------------------------------------------------------------------


def test_distributions_parse_to_their_domains():
    uniform, loguniform, integer = parse(
        {"name": "dropout", "uniform": {"min": 0, "max": 0.5}},
        {"name": "lr", "loguniform": {"min": 1e-5, "max": "0.1"}},
        {"name": "layers", "int": {"min": 2, "max": 8, "step": 2}},
    )
    assert uniform == Uniform("dropout", 0.0, 0.5)
    assert loguniform == Uniform("lr", 1e-5, 0.1, log=True)
    assert integer == IntUniform("layers", 2, 8, 2)
    assert list(integer.values()) == ["2", "4", "6", "8"]
    assert not uniform.finite
    assert integer.finite


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"loguniform": {"min": 0, "max": 1}},
            "spec.hyperparams[0].loguniform.min: must be > 0 for a log scale",
        ),
        ({"uniform": {"min": 1, "max": 0}}, "spec.hyperparams[0].uniform.max: must be >= min"),
        ({"uniform": {"min": 0}}, "spec.hyperparams[0].uniform.max: required"),
        ({"int": {"min": 0.5, "max": 3}}, "spec.hyperparams[0].int.min: must be an integer"),
        ({"int": {"min": 1, "max": 3, "step": 0}}, "spec.hyperparams[0].int.step: must be > 0"),
        ({"int": {"min": 1, "max": 9, "step": 2, "log": True}}, "spec.hyperparams[0].int.step: must be 1"),
        ({"int": {"min": 0, "max": 9, "log": True}}, "spec.hyperparams[0].int.min: must be >= 1"),
        ({"int": {"min": 0, "max": 9, "log": "yes"}}, "spec.hyperparams[0].int.log: must be true or false"),
        ({"categorical": ["a"]}, "spec.hyperparams[0].categorical: must be an object with `values`"),
    ],
)
def test_bad_distributions_are_rejected_with_their_path(entry, expected):
    assert any(message.startswith(expected) for message in problems({"name": "x", **entry}))


def test_samples_stay_inside_their_bounds():
    uniform = Uniform("u", -1.0, 1.0)
    loguniform = Uniform("l", 1e-5, 1e-1, log=True)
    integer = IntUniform("i", 1, 1000, log=True)
    for u in (0.0, 0.25, 0.999999999):
        assert -1.0 <= float(uniform.sample(u)) <= 1.0
        assert 1e-5 <= float(loguniform.sample(u)) <= 1e-1
        assert 1 <= int(integer.sample(u)) <= 1000
    assert math.isclose(float(loguniform.sample(0.5)), 1e-3)  # the geometric middle


def test_loguniform_spreads_evenly_across_orders_of_magnitude():
    domain = Uniform("lr", 1e-6, 1e-2, log=True)
    draws = [float(domain.sample(unit_draw(7, index, "lr"))) for index in range(4000)]
    below_1e_4 = sum(draw < 1e-4 for draw in draws) / len(draws)
    assert 0.45 < below_1e_4 < 0.55


# --- names --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([{"values": [1]}], "spec.hyperparams[0].name: required"),
        (
            [{"name": "a.b", "values": [1]}],
            "spec.hyperparams[0].name: 'a.b' is not a valid Argo parameter name",
        ),
        ([{"name": "argoml-trial", "values": [1]}], "spec.hyperparams[0].name: 'argoml-trial' is reserved"),
        (
            [{"name": "lr", "values": [1]}, {"name": "lr", "values": [2]}],
            "spec.hyperparams[1].name: duplicate of spec.hyperparams[0].name ('lr')",
        ),
        ([{"name": "lr"}], "spec.hyperparams[0]: must have exactly one of values, range"),
        (
            [{"name": "lr", "values": [1], "range": {"min": 0, "max": 1}}],
            "spec.hyperparams[0]: must have exactly one of values, range, uniform, loguniform, int, "
            "categorical (found: values, range)",
        ),
        ([{"name": "lr", "value": [1]}], "spec.hyperparams[0].value: unknown field"),
        (["lr"], "spec.hyperparams[0]: must be an object"),
    ],
)
def test_bad_entries_are_rejected_with_their_path(entries, expected):
    assert any(message.startswith(expected) for message in problems(*entries))


def test_an_empty_list_of_hyperparameters_is_rejected():
    errors = ErrorList()
    parse_hyperparams([], "spec.hyperparams", errors, frozenset())
    assert [str(e) for e in errors.errors] == [
        "spec.hyperparams: must be a non-empty list of hyperparameters"
    ]


def test_every_problem_is_reported_at_once():
    with pytest.raises(SpecError) as raised:
        parse({"name": "a", "values": []}, {"name": "b", "range": {"min": 1, "max": 0}}, {"values": [1]})
    assert [error.path for error in raised.value.errors] == [
        "spec.hyperparams[0].values",
        "spec.hyperparams[1].range.max",
        "spec.hyperparams[2].name",
    ]


# --- the grid -----------------------------------------------------------------------------------------------


def grid_3x4() -> SearchSpace:
    return SearchSpace(
        tuple(
            parse(
                {"name": "lr", "range": {"min": 0.1, "max": 0.3, "step": 0.1}},
                {"name": "bs", "values": [16, 32, 64, 128]},
            )
        )
    )


def test_a_3x4_grid_is_the_cartesian_product_in_product_order():
    space = grid_3x4()
    expected = [
        {"lr": lr, "bs": bs} for lr, bs in itertools.product(["0.1", "0.2", "0.3"], ["16", "32", "64", "128"])
    ]
    assert space.grid_size_up_to(100) == 12
    assert list(space.grid_points(0, 12)) == expected
    assert [space.grid_point(index) for index in range(12)] == expected


def test_any_slice_of_the_grid_matches_the_full_expansion():
    space = grid_3x4()
    everything = list(space.grid_points(0, 12))
    for start in range(13):
        for stop in range(start, 13):
            assert list(space.grid_points(start, stop)) == everything[start:stop]


def test_a_100k_grid_is_counted_and_indexed_without_expanding():
    space = SearchSpace(
        tuple(
            parse(
                {"name": "a", "range": {"min": 0, "max": 0.99, "step": 0.01}},
                {"name": "b", "range": {"min": 1, "max": 100}},
                {"name": "c", "values": [f"v{i}" for i in range(10)]},
            )
        )
    )
    product = itertools.product(
        [str(Decimal(i) / 100) for i in range(100)],
        [str(i) for i in range(1, 101)],
        [f"v{i}" for i in range(10)],
    )
    assert space.grid_size_up_to(10**6) == 100_000
    sliced = list(space.grid_points(54_321, 54_400))
    expected = [dict(zip("abc", combo, strict=True)) for combo in itertools.islice(product, 54_321, 54_400)]
    assert [{k: str(Decimal(v)) if k == "a" else v for k, v in point.items()} for point in sliced] == expected
    assert space.grid_point(99_999) == {"a": "0.99", "b": "100", "c": "v9"}


def test_a_grid_too_big_to_list_still_answers_any_index():
    space = SearchSpace(
        tuple(parse(*({"name": f"p{i}", "range": {"min": 0, "max": 999}} for i in range(10))))
    )
    assert space.grid_size_up_to(1000**10) == 1000**10
    assert space.grid_size_up_to(10**6) == 1000**3  # the first partial product past the cap
    assert space.grid_point(1000**10 - 1) == {f"p{i}": "999" for i in range(10)}
    assert next(space.grid_points(123, 124)) == space.grid_point(123)


def test_grid_indices_outside_the_grid_are_refused():
    space = grid_3x4()
    with pytest.raises(IndexError):
        space.grid_point(12)
    with pytest.raises(IndexError):
        list(space.grid_points(5, 13))


def test_a_space_with_a_continuous_domain_has_no_grid():
    space = SearchSpace((Uniform("u", 0.0, 1.0),))
    assert not space.is_finite
    with pytest.raises(ValueError, match="u: a Uniform domain has no grid"):
        space.grid_size_up_to(10)


def test_the_item_width_bound_covers_every_value():
    space = SearchSpace(
        tuple(
            parse(
                {"name": "a", "range": {"min": -10.5, "max": 1000, "step": 0.25}},
                {"name": "b", "values": ["short", 'with "quotes"', "ünïcode"]},
                {"name": "c", "int": {"min": -5, "max": 123456}},
                {"name": "d", "range": {"min": "1e-9", "max": "1e-8", "step": "1e-9"}},
            )
        )
    )
    for domain in space.domains:
        widest = max(len(json.dumps(value)) for value in domain.values())
        assert widest <= domain.max_json_width()


# --- random points ------------------------------------------------------------------------------------------


def mixed_space() -> SearchSpace:
    return SearchSpace(
        tuple(
            parse(
                {"name": "lr", "loguniform": {"min": 1e-5, "max": 1e-1}},
                {"name": "dropout", "uniform": {"min": 0, "max": 0.5}},
                {"name": "layers", "int": {"min": 1, "max": 8}},
                {"name": "opt", "values": ["adam", "sgd", "rmsprop"]},
                {"name": "momentum", "range": {"min": 0.8, "max": 0.99, "step": 0.01}},
            )
        )
    )


def test_the_same_seed_gives_the_same_trials():
    first = [mixed_space().random_point(42, index) for index in range(50)]
    again = [mixed_space().random_point(42, index) for index in reversed(range(50))][::-1]
    assert first == again


def test_another_seed_gives_other_trials():
    space = mixed_space()
    assert [space.random_point(1, i) for i in range(10)] != [space.random_point(2, i) for i in range(10)]


def test_random_trials_are_pinned_so_a_change_of_generator_is_noticed():
    assert mixed_space().random_point(42, 0) == {
        "lr": "0.006534568602918238",
        "dropout": "0.3669218685335949",
        "layers": "3",
        "opt": "sgd",
        "momentum": "0.90",
    }


def test_adding_a_hyperparameter_leaves_the_others_draws_alone():
    smaller = SearchSpace(mixed_space().domains[:2])
    for index in range(20):
        full = mixed_space().random_point(3, index)
        assert smaller.random_point(3, index) == {key: full[key] for key in ("lr", "dropout")}


def test_random_trials_do_not_depend_on_the_python_hash_seed():
    script = (
        "import json; from hyperparam.space import SearchSpace, Choice, Uniform;"
        "s = SearchSpace((Choice('o', ('a', 'b', 'c', 'd')), Uniform('u', 0.0, 1.0)));"
        "print(json.dumps([s.random_point(9, i) for i in range(20)]))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_random_search_covers_every_choice():
    space = mixed_space()
    optimizers = {space.random_point(5, index)["opt"] for index in range(100)}
    assert optimizers == {"adam", "sgd", "rmsprop"}


# --- the Optuna seam: native values back to template strings ------------------------------------------------


def test_render_turns_suggested_values_into_template_strings():
    lr_range = Range("lr", Decimal("0.1"), Decimal("0.5"), Decimal("0.1"))
    assert lr_range.render(0.30000000000000004) == "0.3"
    assert Choice("opt", ("adam", "1")).render(1) == "1"
    assert IntUniform("n", 2, 8, 2).render(6) == "6"
    assert Uniform("u", 0.0, 1.0).render(0.25) == "0.25"


@pytest.mark.parametrize(
    ("domain", "value"),
    [
        (Range("lr", Decimal("0.1"), Decimal("0.5"), Decimal("0.1")), 0.9),
        (Range("lr", Decimal("0.1"), Decimal("0.5"), Decimal("0.1")), "x"),
        (Choice("opt", ("adam",)), "sgd"),
        (IntUniform("n", 2, 8, 2), 5),
        (IntUniform("n", 2, 8, 2), 2.5),
        (Uniform("u", 0.0, 1.0), 2.0),
        (Uniform("u", 0.0, 1.0), True),
    ],
)
def test_render_refuses_values_outside_the_domain(domain, value):
    with pytest.raises(ValueError, match=domain.name):
        domain.render(value)
