"""DAG templates: tasks start once their dependencies (`dependencies` or `depends`) are settled.

Node shape, as Argo writes it: tasks without dependencies are children of the DAG node (`<dag>.<task>`);
a task is a child of every outbound node of each task it depends on; a fanned-out task is a TaskGroup
whose children are `<dag>.<task>(i:item)`. A task whose `depends` is false is Omitted; `when` false Skips
it. The DAG fails when a task failed and nothing handles the failure (continueOn, or a `depends` on
`.Failed`/`.Errored`/`.AllFailed`/`.AnySucceeded`); failFast (the default) starts no task after one failed.
"""

from __future__ import annotations

from typing import Any

from kubesim.argo import phases
from kubesim.argo.expressions import (
    dependencies_expression,
    depends_tasks,
    evaluate_depends,
    evaluate_when,
)
from kubesim.argo.nodes import Walker
from kubesim.argo.steps import add_aggregate_to_scope, add_outputs_to_scope, continues_on, template_outputs
from kubesim.argo.values import WorkflowError, expand, substitute

_HANDLING = (".Failed", ".Errored", ".AllFailed", ".AnySucceeded")


def _order(tasks: dict[str, dict[str, Any]], depends_on: dict[str, list[str]]) -> list[str]:
    """Tasks in dependency order; an unknown dependency or a cycle is a WorkflowError."""
    ordered: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            raise WorkflowError(f"dependency cycle: {' -> '.join([*path, name])}")
        state[name] = "visiting"
        for dependency in depends_on[name]:
            if dependency not in tasks:
                raise WorkflowError(f"task '{name}' depends on unknown task '{dependency}'")
            visit(dependency, [*path, name])
        state[name] = "done"
        ordered.append(name)

    for name in tasks:
        visit(name, [])
    return ordered


