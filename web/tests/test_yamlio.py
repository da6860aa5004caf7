"""YAML written by yamlio reads back the same and is byte for byte what PyYAML's emitters write."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from hyperparam import manifests
from hyperparam.tests.conftest import make_hpw, make_spec
from web import yamlio

AWKWARD = {
    "multi-line": "line one\nline two\n",
    "looks like a bool": ["y", "n", "yes", "off", "true"],
    "looks like a number": ["1", "0.30", "1e3", "0x1f", "08", ".inf"],
    "empty": {"mapping": {}, "list": [], "string": "", "none": None},
    "unicode": "données — ✓",
    "quotes and colons": "a: b # not a comment",
    "leading space": " x",
    "long": "word " * 40,
    "numbers": [0, -1, 2.5, 1e-7, True, False],
}


def pure_python(document, **options) -> str:
    return yaml.dump(document, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False, **options)


def c_emitter(document, **options) -> str:
    return yaml.dump(document, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False, **options)


# Strings that YAML reads as something else, that need quotes or escapes, or that fold at the width.
TRICKY_STRINGS = [
    "", "y", "n", "N", "yes", "off", "null", "~", "1", "08", "0x1f", "1e3", ".inf", "1_000", "2026-11-25",
    "-", "- a", "--lr=0.1", "...", "---x", "a: b", "#x", "x #y", "{{item.lr}}", "'q'", '"d"', "@x", "%x",
    " lead", "trail ", "tab\tx", "é", "✓", "\x85", "\u2028", "a\nb", "word " * 20, "w" * 130, "/tmp/loss",
    "argoml.io/hyperparam-batch", "python:3.11",
    "0", "10", "99999", "007", "019", "+1", "-1", "1_0", "12\n", "\u0661\u0662", "1" * 40,
]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=90),
    st.sampled_from(TRICKY_STRINGS),
)
keys = st.one_of(st.text(max_size=30), st.integers(), st.booleans(), st.sampled_from(TRICKY_STRINGS))
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(
    document=st.one_of(st.dictionaries(keys, trees, max_size=6), st.lists(trees, max_size=6)),
    width=st.sampled_from([None, 10, 30, 80]),
    allow_unicode=st.booleans(),
)
def test_any_json_like_tree_is_written_as_the_c_emitter_writes_it(document, width, allow_unicode):
    assert yamlio.dump(document, width=width, allow_unicode=allow_unicode) == c_emitter(
        document, width=width, allow_unicode=allow_unicode
    )


def test_a_manifest_is_laid_out_by_yamlio_and_reads_as_pyyaml_writes_it(monkeypatch):
    workflow = manifests.build_batch(make_hpw(make_spec()), 0)
    expected = c_emitter(workflow)
    dumped = []
    real_dump = yaml.dump

    def recording_dump(document, **options):
        dumped.append(document)
        return real_dump(document, **options)

    monkeypatch.setattr(yaml, "dump", recording_dump)
    assert yamlio.dump(workflow) == expected
    assert workflow not in dumped, "the whole document went through PyYAML's representer"
    assert all(isinstance(document, list) and len(document) == 1 for document in dumped)  # single scalars


@pytest.mark.parametrize(
    "document",
    [
        {"shared": (shared := {"a": 1}), "again": shared},  # an anchor and an alias
        {"folds": "word " * 30},
        {"k" * 130: 1},  # not a simple key
        {"multi": "a\nb"},
        {"tuple": (1, 2)},
        {"set": {1, 2}},
        ["ok", {"nested": [[], {}, -0.0, 0.0, float("nan")]}],
    ],
    ids=["alias", "folds", "long-key", "multi-line", "tuple", "set", "zeros"],
)
def test_what_only_pyyaml_can_lay_out_falls_back_to_it(document):
    try:
        expected = c_emitter(document)
    except yaml.representer.RepresenterError:
        with pytest.raises(yaml.representer.RepresenterError):
            yamlio.dump(document)
        return
    assert yamlio.dump(document) == expected


def test_numbers_in_strings_are_quoted_as_pyyaml_quotes_them():
    """Decimal strings take a shortcut (a sweep writes 100,000 trial numbers); the near misses do not."""
    numbers = ["0", "7", "10", "99999", "1" * 40, "007", "019", "08", "+1", "-1", "1_0", "1e3", "\u0661"]
    document = {"items": [{"argoml-trial": number, number: number} for number in numbers]}
    assert yamlio.dump(document) == c_emitter(document)
    assert "- argoml-trial: '99999'\n" in yamlio.dump(document)


def test_a_registered_str_representer_is_followed():
    import hera._yaml  # noqa: F401 - registers a str representer that quotes y and n and writes | blocks

    document = {"y": ["y", "n", "yes", "a\nb\n"], "n": "plain"}
    assert yamlio.dump(document) == c_emitter(document)
    assert "- 'y'\n" in yamlio.dump(document)


def test_the_c_emitter_is_used_when_pyyaml_has_libyaml():
    assert yaml.__with_libyaml__, "the pinned PyYAML wheel ships libyaml; without it this is a slow fallback"
    assert yamlio.SafeDumper is yaml.CSafeDumper


@pytest.mark.parametrize("allow_unicode", [False, True])
def test_awkward_scalars_read_back_unchanged_and_match_the_python_emitter(allow_unicode):
    text = yamlio.dump(AWKWARD, allow_unicode=allow_unicode)
    assert yaml.safe_load(text) == AWKWARD
    assert text == pure_python(AWKWARD, allow_unicode=allow_unicode)


def test_several_documents_read_back_in_order():
    documents = [{"kind": "Service", "metadata": {"name": "a"}}, {"kind": "Pod", "spec": {"containers": []}}]
    text = yamlio.dump_all(documents)
    assert list(yaml.safe_load_all(text)) == documents
    assert text == yaml.dump_all(documents, Dumper=yaml.SafeDumper, sort_keys=False, default_flow_style=False)


def test_render_hyperparam_prints_byte_for_byte_what_the_python_emitter_printed(tmp_path):
    hyperparams = [{"name": "lr", "range": {"min": 1, "max": 400}}, {"name": "batch-size", "values": [1, 2]}]
    hpw = make_hpw(make_spec(hyperparams=hyperparams), uid="")
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(hpw))
    out = io.StringIO()
    call_command("render_hyperparam", str(path), stdout=out, stderr=io.StringIO())

    hpw = yaml.safe_load(path.read_text())  # as the command read it
    sweep = manifests.sweep_of(hpw)
    plan = manifests.plan_batches(hpw, sweep)
    expected = "".join(
        "---\n" + pure_python(manifests.build_batch(hpw, index, sweep=sweep, plan=plan))
        for index in range(plan.batch_count)
    )
    assert out.getvalue() == expected
