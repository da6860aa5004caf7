"""The bounded YAML and JSON reader: alias bombs (of collections, and of long strings), deep nesting and
oversized texts are refused from the event stream, before any object is built; legitimate documents (scalar
anchors, dates, JSON) read as before; the bounds are the deployment's, read at every call."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

import limits
from workflows import safeyaml


def laughs(levels: int = 9, fan_out: int = 10, *, mapping: bool = False) -> str:
    """The billion-laughs document: each level lists the one below `fan_out` times (10^9 leaves at 9)."""
    if mapping:
        lines = ["l0: &l0 {a: lol, b: lol, c: lol, d: lol, e: lol, f: lol, g: lol, h: lol, i: lol, j: lol}"]
        for level in range(1, levels):
            refs = ", ".join(f"k{n}: *l{level - 1}" for n in range(fan_out))
            lines.append(f"l{level}: &l{level} {{{refs}}}")
    else:
        lines = [f"l0: &l0 [{', '.join(['lol'] * fan_out)}]"]
        for level in range(1, levels):
            lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n"


MERGE_BOMB = "\n".join(
    ["l0: &l0 {a: 1, b: 2}"]
    + [f"l{n}: &l{n} {{x: {{<<: *l{n - 1}}}, y: {{<<: *l{n - 1}}}}}" for n in range(1, 30)]
)
SELF_REFERENCE = "a: &a [1, *a]\n"


@pytest.fixture
def nothing_is_built(monkeypatch):
    """Fails the test if the reader gets as far as building Python objects."""

    def refuse(*args, **kwargs):
        raise AssertionError("a refused document was constructed")

    monkeypatch.setattr(safeyaml._DateAsStringLoader, "construct_document", refuse)


@pytest.mark.parametrize(
    "text",
    [laughs(), laughs(mapping=True), MERGE_BOMB, SELF_REFERENCE, "---\na: 1\n---\nb: &b [1]\nc: *b\n"],
    ids=["sequences", "mappings", "merge-keys", "self-reference", "second-document"],
)
def test_aliases_of_collections_are_refused_before_anything_is_built(text, nothing_is_built):
    tracemalloc.start()
    try:
        with pytest.raises(safeyaml.YamlRefused) as refused:
            safeyaml.load_all(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.limit == "alias"
    assert "is an alias of a mapping or a sequence" in str(refused.value)
    assert str(refused.value).startswith(f"line {refused.value.line}: *")
    assert peak < 2_000_000  # the expanded trees are 10^9 leaves; the scan holds one event at a time


def test_the_billion_laughs_document_is_under_a_kilobyte():
    assert len(laughs()) < 1000


def test_anchors_and_aliases_of_plain_values_still_load():
    text = "image: &image python:3.11\nsteps:\n- {name: a, image: *image}\n- {name: b, image: *image}\n"
    assert safeyaml.load(text) == {
        "image": "python:3.11",
        "steps": [{"name": "a", "image": "python:3.11"}, {"name": "b", "image": "python:3.11"}],
    }


def test_an_anchor_name_used_twice_is_refused_as_the_composer_refuses_it():
    with pytest.raises(safeyaml.YamlRefused):
        safeyaml.load("a: &x [1]\nb: &x 2\nc: *x\n")
    with pytest.raises(safeyaml.YamlRefused, match="second occurrence"):
        safeyaml.load("a: &x 1\nb: &x 2\nc: *x\n")


def test_dates_stay_strings_and_json_is_yaml():
    assert safeyaml.load("day: 2024-01-01") == {"day": "2024-01-01"}
    assert safeyaml.load('{"a": [1, 2.5, null, true]}') == {"a": [1, 2.5, None, True]}


def test_documents_keep_their_order_and_empty_ones_are_dropped_on_request():
    text = "a: 1\n---\n---\nb: 2\n"
    assert safeyaml.load_all(text) == [{"a": 1}, None, {"b": 2}]
    assert safeyaml.load_documents(text) == [{"a": 1}, {"b": 2}]
    assert safeyaml.load("") is None
    with pytest.raises(safeyaml.YamlRefused, match="expected one YAML document, found 3"):
        safeyaml.load(text)


def test_deep_nesting_is_refused_naming_the_limit(nothing_is_built):
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load("[" * 100_000 + "]" * 100_000)
    assert refused.value.limit == "depth"
    assert str(refused.value) == (
        "line 1: the YAML nests mappings and sequences more than 100 levels deep (MAX_YAML_DEPTH)"
    )
    with pytest.raises(safeyaml.YamlRefused, match=r"more than 3 levels deep$"):
        safeyaml.load("a: {b: {c: {d: 1}}}", safeyaml.Limits(max_depth=3))


def test_nesting_up_to_the_limit_loads():
    expected: list = []
    for _ in range(99):
        expected = [expected]
    assert safeyaml.load("[" * 100 + "]" * 100) == expected


def test_too_many_values_are_refused_naming_the_limit(nothing_is_built):
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load("[" + "1, " * 11 + "1]", safeyaml.Limits(max_nodes=10))
    assert refused.value.limit == "nodes"
    assert str(refused.value).endswith("more than 10 values (scalars, mappings and sequences)")


def test_a_text_past_the_byte_limit_is_refused_before_it_is_parsed(monkeypatch):
    monkeypatch.setattr(safeyaml.yaml, "parse", lambda *a, **k: pytest.fail("parsed"))
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load("é" * 6, safeyaml.Limits(max_bytes=10))
    assert refused.value.limit == "bytes"
    assert str(refused.value) == "the YAML text is 12 bytes, more than the limit of 10 bytes"


def test_a_syntax_error_names_the_line():
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load("a: 1\nb: [\n")
    assert refused.value.limit == "syntax"
    assert str(refused.value).startswith(f"not valid YAML: line {refused.value.line}: ")


def test_unsafe_tags_are_not_constructed():
    with pytest.raises(safeyaml.YamlRefused, match="not valid YAML"):
        safeyaml.load("!!python/object/apply:os.system ['true']")


# --- expansion: aliases of plain values --------------------------------------------------------------------


def scalar_bomb(length: int = 8000, aliases: int = 24_000) -> str:
    """One long string named by many aliases: 104 KB of text, 192 MB once written out (issue 27)."""
    return f"s: &s {'x' * length}\nmany: [{', '.join(['*s'] * aliases)}]\n"


def test_aliases_of_a_long_string_are_refused_from_the_event_stream(nothing_is_built):
    text = scalar_bomb()
    assert len(text) < 110_000
    tracemalloc.start()
    try:
        with pytest.raises(safeyaml.YamlRefused) as refused:
            safeyaml.load(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.limit == "expanded"
    assert str(refused.value) == (
        "line 2: the YAML's values, with every alias written out in full, come to more than the limit of "
        "4194304 bytes (MAX_YAML_EXPANDED_BYTES)"
    )
    assert peak < 2_000_000  # what the loaded tree would have made of it: 192 MB of JSON or YAML


def test_the_expanded_size_counts_every_scalar_keys_included_and_each_alias_at_its_scalars_size():
    text = "key: &v abcd\nother: [*v, *v]\n"  # key 3 + abcd 4 + other 5 + 2 * 4 = 20 bytes
    with limits.overridden(yaml_expanded_bytes=20):
        assert safeyaml.load(text) == {"key": "abcd", "other": ["abcd", "abcd"]}
    with limits.overridden(yaml_expanded_bytes=19), pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load(text)
    assert (refused.value.limit, refused.value.line) == ("expanded", 2)
    with limits.overridden(yaml_expanded_bytes=11), pytest.raises(safeyaml.YamlRefused):
        safeyaml.load("é: ééééé\n")  # UTF-8 bytes: 2 + 10


def test_a_few_aliases_of_an_image_are_well_within_the_bound():
    text = "image: &image python:3.11\n" + "".join(f"s{n}: *image\n" for n in range(1000))
    assert len(safeyaml.load(text)) == 1001


def test_the_bounds_are_the_deployments_read_at_every_call():
    document = "a: [1, 2, 3]\n"
    with limits.overridden(yaml_values=4), pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load(document)
    assert str(refused.value).endswith(
        "more than 4 values (scalars, mappings and sequences) (MAX_YAML_VALUES)"
    )
    with limits.overridden(yaml_depth=1), pytest.raises(safeyaml.YamlRefused, match="MAX_YAML_DEPTH"):
        safeyaml.load("a: {b: 1}")
    with (
        limits.overridden(yaml_bytes=5),
        pytest.raises(safeyaml.YamlRefused, match=r"5 bytes \(MAX_YAML_BYTES\)"),
    ):
        safeyaml.load(document)
    assert safeyaml.load(document) == {"a": [1, 2, 3]}


def test_a_callers_budget_tightens_the_deployments_bounds_and_never_loosens_them():
    loose = safeyaml.Limits(max_nodes=1_000_000, max_depth=1_000)
    with limits.overridden(yaml_values=3), pytest.raises(safeyaml.YamlRefused, match="MAX_YAML_VALUES"):
        safeyaml.load("[1, 2, 3]", loose)
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load("[1, 2, 3]", safeyaml.Limits(max_nodes=3))
    assert str(refused.value).endswith("more than 3 values (scalars, mappings and sequences)")  # no setting


def test_a_callers_byte_budget_also_bounds_what_its_aliases_expand_to():
    text = f"s: &s {'x' * 100}\nmany: [{', '.join(['*s'] * 20)}]\n"  # 184 bytes, 2,106 expanded
    budget = safeyaml.Limits(max_bytes=1000)
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load(text, budget)
    assert refused.value.limit == "expanded"
    assert str(refused.value).endswith("more than the limit of 1000 bytes")
    assert len(safeyaml.load(text, safeyaml.Limits(max_bytes=1000, max_expanded_bytes=3000))["many"]) == 20


# --- JSON ---------------------------------------------------------------------------------------------------


def test_json_loads_from_text_or_bytes():
    assert safeyaml.load_json('{"a": [1, 2.5, null, true, "\\u00e9"]}') == {"a": [1, 2.5, None, True, "é"]}
    assert safeyaml.load_json(b'{"runs": 2}') == {"runs": 2}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1,", "not valid JSON: line 1: Expecting value"),
        ('{"a": NaN}', "not valid JSON: NaN is not a JSON value"),
        ("[-Infinity]", "not valid JSON: -Infinity is not a JSON value"),
        (b"\xff", "not valid JSON: not UTF-8 (invalid start byte)"),
        ("", "not valid JSON: line 1: Expecting value"),
    ],
)
def test_what_is_not_json_is_refused_as_syntax(text, problem):
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load_json(text)
    assert (refused.value.limit, str(refused.value)) == ("syntax", problem)


def test_deep_json_is_refused_before_it_is_parsed(monkeypatch):
    monkeypatch.setattr(safeyaml.json, "loads", lambda *a, **k: pytest.fail("parsed"))
    with pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load_json('{"a":\n' + "[" * 100_000 + "]" * 100_000 + "}")
    assert (refused.value.limit, refused.value.line) == ("depth", 2)
    assert str(refused.value) == (
        "line 2: the JSON nests objects and arrays more than 100 levels deep (MAX_YAML_DEPTH)"
    )


def test_brackets_inside_strings_do_not_count_and_nesting_up_to_the_bound_loads():
    assert safeyaml.load_json(json.dumps({"s": "[" * 1000, "t": '\\"[' * 200})) == {
        "s": "[" * 1000,
        "t": '\\"[' * 200,
    }
    assert safeyaml.load_json("[" * 100 + "]" * 100) is not None
    with pytest.raises(safeyaml.YamlRefused, match=r"more than 3 levels deep$"):
        safeyaml.load_json('{"a": {"b": {"c": {}}}}', safeyaml.Limits(max_depth=3))


def test_a_json_text_past_the_byte_limit_is_refused_before_it_is_read(monkeypatch):
    monkeypatch.setattr(safeyaml.json, "loads", lambda *a, **k: pytest.fail("parsed"))
    with limits.overridden(yaml_bytes=10), pytest.raises(safeyaml.YamlRefused) as refused:
        safeyaml.load_json('["éééééé"]')
    assert str(refused.value) == "the JSON text is 16 bytes, more than the limit of 10 bytes (MAX_YAML_BYTES)"


@pytest.mark.parametrize(
    "text",
    ['"' + '\\"[' * 500_000 + "]", "[" + '"[", ' * 500_000],
    ids=["escaped-quotes-unterminated", "many-strings"],
)
def test_the_depth_scan_is_linear_in_hostile_strings(text):
    start = time.process_time()  # CPU time: the wall clock of a loaded machine counts other processes too
    with pytest.raises(safeyaml.YamlRefused, match="not valid JSON"):
        safeyaml.load_json(text)
    assert time.process_time() - start < 2  # a scan that retried each quote would take hours


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"spec": {"runPolicy": {"backoffLimit": 9223372036854775808}}}', "spec.runPolicy.backoffLimit"),
        ('{"spec": {"items": [1, -9223372036854775809]}}', "spec.items[1]"),
        ('{"spec": {"target": 1e999}}', "spec.target"),
        ('{"spec": {"target": -1E+400}}', "spec.target"),
        ("spec:\n  replicas: 1180591620717411303424\n", "spec.replicas"),
        ("spec:\n  target: .inf\n", "spec.target"),
        ("spec:\n  target: -.Inf\n", "spec.target"),
        ("spec:\n  target: .nan\n", "spec.target"),
    ],
)
def test_a_number_kubernetes_cannot_store_is_refused_naming_its_field(text, field):
    """Kubernetes stores 64-bit integers and finite numbers; anything else reached orjson and was a 500
    (issue 27's hostile-input suite)."""
    read = safeyaml.load_json if text.startswith("{") else safeyaml.load
    with pytest.raises(safeyaml.YamlRefused) as refused:
        read(text)
    assert refused.value.limit == "range"
    assert str(refused.value).startswith(f"{field}: ")


def test_the_64_bit_integers_and_large_finite_numbers_load():
    text = '{"a": 9223372036854775807, "b": -9223372036854775808, "c": 1.5e300, "d": 10000000000000000000e-1}'
    assert safeyaml.load_json(text) == {"a": 2**63 - 1, "b": -(2**63), "c": 1.5e300, "d": 1e18}
    assert safeyaml.load("a: 9223372036854775807\nb: 1.5e+300\n") == {"a": 2**63 - 1, "b": 1.5e300}


@pytest.mark.parametrize("text", ['{"a": ' + "7" * 5000 + "}", "a: " + "7" * 5000 + "\n"])
def test_an_integer_past_pythons_digit_limit_is_refused_not_raised(text):
    read = safeyaml.load_json if text.startswith("{") else safeyaml.load
    with pytest.raises(safeyaml.YamlRefused, match="digits"):
        read(text)


def nested(depth: int) -> object:
    value: object = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("depth", [0, 1, 99, 100])
def test_an_object_within_the_depth_bound_has_no_nesting_problem(depth):
    assert safeyaml.nesting_problem(nested(depth)) is None


@pytest.mark.parametrize("depth", [101, 100_000])
def test_an_object_past_the_depth_bound_is_named_by_the_bound(depth):
    assert safeyaml.nesting_problem(nested(depth)) == (
        "nests objects and arrays more than 100 levels deep (MAX_YAML_DEPTH)"
    )


def test_a_budget_tightens_the_object_depth_bound():
    assert safeyaml.nesting_problem(nested(5), safeyaml.Limits(max_depth=4)) == (
        "nests objects and arrays more than 4 levels deep"
    )
