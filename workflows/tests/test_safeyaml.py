"""The bounded YAML reader: alias bombs, deep nesting and oversized texts are refused from the event stream,
before any object is built; legitimate documents (scalar anchors, dates, JSON) read as before."""

from __future__ import annotations

import tracemalloc

import pytest

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
    assert str(refused.value) == "line 1: the YAML nests mappings and sequences more than 100 levels deep"
    with pytest.raises(safeyaml.YamlRefused, match="more than 3 levels deep"):
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
    assert "more than 10 values" in str(refused.value)


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
