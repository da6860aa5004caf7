"""Variable references (``{{inputs.parameters.x}}``, ``{{steps.a.outputs.result}}``...) and their scopes.

Argo checks only tags that start with one of its roots (item., steps., inputs., outputs., pod., workflow.,
tasks.); anything else (``{{item}}``, ``{{retries}}``, ``{{=expr}}``, a custom ``{{foo}}``) is left alone.
A checked tag must name something in scope, apart from the few runtime-only variables listed below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

CHECKED_ROOTS = ("item.", "steps.", "inputs.", "outputs.", "pod.", "workflow.", "tasks.")

# Known only at run time, so any reference under these prefixes is accepted.
_RUNTIME_PREFIXES = (
    "outputs.",  # a template's own outputs, for metrics emitted after it ran
    "workflow.creationTimestamp",
    "workflow.scheduledTime",
    "workflow.duration",
    "tasks.name",
    "steps.name",
    "node.name",
)

GLOBAL_OUTPUT_PARAMETER_PREFIX = "workflow.outputs.parameters."
GLOBAL_OUTPUT_ARTIFACT_PREFIX = "workflow.outputs.artifacts."
WORKFLOW_PARAMETERS_PREFIX = "workflow.parameters"
_PARAMETER_REFERENCE = re.compile(r"{{[-a-zA-Z0-9]+(\.[-a-zA-Z0-9_]+)*}}")


def iter_tags(text: str) -> Iterator[str]:
    """The inside of every ``{{...}}`` in a string, as Argo's template engine finds them.

    Like Argo, a tag ends at the first ``}}`` after its ``{{``. An opening with no closing ends the search.
    """
    start = text.find("{{")
    while start != -1:
        end = text.find("}}", start + 2)
        if end == -1:
            return
        yield text[start + 2 : end]
        start = text.find("{{", end + 2)


def strings_with_tags(value: Any) -> list[str]:
    """Every string holding ``{{`` inside a decoded document fragment, in document order (map keys
    included, as Argo checks the JSON text).

    A list filled by plain recursion: a generator chain (``yield from`` at every level) cost a second on
    the 100,000 items of a large sweep.
    """
    found: list[str] = []
    _collect_strings(value, found)
    return found


def _collect_strings(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        if "{{" in value:
            found.append(value)
    elif isinstance(value, dict):
        for key, child in value.items():
            if isinstance(key, str) and "{{" in key:
                found.append(key)
            if type(child) is str:
                if "{{" in child:
                    found.append(child)
            else:
                _collect_strings(child, found)
    elif isinstance(value, list):
        for child in value:
            if type(child) is str:
                if "{{" in child:
                    found.append(child)
            else:
                _collect_strings(child, found)


@dataclass(slots=True)
class Globals:
    """Variables every template of one workflow can use, and the few prefix-wide allowances."""

    names: set[str] = field(default_factory=set)
    any_workflow_parameter: bool = False  # a WorkflowTemplate is linted without the Workflow that uses it
    any_output_parameter: bool = False  # some globalName is itself a variable, known at run time
    any_output_artifact: bool = False
    failures: bool = False  # workflow.failures, only for the exit handler's templates


@dataclass(slots=True)
class Scope:
    """Variables local to one template or one step/task: inputs, earlier steps' outputs, loop items.

    A step's or task's scope is a `child` of its template's: it sees the parent's names as they are when
    it is checked and adds its own, without copying them. Copying made an 8,000-step template cost
    8,000 copies of a growing set (quadratic); a child costs O(1) and a lookup walks a chain as deep as
    the templates are nested, not as long as they are.
    """

    names: set[str] = field(default_factory=set)
    any_item: bool = False  # withParam: the item's keys are known only at run time
    open_prefixes: set[str] = field(default_factory=set)  # nodes calling a template the linter cannot see
    parent: Scope | None = None
    # A DAG task's lineage: whether a task is among its ancestors, so `tasks.<it>.status` is in scope.
    is_ancestor: Callable[[str], bool] | None = None

    def child(self) -> Scope:
        """A scope that sees this one (as it is whenever it is asked) and keeps its own additions."""
        return Scope(parent=self)

    def knows(self, name: str) -> bool:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.parent
        return self._ancestor_status(name)

    def items_unknown(self) -> bool:
        """Whether some enclosing loop's items have keys known only at run time (withParam)."""
        scope: Scope | None = self
        while scope is not None:
            if scope.any_item:
                return True
            scope = scope.parent
        return False

    def open_to(self, name: str) -> bool:
        """Whether the name lies under the outputs of a node whose template the linter cannot see."""
        scope: Scope | None = self
        while scope is not None:
            if scope.open_prefixes and name.startswith(tuple(scope.open_prefixes)):
                return True
            scope = scope.parent
        return False

    def _ancestor_status(self, name: str) -> bool:
        if not (name.startswith("tasks.") and name.endswith(".status")):
            return False
        task = name[len("tasks.") : -len(".status")]
        scope: Scope | None = self
        while scope is not None:
            if scope.is_ancestor is not None and scope.is_ancestor(task):
                return True
            scope = scope.parent
        return False


def is_resolvable(tag: str, scope: Scope, globals_: Globals) -> bool:
    """Whether Argo's validator accepts this tag (the text between the braces) in this scope."""
    if tag.startswith("="):
        return True  # an expression, which Argo does not validate
    name = tag.strip()
    if not name.startswith(CHECKED_ROOTS):
        return True
    if name in globals_.names or scope.knows(name):
        return True
    if name == "workflow.failures":
        return globals_.failures
    return _is_allowed_anyway(name, scope, globals_)


def _is_allowed_anyway(name: str, scope: Scope, globals_: Globals) -> bool:
    if name.startswith(_RUNTIME_PREFIXES):
        return True
    if name.startswith("item.") and scope.items_unknown():
        return True
    if scope.open_to(name):
        return True
    if globals_.any_output_parameter and name.startswith(GLOBAL_OUTPUT_PARAMETER_PREFIX):
        return True
    if globals_.any_output_artifact and name.startswith(GLOBAL_OUTPUT_ARTIFACT_PREFIX):
        return True
    return globals_.any_workflow_parameter and name.startswith(WORKFLOW_PARAMETERS_PREFIX)


def unresolved_tags(value: Any, scope: Scope, globals_: Globals) -> list[str]:
    """Each distinct tag in the fragment that cannot be resolved, in order of appearance."""
    found: list[str] = []
    for text in strings_with_tags(value):
        for tag in iter_tags(text):
            if tag not in found and not is_resolvable(tag, scope, globals_):
                found.append(tag)
    return found


def contains_tag(value: Any) -> bool:
    """Whether a string holds a variable reference, so its value is only known at run time."""
    return isinstance(value, str) and "{{" in value


def is_parameter_reference(value: str) -> bool:
    """Argo's isParameter: the string contains a ``{{name.path}}`` reference."""
    return _PARAMETER_REFERENCE.search(value) is not None