class _Dag:
    def __init__(
        self, op: Walker, node: dict[str, Any], template: dict[str, Any], scope: dict[str, str]
    ) -> None:
        self.op = op
        self.node = node
        self.scope = dict(scope)
        spec = template.get("dag") or {}
        self.template = template
        self.tasks = {str(t["name"]): t for t in spec.get("tasks") or []}
        self.fail_fast = spec.get("failFast", True) is not False
        self.expressions = {name: self._expression(task) for name, task in self.tasks.items()}
        self.depends_on = {
            name: depends_tasks(text) if text else [] for name, text in self.expressions.items()
        }

    def _expression(self, task: dict[str, Any]) -> str:
        if task.get("depends"):
            return str(task["depends"])
        return dependencies_expression(
            task, lambda name: (self.tasks.get(name) or {}).get("continueOn") or {}
        )

    def task_node(self, name: str) -> dict[str, Any] | None:
        return self.op.node(f"{self.node['name']}.{name}")

    def result_of(self, name: str, result: str) -> bool:
        node = self.task_node(name)
        if node is None:
            return False
        phase = node["phase"]
        children = (
            [self.op.nodes[c] for c in node.get("children") or []] if node["type"] == "TaskGroup" else [node]
        )
        return {
            "Succeeded": phase == phases.SUCCEEDED,
            "Failed": phase == phases.FAILED,
            "Errored": phase == phases.ERROR,
            "Skipped": phase == phases.SKIPPED,
            "Omitted": phase == phases.OMITTED,
            "Daemoned": False,
            "AnySucceeded": any(c["phase"] == phases.SUCCEEDED for c in children),
            "AllFailed": bool(children) and all(c["phase"] == phases.FAILED for c in children),
        }[result]

    def handled(self, name: str) -> bool:
        """Whether a failure of `name` is expected by the DAG (continueOn, or a depends on its failure)."""
        node = self.task_node(name)
        if node is not None and continues_on(self.tasks[name], node["phase"]):
            return True
        return any(
            f"{name}{suffix}" in self.expressions[other] for other in self.tasks for suffix in _HANDLING
        )

    def failed_unhandled(self) -> dict[str, Any] | None:
        for name in self.tasks:
            node = self.task_node(name)
            if node is not None and node["phase"] in phases.UNSUCCESSFUL and not self.handled(name):
                return node
        return None

    def link(self, name: str, child: dict[str, Any]) -> None:
        if not self.depends_on[name]:
            self.op.add_child(self.node, child)
            return
        for dependency in self.depends_on[name]:
            dependency_node = self.task_node(dependency)
            if dependency_node is not None:
                for outbound_id in self.op.outbound(dependency_node):
                    self.op.add_child(self.op.nodes[outbound_id], child)

    def remember(self, name: str, node: dict[str, Any]) -> None:
        prefix = f"tasks.{name}"
        if node["type"] == "TaskGroup":
            add_aggregate_to_scope(self.scope, prefix, [self.op.nodes[c] for c in node.get("children") or []])
            self.scope[f"{prefix}.status"] = node["phase"]
        else:
            add_outputs_to_scope(self.scope, prefix, node)

    def run(self) -> dict[str, Any]:
        try:
            order = _order(self.tasks, self.depends_on)
        except WorkflowError as error:
            return self.op.mark(self.node, phases.ERROR, str(error))
        blocked: dict[str, str] = {}  # task → WAIT, or why it will never start
        for name in order:
            existing = self.task_node(name)
            if phases.fulfilled(existing):
                assert existing is not None
                self.remember(name, existing)
                continue
            if existing is None:
                reason = self.blocker(name, blocked)
                if reason is not None:
                    blocked[name] = reason
                    continue
                try:
                    proceed = (
                        evaluate_depends(self.expressions[name], self.result_of)
                        if self.expressions[name]
                        else True
                    )
                except WorkflowError as error:
                    return self.op.mark(self.node, phases.ERROR, str(error))
                if not proceed:
                    omitted = self.op.init_node(
                        f"{self.node['name']}.{name}",
                        "Skipped",
                        str(self.tasks[name].get("template", "")),
                        self.node["id"],
                        phases.OMITTED,
                        "omitted: depends condition not met",
                    )
                    self.link(name, omitted)
                    continue
            try:
                outcome = self.start_or_update(name)
            except WorkflowError as error:
                return self.op.mark(self.node, phases.ERROR, str(error))
            if outcome is None:
                blocked[name] = phases.WAIT
            elif isinstance(outcome, str):
                blocked[name] = outcome
            elif phases.fulfilled(outcome):
                self.remember(name, outcome)
            else:
                blocked[name] = phases.WAIT
        if any(reason == phases.WAIT for reason in blocked.values()):
            return self.node
        failed = self.failed_unhandled()
        if blocked:
            message = f"child '{failed['id']}' failed" if failed else next(iter(blocked.values()))
            return self.op.mark(self.node, phases.FAILED, message)
        self.node["outboundNodes"] = self.outbound_nodes()
        if failed is not None:
            return self.op.mark(self.node, phases.FAILED, f"child '{failed['id']}' failed")
        outputs = template_outputs(self.template, self.scope)
        if outputs:
            self.node["outputs"] = outputs
        return self.op.mark(self.node, phases.SUCCEEDED)

    def blocker(self, name: str, blocked: dict[str, str]) -> str | None:
        """Why a task that has no node yet cannot start now (None: it can)."""
        reasons = [blocked[d] for d in self.depends_on[name] if d in blocked]
        if reasons:
            return phases.WAIT if phases.WAIT in reasons else reasons[0]
        if not all(phases.fulfilled(self.task_node(d)) for d in self.depends_on[name]):
            return phases.WAIT
        if self.fail_fast and self.failed_unhandled() is not None:
            return "template has failed or errored children and failFast enabled"
        if "__shutdown__" in self.op.scope:
            return self.op.scope["__shutdown__"]
        return None

    def outbound_nodes(self) -> list[str]:
        depended = {d for deps in self.depends_on.values() for d in deps}
        found: list[str] = []
        for name in self.tasks:
            node = self.task_node(name)
            if name not in depended and node is not None:
                found += self.op.outbound(node)
        return found

    def start_or_update(self, name: str) -> dict[str, Any] | str | None:
        """The task's node; None when it must wait; a message when it will never start."""
        node_name = f"{self.node['name']}.{name}"
        existing = self.op.node(node_name)
        task = substitute(self.tasks[name], self.scope)
        if existing is None and not evaluate_when(str(task.get("when") or "")):
            skipped = self.op.init_node(
                node_name,
                "Skipped",
                str(task.get("template", "")),
                self.node["id"],
                phases.SKIPPED,
                f"when '{task.get('when')}' evaluated false",
            )
            self.link(name, skipped)
            return skipped
        expanded = expand(task)
        if expanded is None:
            if existing is None:
                blocker = self.op.start_blocker(self.node["id"])
                if blocker is not None:
                    return None if blocker == phases.WAIT else blocker
            child = self.op.execute(
                node_name, str(task.get("template")), task.get("arguments"), self.node["id"]
            )
            if child is not None and existing is None:
                self.link(name, child)
            return child
        group = existing or self.op.init_node(
            node_name, "TaskGroup", str(task.get("template", "")), self.node["id"], phases.RUNNING
        )
        if existing is None:
            self.link(name, group)
        if not expanded:
            return self.op.mark(group, phases.SKIPPED, "Skipped, empty params")
        complete = True
        for item_task in expanded:
            child_name = f"{self.node['name']}.{item_task['name']}"
            if self.op.node(child_name) is None:
                blocker = self.op.start_blocker(self.node["id"])
                if blocker is not None:
                    complete = False
                    if blocker != phases.WAIT and all(
                        phases.fulfilled(self.op.nodes[c]) for c in group.get("children") or []
                    ):
                        return self.op.mark(group, phases.FAILED, blocker)
                    continue
            child = self.op.execute(
                child_name, str(item_task.get("template")), item_task.get("arguments"), self.node["id"]
            )
            if child is None:
                complete = False
                continue
            self.op.add_child(group, child)
        children = [self.op.nodes[c] for c in group.get("children") or []]
        if not complete or not all(phases.fulfilled(c) for c in children):
            return group
        failed = next(
            (c for c in children if c["phase"] in phases.UNSUCCESSFUL and not continues_on(task, c["phase"])),
            None,
        )
        if failed is not None:
            return self.op.mark(group, phases.FAILED, f"child '{failed['id']}' failed")
        return self.op.mark(group, phases.SUCCEEDED)


def execute_dag(
    op: Walker, node: dict[str, Any], template: dict[str, Any], scope: dict[str, str]
) -> dict[str, Any]:
    return _Dag(op, node, template, scope).run()
