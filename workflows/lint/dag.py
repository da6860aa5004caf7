"""DAG templates: task names, ``depends``/``dependencies``, cycles, targets, and what each task may reference.

A task sees every task's outputs, but the ``status`` of its ancestors only (tasks it depends on, directly
or not); an argument passing ``{{tasks.X...}}`` on needs X among those ancestors.
"""

from __future__ import annotations

import re
from typing import Any

from fields import as_dict
from workflows.lint.arguments import check_arguments
from workflows.lint.calls import add_loop_items, add_node_outputs, check_call, check_exit_handlers, is_looped
from workflows.lint.model import SpecContext, as_list
from workflows.lint.names import check_named_list, named_items, text
from workflows.lint.steps import NodeTemplate
from workflows.lint.variables import Scope, is_parameter_reference, unresolved_tags

# Argo's own patterns for the operands of a depends expression ("task" or "task.Result").
_OPERAND = re.compile(r"([a-zA-Z0-9][-a-zA-Z0-9]*?\.[A-Z][a-zA-Z]+)|([a-zA-Z0-9][-a-zA-Z0-9]*)")
_TASK_RESULT = re.compile(r"([a-zA-Z0-9][-a-zA-Z0-9]*?\.[A-Z][a-zA-Z]+)")
_TASK_RESULTS = frozenset(
    {"Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed"}
)
_ITEM_RESULTS = frozenset({"AnySucceeded", "AllFailed"})
_TOKEN = re.compile(r"\s*(&&|\|\||!|\(|\)|[a-zA-Z0-9][-a-zA-Z0-9]*(?:\.[A-Za-z]+)?)")


def task_dependencies(task: dict[str, Any]) -> dict[str, bool]:
    """The tasks a task depends on, each with whether an items-based result (.AnySucceeded) is used."""
    depends = text(task.get("depends"))
    if not depends:
        return {text(name): False for name in as_list(task.get("dependencies")) if text(name)}
    found: dict[str, bool] = {}
    for match in _OPERAND.finditer(depends):
        if match.group(1):
            name, result = match.group(1).split(".", 1)
            found[name] = found.get(name, False) or result in _ITEM_RESULTS
        else:
            found[match.group(2)] = False
    return found


def invalid_task_results(depends: str) -> list[tuple[str, str]]:
    """(task, result) pairs of a depends expression whose result is not one Argo knows."""
    pairs = (match.group(1).split(".", 1) for match in _TASK_RESULT.finditer(depends))
    return [(name, result) for name, result in pairs if result not in _TASK_RESULTS]


def is_valid_depends(depends: str) -> bool:
    """Whether a depends expression is well formed: operands joined by &&, ||, ! and parentheses."""
    tokens: list[str] = []
    position = 0
    stripped = depends.rstrip()
    while position < len(stripped):
        match = _TOKEN.match(stripped, position)
        if match is None:
            return False
        tokens.append(match.group(1))
        position = match.end()
    parser = _DependsParser(tokens)
    return parser.expression() and parser.at_end()


class _DependsParser:
    """expression := term (('&&' | '||') term)* ; term := '!' term | '(' expression ')' | operand."""

    def __init__(self, tokens: list[str]) -> None:
        self._tokens = tokens
        self._next = 0

    def at_end(self) -> bool:
        return self._next == len(self._tokens)

    def _take(self, token: str) -> bool:
        if self._next < len(self._tokens) and self._tokens[self._next] == token:
            self._next += 1
            return True
        return False

    def expression(self) -> bool:
        if not self._term():
            return False
        while self._take("&&") or self._take("||"):
            if not self._term():
                return False
        return True

    def _term(self) -> bool:
        if self._take("!"):
            return self._term()
        if self._take("("):
            return self.expression() and self._take(")")
        if self._next < len(self._tokens) and self._tokens[self._next] not in ("&&", "||", ")"):
            self._next += 1
            return True
        return False


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One dependency cycle (first node repeated at the end), or None.

    Iterative, so a chain of thousands of tasks cannot exhaust Python's recursion limit.
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in graph:
        if start in state:
            continue
        state[start] = 1
        path = [start]
        branches = [iter(graph.get(start, ()))]
        while branches:
            dependency = next(branches[-1], None)
            if dependency is None:
                state[path.pop()] = 2
                branches.pop()
            elif state.get(dependency) == 1:
                return [*path[path.index(dependency) :], dependency]
            elif dependency not in state:
                state[dependency] = 1
                path.append(dependency)
                branches.append(iter(graph.get(dependency, ())))
    return None


class Lineage:
    """The tasks one task depends on, directly or through others, explored only as far as questions need.

    Listing every task's ancestors costs the square of a chain's length (8,000 tasks: 32 million pairs);
    a task usually asks about its direct dependencies, found first. The walk resumes where it stopped, so
    one task never explores an ancestor twice.
    """

    def __init__(self, graph: dict[str, list[str]], task: str) -> None:
        self._graph = graph
        self._task = task
        self._found: set[str] = set()
        self._pending = list(graph.get(task, ()))

    def __contains__(self, candidate: object) -> bool:
        if candidate in self._found:
            return True
        while self._pending:
            node = self._pending.pop()
            if node == self._task or node in self._found:
                continue
            self._found.add(node)
            self._pending.extend(self._graph.get(node, ()))
            if node == candidate:
                return True
        return False


