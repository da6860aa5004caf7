"""Katib's errors in apimachinery's words: the body of field.Invalid, field.Required and field.Forbidden,
and bad values printed as Go prints them."""

from __future__ import annotations

import pytest

from katib import wording


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (-1, "-1"),
        (0.11, "0.11"),
        ("abc", '"abc"'),
        ('say "hi"', '"say \\"hi\\""'),
        (["a", "b"], '[]string{"a", "b"}'),
        ({"b": 1, "a": [2]}, '{"a": [2], "b": 1}'),
    ],
)
def test_a_bad_value_is_printed_as_go_prints_it(value, printed):
    assert wording.go_value(value) == printed


def test_the_three_bodies():
    assert str(wording.invalid("spec.x", 3, "must be small")) == "spec.x: Invalid value: 3: must be small"
    assert str(wording.required("spec.x", "must be specified")) == "spec.x: Required value: must be specified"
    assert str(wording.forbidden("spec", "no")) == "spec: Forbidden: no"
    assert str(wording.required("spec.x", "")) == "spec.x: Required value"


def test_quoted_text_is_cut_so_an_answer_does_not_grow_with_the_input():
    quoted = wording.go_value("x" * 10_000)
    assert len(quoted) < wording.QUOTE_LIMIT + 40
    assert quoted.endswith('... (9800 more characters)"')
    assert wording.cut("short") == "short"


def test_go_renderings_of_katibs_structs():
    assert wording.go_list(["${trialParameters.a}", "${trialParameters.b}"]) == (
        "[${trialParameters.a} ${trialParameters.b}]"
    )
    assert wording.go_trial_parameters([{"name": "lr", "reference": "learning_rate"}, "junk"]) == (
        "[{lr  learning_rate} {  }]"
    )
    assert (
        wording.go_parameters(
            [
                {
                    "name": "lr",
                    "parameterType": "double",
                    "feasibleSpace": {"min": "0.1", "max": "1", "step": "0.1"},
                }
            ]
        )
        == "[{lr double {1 0.1 [] 0.1 }}]"
    )
    assert wording.go_parameters("junk") == "[]"
