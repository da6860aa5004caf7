"""JSON Patch from a diff: applying it (with kubesim's RFC 6902 implementation) gives the new document."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from kubesim.patch import json_patch
from webhooks.jsonpatch import diff, escape

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


def test_equal_documents_need_no_operation():
    document = {"a": [1, {"b": None}], "c": "x"}
    assert diff(document, copy.deepcopy(document)) == []


def test_an_added_key_is_one_add_at_its_escaped_path():
    old = {"metadata": {"labels": {"app": "x"}}}
    new = {"metadata": {"labels": {"app": "x", "argoml.io/team~a": "ml"}}}
    assert diff(old, new) == [
        {"op": "add", "path": "/metadata/labels/argoml.io~1team~0a", "value": "ml"},
    ]


def test_a_list_grown_at_the_end_gets_adds_and_one_shrunk_gets_removes_from_the_end():
    assert diff({"l": [1]}, {"l": [1, 2, 3]}) == [
        {"op": "add", "path": "/l/1", "value": 2},
        {"op": "add", "path": "/l/2", "value": 3},
    ]
    assert diff({"l": [1, 2, 3]}, {"l": [1]}) == [
        {"op": "remove", "path": "/l/2"},
        {"op": "remove", "path": "/l/1"},
    ]


def test_json_types_are_told_apart_where_python_equality_is_not():
    assert diff({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert diff({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]


def test_a_prefix_roots_every_path():
    assert diff({"x": 1}, {"x": 2}, "/spec") == [{"op": "replace", "path": "/spec/x", "value": 2}]


def test_escape_follows_rfc_6901():
    assert escape("a/b~c") == "a~1b~0c"


documents = st.dictionaries(st.text(max_size=4), json_values, max_size=5)


@given(documents, documents)
def test_applying_the_diff_of_any_two_documents_gives_the_second(old, new):
    assert json_patch(copy.deepcopy(old), diff(old, new)) == new
