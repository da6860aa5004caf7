"""Argo specs at admission: lint a Workflow-like document, or the Workflow spec embedded in one of ours.

Pure. A webhook reads nothing from the cluster, so a `templateRef` (or `workflowTemplateRef`) to a
WorkflowTemplate cannot be resolved here: the linter skips what it cannot follow, and we add a warning per
reference instead of denying. Argo resolves it when the workflow runs and fails it then if it is missing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fields import FieldError
from workflows.lint import API_VERSION, lint_document

# More warnings than this would be truncated by the apiserver anyway; the rest are counted.
MAX_REFERENCE_WARNINGS = 5
# The hyperparameters reach the entrypoint from our fan-out step; any string stands in for them in the lint.
SWEPT_VALUE_PLACEHOLDER = "0"


@dataclass(frozen=True)
class Findings:
    """What a lint found: problems that deny (with the lines users read) and warnings that do not."""

    causes: tuple[FieldError, ...] = ()
    lines: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def lint_argo_document(document: dict[str, Any]) -> Findings:
    """An Argo Workflow, WorkflowTemplate, ClusterWorkflowTemplate or CronWorkflow, linted in full.

    The lines are Argo's messages as they are; each cause names the field from the object's root, and
    Argo's template-relative paths (`templates.main.steps[0].a`) belong to the WorkflowSpec.
    """
    result = lint_document(document)
    spec_path = "spec.workflowSpec" if result.kind == "CronWorkflow" else "spec"
    causes = tuple(
        FieldError(error.path if _rooted(error.path) else spec_path, error.message) for error in result.errors
    )
    return Findings(causes, tuple(error.message for error in result.errors), reference_warnings(document))


def lint_embedded_workflow(
    workflow_spec: Mapping[str, Any], path: str, supplied_parameters: tuple[str, ...] = ()
) -> Findings:
    """The Argo WorkflowSpec at `path` (e.g. `spec.workflow`), linted as the spec of a Workflow.

    `supplied_parameters` are entrypoint inputs that something other than the spec fills (a sweep's
    hyperparameters); they are supplied as workflow arguments so the lint does not report them missing.
    Every line is prefixed with `path`, and structural errors name the field from the object's root.
    """
    spec = dict(workflow_spec)
    if supplied_parameters:
        spec["arguments"] = _with_parameters(spec.get("arguments"), supplied_parameters)
    document = {
        "apiVersion": API_VERSION,
        "kind": "Workflow",
        "metadata": {"generateName": "embedded-"},
        "spec": spec,
    }
    result = lint_document(document)
    causes, lines = [], []
    for error in result.errors:
        if error.path == "spec" or error.path.startswith("spec."):
            field = path + error.path.removeprefix("spec")
            message = error.message.replace(error.path, field, 1)
        else:
            field, message = path, error.message
        causes.append(FieldError(field, message))
        lines.append(message if message.startswith(field) else f"{field}: {message}")
    return Findings(tuple(causes), tuple(lines), reference_warnings(workflow_spec, path))


def _rooted(path: str) -> bool:
    """Whether a lint path is a field path from the document's root (`spec.entrypoints`, `metadata.name`)."""
    return path.split(".", 1)[0].split("[", 1)[0] in ("apiVersion", "kind", "metadata", "spec")


def reference_warnings(node: Any, path: str = "") -> tuple[str, ...]:
    """One warning per templateRef or workflowTemplateRef under `node` (which admission cannot check)."""
    seen: list[str] = []
    for where, key, reference in _references(node, path):
        scope = "ClusterWorkflowTemplate" if reference.get("clusterScope") is True else "WorkflowTemplate"
        target = f'{scope} "{reference.get("name", "")}"'
        if key == "templateRef":
            target += f' template "{reference.get("template", "")}"'
        warning = f"{where}: {target} is not checked at admission"
        if warning not in seen:
            seen.append(warning)
    if len(seen) > MAX_REFERENCE_WARNINGS:
        rest = len(seen) - MAX_REFERENCE_WARNINGS
        return (*seen[:MAX_REFERENCE_WARNINGS], f"{rest} more template references were not checked")
    return tuple(seen)


def _references(node: Any, path: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(path, key, reference) for every templateRef and workflowTemplateRef, depth first in document order."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key in ("templateRef", "workflowTemplateRef") and isinstance(value, dict):
                yield where, key, value
            else:
                yield from _references(value, where)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _references(value, f"{path}[{index}]")


def _with_parameters(arguments: object, names: tuple[str, ...]) -> object:
    """`arguments` with a placeholder parameter for each of `names` it does not already set.

    Arguments of the wrong shape are returned as they are, for the lint to report.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or not isinstance(arguments.get("parameters") or [], list):
        return arguments
    parameters = list(arguments.get("parameters") or [])
    present = {p.get("name") for p in parameters if isinstance(p, dict)}
    parameters += [{"name": name, "value": SWEPT_VALUE_PLACEHOLDER} for name in names if name not in present]
    return {**arguments, "parameters": parameters}
