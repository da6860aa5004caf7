"""YAML written through libyaml's emitter reads back the same and reads as PyYAML's own emitter writes it."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import call_command

from argoml_site import yamlio
from hyperparam import manifests
from hyperparam.tests.conftest import make_hpw, make_spec

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
