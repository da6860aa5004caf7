"""Rules shared by steps and DAG tasks: loops, hooks, the call of a template, what a call adds to scope."""

from __future__ import annotations

import re
from typing import Any

from fields import as_dict
from workflows.lint.arguments import missing_inputs
from workflows.lint.model import UNKNOWN, Resolved, SpecContext, as_list, has_output, template_type
from workflows.lint.names import named_items, text
from workflows.lint.variables import (
    GLOBAL_OUTPUT_ARTIFACT_PREFIX,
    GLOBAL_OUTPUT_PARAMETER_PREFIX,
    Scope,
    contains_tag,
    is_parameter_reference,
)

_INTEGER = re.compile(r"[+-]?\d+")
EXIT_HOOK = "exit"


def add_loop_items(node: dict[str, Any], scope: Scope) -> list[str]:
    """Put ``item`` (and ``item.<key>``) in scope for a looped step or task; return the loop's problems."""
    with_items, with_param, sequence = (
        node.get("withItems"),
        text(node.get("withParam")),
        node.get("withSequence"),
    )
    loops = sum((bool(as_list(with_items)), bool(with_param), sequence is not None))
    if loops > 1:
        return ["only one of withItems, withParam, withSequence can be specified"]
    if as_list(with_items):
        # The keys and lengths first, each name formatted once: a sweep's items share their keys.
        keys: set[Any] = set()
        longest = 0
        for item in as_list(with_items):
            if isinstance(item, dict):
                keys.update(item)
            elif isinstance(item, list):
                longest = max(longest, len(item))
            else:
                scope.names.add("item")
        scope.names.update(f"item.{key}" for key in keys)
        scope.names.update(f"item.[{index}]" for index in range(longest))
    elif with_param:
        scope.names.add("item")
        scope.any_item = True
    elif sequence is not None:
        scope.names.add("item")
        return _sequence_problems(as_dict(sequence))
    return []


def _sequence_problems(sequence: dict[str, Any]) -> list[str]:
    count, end = sequence.get("count"), sequence.get("end")
    if count is not None and end is not None:
        return ["only one of count or end can be defined in withSequence"]
    if count is None and end is None:
        return ["neither end nor count was specified in withSequence"]
    return [
        f"withSequence.{key} must be an integer or an argo variable, not '{text(value)}'"
        for key in ("count", "start", "end")
        if (value := sequence.get(key)) is not None and not _is_int_or_variable(value)
    ]


