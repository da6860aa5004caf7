"""The shared field readers: one wording, `must be <what>, not <given>`, whichever app reads the field."""

from __future__ import annotations

import pytest

import fields


def read(reader, value, **options):
    found = fields.ErrorList()
    result = reader(found, "spec.x", value, **options)
    return result, [str(error) for error in found.errors]


@pytest.mark.parametrize(
    ("value", "options", "expected"),
    [
        (3, {"minimum": 1}, (3, [])),
        (None, {"minimum": 1}, (None, [])),
        ("3", {"minimum": 1}, (None, ["spec.x: must be an integer, not '3'"])),
        (True, {"minimum": 0}, (None, ["spec.x: must be an integer, not True"])),
        (1.5, {"minimum": 0}, (None, ["spec.x: must be an integer, not 1.5"])),
        (0, {"minimum": 1}, (None, ["spec.x: must be at least 1, not 0"])),
        (101, {"minimum": 0, "maximum": 100}, (None, ["spec.x: must be between 0 and 100, not 101"])),
    ],
)
def test_an_integer_is_read_or_refused_in_one_wording(value, options, expected):
    assert read(fields.integer, value, **options) == expected


def test_integers_reads_each_key_set_and_names_each_wrong_one():
    found = fields.ErrorList()
    given = {"minReplicas": 2, "maxReplicas": 0, "maxRestarts": "3"}
    minimums = {"minReplicas": 1, "maxReplicas": 1, "maxRestarts": 0, "nProcPerNode": 1}
    assert fields.integers(found, "spec.elasticPolicy", given, minimums) == {"minReplicas": 2}
    assert [str(error) for error in found.errors] == [
        "spec.elasticPolicy.maxReplicas: must be at least 1, not 0",
        "spec.elasticPolicy.maxRestarts: must be an integer, not '3'",
    ]


@pytest.mark.parametrize(
    ("reader", "value", "message"),
    [
        (fields.obj, [], "must be an object, not list"),
        (fields.items, {}, "must be a list, not dict"),
        (fields.text, 3, "must be a string, not int"),
        (fields.flag, "yes", "must be true or false, not 'yes'"),
        (fields.texts, ["a", 1], "must be a list of strings"),
        (fields.text_map, {"a": 1}, "must map names to strings"),
    ],
)
def test_each_reader_names_what_it_wanted_and_what_it_got(reader, value, message):
    assert read(reader, value)[1] == [f"spec.x: {message}"]


def test_the_coercers_read_a_wrong_type_as_empty():
    assert fields.as_dict({"a": 1}) == {"a": 1}
    assert fields.as_dict([1]) == {}
    assert fields.as_int(3) == 3
    assert fields.as_int(True) is None
    assert fields.as_int("3") is None


def test_errors_are_raised_together():
    found = fields.ErrorList()
    found.add("spec.a", "is required")
    found.add("spec.b", "unknown field")
    with pytest.raises(fields.SpecError) as raised:
        found.raise_if_any()
    assert str(raised.value) == "spec.a: is required; spec.b: unknown field"
