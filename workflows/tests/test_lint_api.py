"""The linter's public API: documents and batches, the template index, results, structure, robustness."""

from __future__ import annotations

import copy
import json
import random
import textwrap
from pathlib import Path

import pytest

from workflows.lint import (
    DocumentLoadError,
    LintError,
    TemplateIndex,
    lint_document,
    lint_documents,
    lint_files,
    load_documents,
    load_file,
    load_template_index,
    warm_up,
)

EXAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "argo-examples"

PRINT_TEMPLATE = """
apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: printer
spec:
  templates:
  - name: print
    inputs:
      parameters: [{name: message}]
    outputs:
      parameters: [{name: printed, valueFrom: {path: /tmp/out}, globalName: last-printed}]
    container: {image: alpine, args: ["{{inputs.parameters.message}}"]}
"""

CALLER = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: caller-
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: first
        templateRef: {name: printer, template: print}
        arguments: {parameters: [{name: message, value: hi}]}
    - - name: second
        templateRef: {name: printer, template: print}
        arguments:
          parameters:
          - name: message
            value: "{{steps.first.outputs.parameters.printed}} {{workflow.outputs.parameters.last-printed}}"
"""


def document(text: str) -> dict:
    return load_documents(textwrap.dedent(text))[0]


class TestDocuments:
    def test_a_valid_workflow_has_no_errors(self):
        result = lint_document(document(CALLER))
        assert (result.kind, result.name, result.ok, result.linted) == ("Workflow", "caller-", True, True)

    def test_other_kinds_are_left_alone(self):
        result = lint_document(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}}
        )
        assert (result.linted, result.errors) == (False, ())

    def test_a_document_that_is_no_object_is_an_error(self):
        assert lint_document(["not", "a", "document"]).messages == ["a document must be an object, not array"]

    def test_workflow_event_bindings_get_structural_checks(self):
        binding = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "WorkflowEventBinding",
            "metadata": {"name": "on-event"},
            "spec": {"event": {"selector": "true"}, "sumbit": {}},
        }
        assert lint_document(binding).messages == ['unknown field "spec.sumbit"']

    def test_linting_never_changes_the_document(self):
        workflow = document(CALLER)
        before = copy.deepcopy(workflow)
        lint_document(workflow, TemplateIndex.from_documents([document(PRINT_TEMPLATE)]))
        assert workflow == before

    def test_results_serialise_to_json(self):
        result = lint_document(
            {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "spec": {"entrypoin": "x"}}
        )
        payload = json.loads(json.dumps(result.to_dict()))
        assert payload["valid"] is False
        assert {"path": "spec.entrypoin", "message": 'unknown field "spec.entrypoin"'} in payload["errors"]
        assert str(result.errors[0]) == result.errors[0].message


class TestTemplateReferences:
    def test_without_an_index_template_refs_are_not_followed(self):
        assert lint_document(document(CALLER)).ok

    def test_outputs_and_global_outputs_of_a_referenced_template_are_in_scope(self):
        index = TemplateIndex.from_documents([document(PRINT_TEMPLATE)])
        assert lint_document(document(CALLER), index).ok

    def test_a_referenced_template_must_get_its_inputs(self):
        caller = document(CALLER)
        del caller["spec"]["templates"][0]["steps"][0][0]["arguments"]
        index = TemplateIndex.from_documents([document(PRINT_TEMPLATE)])
        assert lint_document(caller, index).errors == (
            LintError(
                "templates.main.steps[0].first",
                "templates.main.steps[0].first templates.print inputs.parameters.message was not supplied",
            ),
        )

    def test_a_batch_knows_its_own_workflow_templates(self):
        results = lint_documents([document(CALLER), document(PRINT_TEMPLATE)])
        assert [result.ok for result in results] == [True, True]

    def test_a_workflow_template_ref_must_exist_in_the_index(self):
        workflow = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Workflow",
            "metadata": {"generateName": "x-"},
            "spec": {"workflowTemplateRef": {"name": "missing"}},
        }
        assert lint_document(workflow, TemplateIndex()).messages == [
            'workflowtemplates.argoproj.io "missing" not found'
        ]

    def test_the_index_ignores_what_is_not_a_workflow_template(self):
        index = TemplateIndex.from_documents([document(CALLER), {"kind": "WorkflowTemplate"}, "text"])
        assert len(index) == 0


class TestStructure:
    def test_unknown_fields_are_found_at_any_depth_with_their_path(self):
        workflow = document(CALLER)
        workflow["spec"]["templates"][0]["steps"][1][0]["arguments"]["parameters"][0]["valu"] = "x"
        workflow["spec"]["hooks"] = {"exit": {"template": "main", "argumnets": {}}}
        assert lint_document(workflow).messages[:2] == [
            'unknown field "spec.templates[0].steps[1][0].arguments.parameters[0].valu"',
            'unknown field "spec.hooks.exit.argumnets"',
        ]

    def test_any_scalar_fits_a_string_field_as_yaml_readers_convert_it(self):
        workflow = document(CALLER)
        workflow["spec"]["templates"].append({"name": "num", "container": {"image": 3, "args": [1, True]}})
        assert lint_document(workflow).ok

    def test_parameter_values_may_be_numbers_or_booleans(self):
        workflow = document(CALLER)
        workflow["spec"]["arguments"] = {"parameters": [{"name": "n", "value": 3, "enum": [3, 4]}]}
        assert lint_document(workflow).ok

    def test_null_values_are_accepted_anywhere(self):
        workflow = document(CALLER)
        workflow["spec"]["podGC"] = None
        workflow["spec"]["templates"][0]["inputs"] = None
        assert lint_document(workflow).ok

    def test_fields_added_in_argo_4_1_are_known(self):
        workflow = document(CALLER)
        workflow["spec"]["podResources"] = {"limits": {"cpu": "1"}}
        workflow["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-claim"}]
        workflow["spec"]["templates"][0]["podResources"] = {"requests": {"memory": "1Gi"}}
        assert lint_document(workflow).ok

    def test_plugin_templates_take_any_configuration(self):
        workflow = document(CALLER)
        workflow["spec"]["templates"].append(
            {"name": "hello", "plugin": {"hello": {"anything": [1, {"x": 2}]}}}
        )
        assert lint_document(workflow).ok


class TestFiles:
    def test_yaml_files_may_hold_several_documents(self, tmp_path):
        path = tmp_path / "both.yaml"
        path.write_text(PRINT_TEMPLATE + "---\n" + CALLER + "---\n")
        results = lint_files([path])
        assert [result.kind for result in results[str(path)]] == ["WorkflowTemplate", "Workflow"]
        assert all(result.ok for result in results[str(path)])

    def test_dates_stay_strings_as_kubernetes_reads_them(self):
        assert load_documents("value: 2024-01-01") == [{"value": "2024-01-01"}]

    def test_unparsable_or_missing_files_raise_a_load_error(self, tmp_path):
        broken = tmp_path / "broken.yaml"
        broken.write_text("kind: [Workflow")
        with pytest.raises(DocumentLoadError, match="not valid YAML"):
            load_file(broken)
        with pytest.raises(DocumentLoadError, match="cannot read"):
            load_file(tmp_path / "missing.yaml")

    def test_a_folder_of_templates_becomes_an_index(self):
        index = load_template_index(EXAMPLES / "cluster-workflow-template")
        assert index.spec("cluster-workflow-template-print-message", cluster_scope=True) is not None


def _mutations(value, rng: random.Random):
    """Randomly damaged copies of a document: wrong types, dropped and renamed keys, odd scalars."""
    if isinstance(value, dict):
        damaged = {}
        for key, child in value.items():
            roll = rng.random()
            if roll < 0.05:
                continue
            damaged[key + "x" if roll < 0.08 else key] = _mutations(child, rng)
        return damaged
    if isinstance(value, list):
        return [_mutations(child, rng) for child in value if rng.random() > 0.05]
    return rng.choice([value, value, value, None, 0, -1, "", "{{", "{{inputs.parameters.x}}", [], {}, True])


def test_damaged_documents_never_make_the_linter_fail():
    documents = [doc for path in sorted(EXAMPLES.rglob("*.yaml")) for doc in load_file(path)]
    index = TemplateIndex.from_documents(documents)
    rng = random.Random(20240601)  # noqa: S311 - reproducible damage, not secrets
    for _ in range(3):
        for original in documents:
            result = lint_document(_mutations(original, rng), index)
            assert all(isinstance(error, LintError) for error in result.errors)


def test_a_status_written_by_the_controller_is_never_an_error():
    workflow = document(CALLER)
    workflow["status"] = {"phase": "Running", "nodes": {"n": {"fieldOfANewerController": 1}}}
    assert lint_document(workflow).ok


def test_warming_up_compiles_the_schema_once():
    warm_up()
    assert lint_document(document(CALLER)).ok


def test_the_exit_hook_may_read_workflow_failures_like_an_exit_handler():
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "x-"},
        "spec": {
            "entrypoint": "main",
            "hooks": {"exit": {"template": "report"}},
            "templates": [
                {"name": "main", "container": {"image": "alpine"}},
                {"name": "report", "container": {"image": "alpine", "args": ["{{workflow.failures}}"]}},
            ],
        },
    }
    assert lint_document(workflow).ok
