"""The linter's entry points: one document, a batch of documents, or YAML files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fields import as_dict
from kube.names import NameFormat
from workflows.lint.cron import check_cron_spec
from workflows.lint.errors import LintError, LintResult
from workflows.lint.loader import load_file
from workflows.lint.model import SpecContext, TemplateIndex
from workflows.lint.names import text
from workflows.lint.schema import document_schema
from workflows.lint.spec import SpecOwner, lint_workflow_spec
from workflows.lint.structure import check_structure, json_kind
from workflows.lint.variables import Globals

API_VERSION = "argoproj.io/v1alpha1"
LINTED_KINDS = ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow")
_NAME_MAX = 63  # names become label values, which Kubernetes limits to 63 characters
_NAME_WORDING = {
    "Workflow": "workflow name",
    "WorkflowTemplate": "workflow template name",
    "ClusterWorkflowTemplate": "cluster workflow template name",
}
_CRON_LABEL = "workflows.argoproj.io/cron-workflow"
_CRON_SCHEDULED_TIME = "workflows.argoproj.io/scheduled-time"


def warm_up() -> None:
    """Load the schema now (argo_schema.json, a few milliseconds once per process) rather than on the first
    lint, so a server's first request is as fast as the others."""
    document_schema("Workflow")


def lint_document(document: Any, templates: TemplateIndex | None = None) -> LintResult:
    """Lint one decoded document the way ``argo lint --strict`` would.

    ``templates`` holds the WorkflowTemplates and ClusterWorkflowTemplates that templateRefs may name;
    without it templateRefs are not followed. Kinds other than Argo's are returned with ``linted=False``.
    The document is never modified.
    """
    if not isinstance(document, dict):
        return LintResult(
            "", "", (LintError("", f"a document must be an object, not {json_kind(document)}"),)
        )
    kind = text(document.get("kind"))
    metadata = as_dict(document.get("metadata"))
    name = text(metadata.get("name")) or text(metadata.get("generateName"))
    schema = document_schema(kind)
    if schema is None:
        return LintResult(kind, name, linted=False)
    errors = check_structure(document, schema)
    if text(document.get("apiVersion")) != API_VERSION:
        errors.append(
            LintError("apiVersion", f'apiVersion "{text(document.get("apiVersion"))}" is not {API_VERSION}')
        )
    errors.extend(_metadata_errors(kind, metadata))
    if kind in LINTED_KINDS:
        errors.extend(_semantic_errors(kind, document, metadata, templates))
    return LintResult(kind, name, tuple(errors))


def lint_documents(documents: Iterable[Any], templates: TemplateIndex | None = None) -> list[LintResult]:
    """Lint a batch; its WorkflowTemplates are known to the workflows in it, as with ``argo lint``."""
    documents = list(documents)
    index = TemplateIndex()
    if templates is not None:
        index.merge(templates)
    for document in documents:
        index.add(document)
    return [lint_document(document, index) for document in documents]


def lint_files(
    paths: Iterable[str | Path], templates: TemplateIndex | None = None
) -> dict[str, list[LintResult]]:
    """Lint YAML files together (their WorkflowTemplates are shared); results by file, in file order.

    Raises loader.DocumentLoadError when a file cannot be read or parsed.
    """
    loaded = {str(path): load_file(path) for path in paths}
    results = iter(lint_documents([doc for docs in loaded.values() for doc in docs], templates))
    return {path: [next(results) for _ in docs] for path, docs in loaded.items()}


def load_template_index(directory: str | Path) -> TemplateIndex:
    """A TemplateIndex of every WorkflowTemplate and ClusterWorkflowTemplate in a folder's YAML files."""
    index = TemplateIndex()
    for path in sorted(Path(directory).rglob("*")):
        if path.suffix in (".yaml", ".yml", ".json") and path.is_file():
            for document in load_file(path):
                index.add(document)
    return index


def _semantic_errors(
    kind: str, document: dict[str, Any], metadata: dict[str, Any], templates: TemplateIndex | None
) -> list[LintError]:
    spec = as_dict(document.get("spec"))
    labels, annotations = tuple(as_dict(metadata.get("labels"))), tuple(as_dict(metadata.get("annotations")))
    if kind != "CronWorkflow":
        return lint_workflow_spec(spec, SpecOwner(kind, labels, annotations), templates)
    cron = SpecContext(spec, kind, templates, Globals())
    check_cron_spec(cron, text(metadata.get("name")), spec)
    workflow_metadata = as_dict(spec.get("workflowMetadata"))
    owner = SpecOwner(
        kind,
        (*labels, _CRON_LABEL, *as_dict(workflow_metadata.get("labels"))),
        (*annotations, _CRON_SCHEDULED_TIME, *as_dict(workflow_metadata.get("annotations"))),
        allow_empty_arguments=False,
    )
    return cron.errors + lint_workflow_spec(as_dict(spec.get("workflowSpec")), owner, templates)


def _metadata_errors(kind: str, metadata: dict[str, Any]) -> list[LintError]:
    """Kubernetes' rules for object names and Argo's limit on name length.

    Labels and annotations are left to the API server: ``argo lint`` does not check them, and one of Argo's
    own examples carries a label value Kubernetes would refuse.
    """
    errors = []
    name = text(metadata.get("name"))
    if name:
        errors += [
            LintError("metadata.name", f'metadata.name: Invalid value: "{name}": {problem}')
            for problem in NameFormat.SUBDOMAIN.problems(name)
        ]
        if kind in _NAME_WORDING and len(name) > _NAME_MAX:
            errors.append(
                LintError(
                    "metadata.name",
                    f'{_NAME_WORDING[kind]} "{name}" must not be more than {_NAME_MAX} characters long'
                    f" (currently {len(name)})",
                )
            )
    generate_name = text(metadata.get("generateName"))
    if generate_name:
        masked = generate_name[:-1] + "a" if generate_name.endswith("-") else generate_name
        errors += [
            LintError(
                "metadata.generateName", f'metadata.generateName: Invalid value: "{generate_name}": {problem}'
            )
            for problem in NameFormat.SUBDOMAIN.problems(masked)
        ]
    return errors