def lint_dag(dag_template: NodeTemplate) -> None:
    """Check every task of a DAG template; its scope ends up holding all the tasks' outputs."""
    ctx, prefix, scope = dag_template.ctx, dag_template.prefix, dag_template.scope
    dag = as_dict(dag_template.template.get("dag"))
    listed = as_list(dag.get("tasks"))
    if not listed:
        ctx.report(prefix, "must have at least one task")
        return
    ctx.errors.extend(check_named_list(listed, f"{prefix}.tasks", parameters=False))
    tasks: dict[str, dict[str, Any]] = {}
    for _, task, name in named_items(listed):
        if name:
            tasks.setdefault(name, task)
    graph = {name: list(task_dependencies(task)) for name, task in tasks.items()}
    _check_tasks(ctx, tasks, prefix, scope)
    cycle = find_cycle({name: [dep for dep in deps if dep in tasks] for name, deps in graph.items()})
    if cycle:
        ctx.report(f"{prefix}.tasks", f"dependency cycle detected: {'->'.join(cycle)}")
    _check_targets(dag_template, text(dag.get("target")), tasks)
    scope.names.update(
        f"tasks.{name}.status" for name, task in tasks.items() if task.get("hooks") is not None
    )
    for name, task in tasks.items():
        _check_task_body(dag_template, task, name, graph, tasks)


def _check_tasks(ctx: SpecContext, tasks: dict[str, dict[str, Any]], prefix: str, scope: Scope) -> None:
    """The per-task rules that need no task's own scope; every task's outputs go into ``scope``."""
    using_depends = any(text(task.get("depends")) for task in tasks.values())
    if using_depends and any(as_list(task.get("dependencies")) for task in tasks.values()):
        ctx.report(prefix, "cannot use both 'depends' and 'dependencies' in the same DAG template")
    if using_depends and any(task.get("continueOn") is not None for task in tasks.values()):
        ctx.report(
            prefix,
            "cannot use 'continueOn' when using 'depends'. Instead use 'dep-task.Failed'/'dep-task.Errored'",
        )
    for name, task in tasks.items():
        where = f"{prefix}.tasks.{name}"
        if (using_depends or as_list(task.get("dependencies"))) and name[0].isdigit():
            ctx.report(where, "name cannot begin with a digit when using either 'depends' or 'dependencies'")
        resolved = check_call(ctx, task, where)
        add_node_outputs(ctx, resolved, f"tasks.{name}", scope, aggregate=is_looped(task))
        depends = text(task.get("depends"))
        for task_name, result in invalid_task_results(depends):
            ctx.report(where, f"task result '{result}' for task '{task_name}' is invalid")
        if depends and not is_valid_depends(depends):
            ctx.report(where, f"depends expression '{depends}' is not a valid expression")
        for dependency, items_based in task_dependencies(task).items():
            if dependency not in tasks:
                ctx.report(where, f"dependency '{dependency}' not defined")
            elif items_based and not _loops(tasks[dependency]):
                ctx.report(
                    where,
                    f"dependency '{dependency}' uses an items-based condition such as .AnySucceeded or"
                    " .AllFailed but does not contain any items",
                )
        check_exit_handlers(ctx, task, where)


def _loops(task: dict[str, Any]) -> bool:
    return (
        bool(as_list(task.get("withItems")))
        or bool(text(task.get("withParam")))
        or task.get("withSequence") is not None
    )


def _check_targets(dag_template: NodeTemplate, target: str, tasks: dict[str, Any]) -> None:
    if not target:
        return
    ctx = dag_template.ctx
    where = f"{dag_template.prefix}.targets"
    for tag in unresolved_tags(target, dag_template.scope, dag_template.globals_):
        ctx.report(where, f"failed to resolve {{{{{tag}}}}}")
    for name in target.split(" "):
        if not is_parameter_reference(name) and name not in tasks:
            ctx.report_message(where, f"{where}: target '{name}' is not defined")


def _check_task_body(
    dag_template: NodeTemplate,
    task: dict[str, Any],
    name: str,
    graph: dict[str, list[str]],
    tasks: dict[str, dict[str, Any]],
) -> None:
    ctx = dag_template.ctx
    where = f"{dag_template.prefix}.tasks.{name}"
    # The ancestors' outputs are in the DAG's scope already (_check_tasks); only their `status` is theirs.
    lineage = Lineage(graph, name)
    task_scope = dag_template.scope.child()
    task_scope.is_ancestor = lambda task_name: task_name in tasks and task_name in lineage
    for problem in add_loop_items(task, task_scope):
        ctx.report(where, problem)
    outside_inline = {key: value for key, value in task.items() if key != "inline"}
    for tag in unresolved_tags(outside_inline, task_scope, dag_template.globals_):
        ctx.report(where, f"failed to resolve {{{{{tag}}}}}")
    arguments = task.get("arguments")
    check_arguments(ctx, f"{where}.arguments.", arguments, allow_empty_values=False)
    _check_argument_dependencies(ctx, as_dict(arguments), lineage, where)
    if isinstance(task.get("inline"), dict):
        dag_template.lint_inline(task["inline"], f"{where}.inline", task_scope)


def _check_argument_dependencies(
    ctx: SpecContext, arguments: dict[str, Any], lineage: Lineage, where: str
) -> None:
    """An argument that passes on another task's output must depend on that task."""
    for kind, field, items in (
        ("parameter", "value", arguments.get("parameters")),
        ("artifact", "from", arguments.get("artifacts")),
    ):
        for _, item, item_name in named_items(items):
            value = text(item.get(field))
            if value.startswith("{{tasks.") and "." in value[len("{{tasks.") :]:
                referenced = value.split(".")[1]
                if referenced not in lineage:
                    ctx.report(where, f"missing dependency '{referenced}' for {kind} '{item_name}'")
