"""The committed schema (argo_schema.json) is what hera's models compile to, and reads back as compiled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workflows.lint import schema, schema_build
from workflows.lint.schema import SchemaNode

REPO = Path(__file__).resolve().parents[2]


def shape(node: SchemaNode, seen: dict[int, int]) -> object:
    """The node as nested tuples, each object numbered by first visit (the graph is recursive)."""
    if node.kind == schema.OBJECT:
        if id(node) in seen:
            return ("ref", seen[id(node)])
        seen[id(node)] = len(seen)
        fields = tuple((key, shape(child, seen)) for key, child in node.fields.items())
        return (node.kind, node.type_name, fields)
    item = None if node.item is None else shape(node.item, seen)
    return (node.kind, node.type_name, item)


def test_the_committed_file_is_what_hera_compiles_to():
    assert schema.SCHEMA_FILE.read_text(encoding="utf-8") == schema_build.render(), (
        "run .venv/bin/python -m workflows.lint.schema_build"
    )


def test_the_loaded_schema_has_the_compiled_shape_and_sharing():
    compiled = schema_build.compile_documents()
    loaded = schema.decode(schema_build.encode(compiled))
    seen_compiled: dict[int, int] = {}
    seen_loaded: dict[int, int] = {}
    for name in schema.DOCUMENT_MODELS.values():
        assert shape(loaded[name], seen_loaded) == shape(compiled[name], seen_compiled)
    assert len(seen_loaded) == len(seen_compiled) > 100


def test_a_recursive_type_stays_one_node():
    workflow = schema.document_schema("Workflow")
    assert workflow is not None
    spec = workflow.fields["spec"]
    template = spec.fields["templates"].item
    assert template is not None
    assert template.kind == schema.OBJECT
    assert spec.fields["templateDefaults"] is template


def test_the_check_fails_on_a_stale_file(tmp_path, monkeypatch):
    stale = tmp_path / "argo_schema.json"
    stale.write_text("{}\n", encoding="utf-8")
    monkeypatch.setattr(schema, "SCHEMA_FILE", stale)
    monkeypatch.setattr(sys, "argv", ["schema_build", "--check"])
    assert schema_build.main() == 1
    assert stale.read_text(encoding="utf-8") == "{}\n"
    monkeypatch.setattr(sys, "argv", ["schema_build"])
    assert schema_build.main() == 0
    assert stale.read_text(encoding="utf-8") == schema_build.render()


def test_the_linter_starts_without_importing_hera():
    code = (
        "import sys; from workflows.lint import lint_document; "
        "r = lint_document({'apiVersion': 'argoproj.io/v1alpha1', 'kind': 'Workflow', "
        "'metadata': {'name': 'x'}, "
        "'spec': {'entrypoint': 'a', 'templates': [{'name': 'a', 'contaner': {}}]}}); "
        "print(r.messages); print([m for m in sys.modules if m.startswith('hera')])"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert 'unknown field "spec.templates[0].contaner"' in output[0]
    assert output[1] == "[]"
