"""What the rules share: template types, the index of known WorkflowTemplates, and the per-spec context."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fields import as_dict
from workflows.lint.errors import LintError, error_at
from workflows.lint.names import text
from workflows.lint.variables import Globals, contains_tag

# In the order Argo's Template.GetType() looks at them.
TEMPLATE_TYPES = (
    "container",
    "containerSet",
    "steps",
    "dag",
    "script",
    "resource",
    "data",
    "suspend",
    "http",
    "plugin",
)
TYPE_NAMES = {
    "container": "Container",
    "containerSet": "ContainerSet",
    "steps": "Steps",
    "dag": "DAG",
    "script": "Script",
    "resource": "Resource",
    "data": "Data",
    "suspend": "Suspend",
    "http": "HTTP",
    "plugin": "Plugin",
}
_LEAF_TYPES = frozenset({"container", "containerSet", "script", "resource", "data", "http", "plugin"})
_POD_TYPES = frozenset({"container", "containerSet", "script", "resource", "data"})
ARTIFACT_LOCATIONS = ("s3", "git", "http", "artifactory", "hdfs", "raw", "oss", "gcs", "azure", "plugin")
TEMPLATE_KINDS = frozenset({"WorkflowTemplate", "ClusterWorkflowTemplate"})


def as_list(value: Any) -> list[Any]:
    """The value if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def template_types(template: dict[str, Any]) -> list[str]:
    return [kind for kind in TEMPLATE_TYPES if template.get(kind) is not None]


def template_type(template: dict[str, Any]) -> str | None:
    """The template's type as Argo decides it (the first one set), or None."""
    for kind in TEMPLATE_TYPES:
        if template.get(kind) is not None:
            return kind
    return None


def is_leaf(template: dict[str, Any]) -> bool:
    """Leaf templates run something themselves; steps, DAG and suspend templates do not."""
    return template_type(template) in _LEAF_TYPES


def is_pod(template: dict[str, Any]) -> bool:
    return template_type(template) in _POD_TYPES


def has_main_container(container_set: Any) -> bool:
    return any(
        text(as_dict(node).get("name")) == "main"
        for node in as_list(as_dict(container_set).get("containers"))
    )


def has_output(template: dict[str, Any]) -> bool:
    """Whether the template produces ``outputs.result`` and ``exitCode`` (Argo's Template.HasOutput)."""
    if any(template.get(kind) is not None for kind in ("container", "script", "data", "http", "plugin")):
        return True
    return template.get("containerSet") is not None and has_main_container(template["containerSet"])


def has_location(artifact: dict[str, Any]) -> bool:
    """Whether an artifact says where it lives, so no argument needs to supply it."""
    return any(artifact.get(kind) is not None for kind in ARTIFACT_LOCATIONS)


def templates_by_name(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A spec's templates by name; the first of two with the same name wins, as in Argo."""
    found: dict[str, dict[str, Any]] = {}
    for template in as_list(spec.get("templates")):
        if isinstance(template, dict):
            found.setdefault(text(template.get("name")), template)
    return found


class TemplateIndex:
    """The WorkflowTemplates and ClusterWorkflowTemplates that templateRefs may point at, by name.

    Build it from documents (``TemplateIndex.from_documents``) before linting the workflows that use them.
    Names are not split by namespace: a linter run sees one namespace's worth of templates.
    """

    def __init__(self) -> None:
        self._namespaced: dict[str, dict[str, Any]] = {}
        self._cluster: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_documents(cls, documents: Iterable[Any]) -> TemplateIndex:
        index = cls()
        for document in documents:
            index.add(document)
        return index

    def add(self, document: Any) -> bool:
        """Remember a WorkflowTemplate or ClusterWorkflowTemplate; other documents are ignored."""
        if not isinstance(document, dict) or document.get("kind") not in TEMPLATE_KINDS:
            return False
        name = text(as_dict(document.get("metadata")).get("name"))
        if not name:
            return False
        store = self._cluster if document["kind"] == "ClusterWorkflowTemplate" else self._namespaced
        store[name] = as_dict(document.get("spec"))
        return True

    def merge(self, other: TemplateIndex) -> None:
        """Add another index's templates; on a name both know, the other's wins."""
        self._namespaced.update(other._namespaced)
        self._cluster.update(other._cluster)

    def spec(self, name: str, *, cluster_scope: bool) -> dict[str, Any] | None:
        """The spec of the named (cluster) workflow template, or None if it is not known."""
        return (self._cluster if cluster_scope else self._namespaced).get(name)

    def __len__(self) -> int:
        return len(self._namespaced) + len(self._cluster)


@dataclass(frozen=True, slots=True)
class Resolved:
    """The template a step, task or hook calls. ``template`` is None when it cannot be known statically
    (a templateRef built from variables, or into templates the linter was not given)."""

    template: dict[str, Any] | None
    name: str = ""

    @property
    def known(self) -> bool:
        return self.template is not None


UNKNOWN = Resolved(None)


@dataclass(slots=True)
class SpecContext:
    """Everything the rules need while linting one workflow spec, and the errors found so far."""

    spec: dict[str, Any]
    owner_kind: str
    index: TemplateIndex | None
    globals: Globals
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    exit_only_templates: set[str] = field(default_factory=set)
    errors: list[LintError] = field(default_factory=list)

    def report(self, path: str, detail: str) -> None:
        """Record an error whose message is the path followed by the detail."""
        self.errors.append(error_at(path, detail))

    def report_message(self, path: str, message: str) -> None:
        """Record an error whose whole message is given (Argo words a few without the path first)."""
        self.errors.append(LintError(path, message))

    def globals_for(self, template_name: str) -> Globals:
        """The globals a template may use: workflow.failures only in templates run by the exit handler."""
        if template_name in self.exit_only_templates:
            return self.globals
        if not self.globals.failures:
            return self.globals
        return Globals(
            self.globals.names,
            self.globals.any_workflow_parameter,
            self.globals.any_output_parameter,
            self.globals.any_output_artifact,
            failures=False,
        )

    def resolve(self, holder: dict[str, Any]) -> tuple[Resolved, str | None]:
        """The template a step, task or hook calls, or why it cannot be found (Argo's wording)."""
        name = text(holder.get("template"))
        reference = holder.get("templateRef")
        if isinstance(reference, dict):
            if name:
                return UNKNOWN, "template name cannot be specified with templateRef"
            return self._resolve_reference(reference)
        if name:
            template = self.templates.get(name)
            if template is None:
                return UNKNOWN, f"template name '{name}' undefined"
            return Resolved(template, name), None
        inline = holder.get("inline")
        if isinstance(inline, dict):
            return Resolved(inline, "inline"), None
        return UNKNOWN, "template, templateRef or inline is required"

    def _resolve_reference(self, reference: dict[str, Any]) -> tuple[Resolved, str | None]:
        resource, template_name = text(reference.get("name")), text(reference.get("template"))
        if not resource:
            return UNKNOWN, "resource name is required"
        if not template_name:
            return UNKNOWN, "template name is required"
        if self.index is None or contains_tag(resource) or contains_tag(template_name):
            return UNKNOWN, None
        spec = self.index.spec(resource, cluster_scope=bool(reference.get("clusterScope")))
        template = templates_by_name(spec).get(template_name) if spec is not None else None
        if template is None:
            return UNKNOWN, f"template reference {resource}.{template_name} not found"
        return Resolved(template, template_name), None
