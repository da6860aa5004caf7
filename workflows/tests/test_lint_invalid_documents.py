"""Invalid documents beyond the workflow spec (API version, names, CronWorkflows, WorkflowTemplates):
exactly one error each, with its message and path."""

from __future__ import annotations

import textwrap

import pytest

from workflows.lint import LintError, lint_document, load_documents

TEMPLATES = "templates: [{name: main, container: {image: alpine}}]"

DOCUMENT_CASES = [
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1
        kind: Workflow
        metadata: {{generateName: case-}}
        spec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "apiVersion",
        'apiVersion "argoproj.io/v1" is not argoproj.io/v1alpha1',
        id="wrong-api-version",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata: {{name: Hello}}
        spec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "metadata.name",
        'metadata.name: Invalid value: "Hello": a lowercase RFC 1123 subdomain must consist of lower case'
        " alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g."
        " 'example.com', regex used for validation is"
        " '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        id="name-not-a-dns-subdomain",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata: {{generateName: Hello-}}
        spec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "metadata.generateName",
        'metadata.generateName: Invalid value: "Hello-": a lowercase RFC 1123 subdomain must consist of lower'
        " case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        " (e.g. 'example.com', regex used for validation is"
        " '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        id="generate-name-not-a-dns-subdomain",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: Workflow
        metadata: {{name: {"w" * 64}}}
        spec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "metadata.name",
        f'workflow name "{"w" * 64}" must not be more than 63 characters long (currently 64)',
        id="workflow-name-too-long",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: nightly}}
        spec:
          schedules: ['* * *']
          workflowSpec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "spec.schedules[0]",
        "cron schedule * * * is malformed: expected exactly 5 fields, found 3: [* * *]",
        id="cron-schedule-with-three-fields",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: nightly}}
        spec:
          schedules: ['0 25 * * *']
          workflowSpec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "spec.schedules[0]",
        "cron schedule 0 25 * * * is malformed: end of range (25) above maximum (23): 25",
        id="cron-hour-out-of-range",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: nightly}}
        spec:
          schedules: []
          workflowSpec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "spec.schedules",
        "cron workflow must have at least one schedule",
        id="cron-without-schedule",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: nightly}}
        spec:
          schedules: ['@daily']
          concurrencyPolicy: Sometimes
          workflowSpec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "spec.concurrencyPolicy",
        "'Sometimes' is not a valid concurrencyPolicy",
        id="cron-concurrency-policy",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: nightly}}
        spec:
          schedules: ['@daily']
          startingDeadlineSeconds: -10
          workflowSpec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "spec.startingDeadlineSeconds",
        "startingDeadlineSeconds must be positive",
        id="cron-negative-starting-deadline",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: {"c" * 53}}}
        spec:
          schedules: ['@daily']
          workflowSpec: {{entrypoint: main, {TEMPLATES}}}
        """,
        "metadata.name",
        f'cron workflow name "{"c" * 53}" must not be more than 52 characters long (currently 53)',
        id="cron-name-too-long",
    ),
    pytest.param(
        f"""
        apiVersion: argoproj.io/v1alpha1
        kind: CronWorkflow
        metadata: {{name: nightly}}
        spec:
          schedules: ['@daily']
          workflowSpec:
            entrypoint: main
            arguments: {{parameters: [{{name: day}}]}}
            {TEMPLATES}
        """,
        "spec.arguments.day",
        "spec.arguments.day.value or spec.arguments.day.valueFrom is required",
        id="cron-argument-without-value",
    ),
    pytest.param(
        """
        apiVersion: argoproj.io/v1alpha1
        kind: WorkflowTemplate
        metadata: {name: shared}
        spec:
          templates:
          - name: main
            script: {source: echo hi}
        """,
        "templates.main.script.image",
        "templates.main.script.image may not be empty",
        id="template-script-without-image",
    ),
    pytest.param(
        """
        apiVersion: argoproj.io/v1alpha1
        kind: ClusterWorkflowTemplate
        metadata: {name: shared}
        spec:
          templateDefaults: {container: {image: alpine}}
          templates:
          - name: main
            container: {command: [date]}
        """,
        "templates.main.container.image",
        "templates.main.container.image may not be empty",
        id="cluster-template-ignores-template-defaults-for-images",
    ),
]


@pytest.mark.parametrize(("document", "path", "message"), DOCUMENT_CASES)
def test_an_invalid_document_gets_exactly_its_error(document: str, path: str, message: str):
    result = lint_document(load_documents(textwrap.dedent(document))[0])
    assert result.errors == (LintError(path, message),)


def test_a_workflow_template_may_use_any_workflow_parameter_and_leave_out_the_entrypoint():
    document = """
    apiVersion: argoproj.io/v1alpha1
    kind: WorkflowTemplate
    metadata: {name: shared}
    spec:
      templateDefaults: {container: {image: alpine}}
      templates:
      - name: main
        container: {args: ["{{workflow.parameters.supplied-by-the-workflow}}"]}
    """
    assert lint_document(load_documents(textwrap.dedent(document))[0]).errors == ()