def _is_int_or_variable(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and (bool(_INTEGER.fullmatch(value.strip())) or contains_tag(value))


def is_looped(node: dict[str, Any]) -> bool:
    """Whether a step or task fans out over items, so its outputs are aggregated."""
    return bool(as_list(node.get("withItems"))) or bool(text(node.get("withParam")))


def has_exit_hook(node: dict[str, Any]) -> bool:
    return EXIT_HOOK in as_dict(node.get("hooks")) or bool(text(node.get("onExit")))


def add_node_outputs(
    ctx: SpecContext, resolved: Resolved, prefix: str, scope: Scope, *, aggregate: bool
) -> None:
    """What ``steps.<name>.`` or ``tasks.<name>.`` offers once the node ran (Argo's addOutputsToScope).

    A task's ``status`` is only for its descendants: `Scope.is_ancestor` answers that.
    """
    names = scope.names
    names.update(f"{prefix}.{field}" for field in ("id", "startedAt", "finishedAt", "hostNodeName"))
    template = resolved.template
    if template is None:
        if resolved is UNKNOWN:
            scope.open_prefixes.add(f"{prefix}.")  # a template we cannot see: accept any of its outputs
        return
    if template.get("daemon") is True:
        names.add(f"{prefix}.ip")
    if has_output(template):
        names.update((f"{prefix}.outputs.result", f"{prefix}.exitCode"))
    outputs = as_dict(template.get("outputs"))
    for _, parameter, name in named_items(outputs.get("parameters")):
        names.add(f"{prefix}.outputs.parameters.{name}")
        _add_global_output(ctx, text(parameter.get("globalName")), GLOBAL_OUTPUT_PARAMETER_PREFIX)
    for _, artifact, name in named_items(outputs.get("artifacts")):
        names.add(f"{prefix}.outputs.artifacts.{name}")
        _add_global_output(ctx, text(artifact.get("globalName")), GLOBAL_OUTPUT_ARTIFACT_PREFIX)
    if aggregate:
        names.add(f"{prefix}.outputs.parameters")
        if template_type(template) in ("script", "containerSet"):
            names.update((f"{prefix}.outputs.result", f"{prefix}.exitCode"))


def register_global_outputs(ctx: SpecContext, template: dict[str, Any]) -> None:
    """Make the template's global outputs (``workflow.outputs.*``) known before any template is checked.

    Argo learns them while it walks the templates, so a reference may come before the template that sets
    it; learning them all first keeps the result independent of that order. Templates called inline or by
    templateRef count too.
    """
    _register_outputs(ctx, template)
    for node in called_nodes(template):
        if isinstance(node.get("inline"), dict):
            register_global_outputs(ctx, node["inline"])
        elif isinstance(node.get("templateRef"), dict):
            called = ctx.resolve(node)[0].template
            if called is not None:
                _register_outputs(ctx, called)
            else:  # a template we cannot see may set any global output
                ctx.globals.any_output_parameter = ctx.globals.any_output_artifact = True


def called_nodes(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps and DAG tasks of a template, as objects."""
    nodes = [step for group in as_list(template.get("steps")) for step in as_list(group)]
    nodes += as_list(as_dict(template.get("dag")).get("tasks"))
    return [node for node in nodes if isinstance(node, dict)]


def _register_outputs(ctx: SpecContext, template: dict[str, Any]) -> None:
    outputs = as_dict(template.get("outputs"))
    for kind, prefix in (
        ("parameters", GLOBAL_OUTPUT_PARAMETER_PREFIX),
        ("artifacts", GLOBAL_OUTPUT_ARTIFACT_PREFIX),
    ):
        for _, item, _ in named_items(outputs.get(kind)):
            _add_global_output(ctx, text(item.get("globalName")), prefix)


def _add_global_output(ctx: SpecContext, global_name: str, prefix: str) -> None:
    if not global_name:
        return
    if not is_parameter_reference(global_name):
        ctx.globals.names.add(prefix + global_name)
    elif prefix == GLOBAL_OUTPUT_PARAMETER_PREFIX:
        ctx.globals.any_output_parameter = True
    else:
        ctx.globals.any_output_artifact = True


def check_call(ctx: SpecContext, node: dict[str, Any], where: str) -> Resolved:
    """Resolve the template a step or task calls and check its arguments supply the template's inputs."""
    resolved, problem = ctx.resolve(node)
    if problem:
        ctx.report(where, problem)
        return resolved
    if resolved.template is not None:
        callee = "" if resolved.name == "inline" else f"templates.{resolved.name} "
        for missing in missing_inputs(resolved.template, node.get("arguments")):
            ctx.report(where, f"{callee}{missing}")
    return resolved


def check_hooks(ctx: SpecContext, hooks: Any, where: str) -> None:
    """Every hook but ``exit`` needs an expression, and every hook must call a template that exists."""
    for event, hook in as_dict(hooks).items():
        hook = as_dict(hook)
        hook_path = f"{where}.{event}"
        if event != EXIT_HOOK and not text(hook.get("expression")):
            ctx.report(hook_path, "Expression required")
        _, problem = ctx.resolve(hook)
        if problem:
            ctx.report(hook_path, problem)


def check_exit_handlers(ctx: SpecContext, node: dict[str, Any], where: str) -> None:
    """A step's or task's hooks, and the template its ``onExit`` names, which must exist."""
    check_hooks(ctx, node.get("hooks"), where)
    if text(node.get("onExit")):
        _, problem = ctx.resolve({"template": node["onExit"]})
        if problem:
            ctx.report(f"{where}.onExit", problem)
