"""Steps templates: step names, loops, arguments, the templates each step calls, and what steps may reference.

A step sees the outputs of every step listed before it (Argo adds them to scope one by one), its own
``status``, and the loop items of its group; its outputs are aggregated when it loops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workflows.lint.arguments import check_arguments
from workflows.lint.calls import (
    add_loop_items,
    add_node_outputs,
    check_call,
    check_exit_handlers,
    has_exit_hook,
    is_looped,
)
from workflows.lint.model import SpecContext, as_list
from workflows.lint.names import text, workflow_field_name_problems
from workflows.lint.variables import Globals, Scope, unresolved_tags

InlineLinter = Callable[[dict[str, Any], str, Scope], None]


@dataclass(frozen=True)
class NodeTemplate:
    """A steps or DAG template as `lint_template` hands it on, with what checking each of its nodes needs:
    the spec's context, how messages name the template (``prefix``), the scope its nodes' outputs go into,
    the globals it sees, and ``lint_inline``, which checks a node's inline template in the node's scope."""

    ctx: SpecContext
    template: dict[str, Any]
    prefix: str
    scope: Scope
    globals_: Globals
    lint_inline: InlineLinter


def lint_steps(steps: NodeTemplate) -> None:
    """Check every step of a steps template; its scope ends up holding all the steps' outputs."""
    seen: set[str] = set()
    for group_index, group in enumerate(as_list(steps.template.get("steps"))):
        for step in as_list(group):
            if not isinstance(step, dict):
                continue
            name = _check_step_name(steps.ctx, step, f"{steps.prefix}.steps[{group_index}]", seen)
            if name is not None:
                _lint_step(steps, step, group_index, name)


def _check_step_name(ctx: SpecContext, step: dict[str, Any], group_path: str, seen: set[str]) -> str | None:
    name = text(step.get("name"))
    where = f"{group_path}.name"
    if not name:
        ctx.report(where, "is required")
        return None
    if name in seen:
        ctx.report(where, f"'{name}' is not unique")
    elif problems := workflow_field_name_problems(name):
        ctx.report(where, f"'{name}' is invalid: {';'.join(problems)}")
    seen.add(name)
    return name


def _lint_step(steps: NodeTemplate, step: dict[str, Any], group_index: int, name: str) -> None:
    ctx, prefix, scope = steps.ctx, steps.prefix, steps.scope
    where = f"{prefix}.steps[{group_index}].{name}"
    node_prefix = f"steps.{name}"
    scope.names.add(f"{node_prefix}.status")
    for problem in add_loop_items(step, scope):
        ctx.report(where, problem)
    check_arguments(ctx, f"{where}.arguments.", step.get("arguments"), allow_empty_values=False)
    resolved = check_call(ctx, step, where)
    if has_exit_hook(step):
        add_node_outputs(ctx, resolved, node_prefix, scope, aggregate=False)
    check_exit_handlers(ctx, step, where)

    step_scope = scope.child()
    # The inline template is checked on its own, in its own scope plus the step's.
    outside_inline = {key: value for key, value in step.items() if key != "inline"}
    for tag in unresolved_tags(outside_inline, step_scope, steps.globals_):
        ctx.report_message(where, f"{prefix}.steps failed to resolve {{{{{tag}}}}}")
    if isinstance(step.get("inline"), dict):
        steps.lint_inline(step["inline"], f"{where}.inline", step_scope)
    add_node_outputs(ctx, resolved, node_prefix, scope, aggregate=is_looped(step))
