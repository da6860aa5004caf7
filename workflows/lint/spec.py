"""A whole workflow spec: template names, arguments, globals, entrypoint, exit handler, hooks, podGC, TTL,
then every template. Shared by Workflows, (Cluster)WorkflowTemplates and the spec a CronWorkflow starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflows.lint.arguments import check_arguments, missing_inputs
from workflows.lint.calls import called_nodes, check_hooks, register_global_outputs
from workflows.lint.durations import is_seconds_or_duration
from workflows.lint.errors import LintError
from workflows.lint.model import (
    TEMPLATE_KINDS,
    SpecContext,
    TemplateIndex,
    as_dict,
    as_list,
    templates_by_name,
)
from workflows.lint.names import check_named_list, named_items, text
from workflows.lint.selectors import label_selector_problems
from workflows.lint.templates import check_metrics, check_retry_strategy, lint_all_templates
from workflows.lint.variables import Globals, contains_tag

POD_GC_STRATEGIES = ("", "OnPodCompletion", "OnPodSuccess", "OnWorkflowCompletion", "OnWorkflowSuccess")
_TTL_FIELDS = ("secondsAfterCompletion", "secondsAfterSuccess", "secondsAfterFailure")
_ALWAYS_GLOBAL = (
    "workflow.name",
    "workflow.namespace",
    "workflow.mainEntrypoint",
    "workflow.serviceAccountName",
    "workflow.uid",
    "workflow.status",
    "workflow.annotations",
    "workflow.annotations.json",
    "workflow.labels",
    "workflow.labels.json",
)


@dataclass(frozen=True, slots=True)
class SpecOwner:
    """The document a spec comes from: its kind and the labels and annotations its workflows will carry."""

    kind: str
    labels: tuple[str, ...] = ()
    annotations: tuple[str, ...] = ()
    allow_empty_arguments: bool = True  # linting; a CronWorkflow's spec is validated as if submitted


def lint_workflow_spec(
    spec: dict[str, Any], owner: SpecOwner, index: TemplateIndex | None
) -> list[LintError]:
    """Every problem of a workflow spec (Argo's ValidateWorkflow, linting flavour)."""
    ctx = SpecContext(spec, owner.kind, index, Globals(), templates_by_name(spec))
    ctx.errors.extend(check_named_list(spec.get("templates"), "spec.templates", parameters=False))
    referenced = _referenced_spec(ctx)
    if referenced and as_list(spec.get("templates")):
        ctx.report_message(
            "spec.templates",
            "Templates is invalid field in spec if workflow referred WorkflowTemplate reference",
        )
    arguments = _merged_arguments(
        as_dict(spec.get("arguments")), as_dict(as_dict(referenced).get("arguments"))
    )
    check_arguments(ctx, "spec.arguments.", arguments, allow_empty_values=owner.allow_empty_arguments)
    _build_globals(ctx, owner, arguments, as_dict(referenced))
    entrypoint = _check_entrypoint(ctx, owner, arguments, as_dict(referenced))
    on_exit = _check_on_exit(ctx, as_dict(referenced))
    # Argo's validator offers workflow.failures under onExit only; the exit hook that replaces onExit runs
    # its template at the same moment, so it gets the same allowance rather than a false rejection.
    ctx.globals.failures = bool(on_exit) or "exit" in as_dict(spec.get("hooks"))
    ctx.exit_only_templates = set(ctx.templates) - _reachable(ctx.templates, entrypoint)
    check_hooks(ctx, spec.get("hooks"), "hooks")
    _check_pod_gc(ctx, spec.get("podGC"))
    _check_lifetimes(ctx, spec)
    check_retry_strategy(ctx, spec.get("retryStrategy"), "spec")
    check_metrics(ctx, spec.get("metrics"), "spec.metrics")
    lint_all_templates(ctx)
    return ctx.errors


def _referenced_spec(ctx: SpecContext) -> dict[str, Any] | None:
    """The spec of the WorkflowTemplate named by spec.workflowTemplateRef, when the index has it."""
    reference = ctx.spec.get("workflowTemplateRef")
    if not isinstance(reference, dict) or ctx.index is None:
        return None
    name, cluster = text(reference.get("name")), bool(reference.get("clusterScope"))
    referenced = ctx.index.spec(name, cluster_scope=cluster)
    if referenced is None:
        resource = "clusterworkflowtemplates" if cluster else "workflowtemplates"
        ctx.report_message("spec.workflowTemplateRef", f'{resource}.argoproj.io "{name}" not found')
    return referenced


def _merged_arguments(own: dict[str, Any], referenced: dict[str, Any]) -> dict[str, Any]:
    """The workflow's arguments, completed by those of the WorkflowTemplate it runs (its own win)."""
    if not referenced:
        return own
    merged = {}
    for key in ("parameters", "artifacts"):
        items = [item for item in as_list(own.get(key)) if isinstance(item, dict)]
        names = {text(item.get("name")) for item in items}
        items += [item for _, item, name in named_items(referenced.get(key)) if name not in names]
        merged[key] = items
    return merged


def _build_globals(
    ctx: SpecContext, owner: SpecOwner, arguments: dict[str, Any], referenced: dict[str, Any]
) -> None:
    globals_ = ctx.globals
    names = globals_.names
    names.update(_ALWAYS_GLOBAL)
    parameters = [name for _, _, name in named_items(arguments.get("parameters")) if name]
    if parameters:
        names.update(("workflow.parameters", "workflow.parameters.json"))
    names.update(f"workflow.parameters.{name}" for name in parameters)
    labels, annotations = set(owner.labels), set(owner.annotations)
    for metadata in (as_dict(ctx.spec.get("workflowMetadata")), as_dict(referenced.get("workflowMetadata"))):
        labels.update(as_dict(metadata.get("labels")), as_dict(metadata.get("labelsFrom")))
        annotations.update(as_dict(metadata.get("annotations")))
    names.update(f"workflow.labels.{key}" for key in labels)
    names.update(f"workflow.annotations.{key}" for key in annotations)
    if ctx.spec.get("priority") is not None:
        names.add("workflow.priority")
    globals_.any_workflow_parameter = owner.kind in TEMPLATE_KINDS
    for template in [*ctx.templates.values(), *templates_by_name(referenced).values()]:
        register_global_outputs(ctx, template)


def _entry_holder(ctx: SpecContext, template_name: str) -> dict[str, Any]:
    """How Argo calls a spec-level template: by name, or into the referenced WorkflowTemplate."""
    reference = ctx.spec.get("workflowTemplateRef")
    if isinstance(reference, dict):
        return {"templateRef": {**reference, "template": template_name}}
    return {"template": template_name}


def _check_entrypoint(
    ctx: SpecContext, owner: SpecOwner, arguments: dict[str, Any], referenced: dict[str, Any]
) -> str:
    """Check the entrypoint exists and the workflow's arguments supply its inputs; returns its name."""
    own = text(ctx.spec.get("entrypoint"))
    entrypoint = own or text(referenced.get("entrypoint"))
    is_template = owner.kind in TEMPLATE_KINDS
    if is_template and not own:
        return ""  # a WorkflowTemplate needs no entrypoint: the Workflow that uses it may name one
    if not entrypoint:
        # Without the referenced WorkflowTemplate at hand, its entrypoint is unknown rather than missing.
        if referenced or not isinstance(ctx.spec.get("workflowTemplateRef"), dict):
            ctx.report_message("spec.entrypoint", "spec.entrypoint is required")
        return ""
    resolved, problem = ctx.resolve(_entry_holder(ctx, entrypoint))
    if problem:
        ctx.report("spec.entrypoint", problem)
    elif resolved.template is not None and not is_template:
        for missing in missing_inputs(resolved.template, arguments):
            ctx.report_message("spec.entrypoint", f"templates.{entrypoint} {missing}")
    return entrypoint


def _check_on_exit(ctx: SpecContext, referenced: dict[str, Any]) -> str:
    """Check the exit handler exists and the workflow's own arguments supply its inputs; returns its name."""
    on_exit = text(ctx.spec.get("onExit")) or text(referenced.get("onExit"))
    if not on_exit:
        return ""
    resolved, problem = ctx.resolve(_entry_holder(ctx, on_exit))
    if problem:
        ctx.report("spec.onExit", problem)
    elif resolved.template is not None:
        for missing in missing_inputs(resolved.template, ctx.spec.get("arguments")):
            ctx.report_message("spec.onExit", f"templates.{on_exit} {missing}")
    return on_exit


def _reachable(templates: dict[str, dict[str, Any]], entrypoint: str) -> set[str]:
    """Templates the entrypoint runs, directly or through steps and tasks (inline ones included)."""
    seen: set[str] = set()
    pending = [templates[entrypoint]] if entrypoint in templates else []
    if pending:
        seen.add(entrypoint)
    while pending:
        for node in called_nodes(pending.pop()):
            if isinstance(node.get("inline"), dict):
                pending.append(node["inline"])
            name = text(node.get("template"))
            if name in templates and name not in seen:
                seen.add(name)
                pending.append(templates[name])
    return seen


def _check_pod_gc(ctx: SpecContext, pod_gc: Any) -> None:
    if not isinstance(pod_gc, dict):
        return
    strategy = text(pod_gc.get("strategy"))
    if strategy not in POD_GC_STRATEGIES:
        ctx.report_message("spec.podGC.strategy", f"podGC.strategy unknown strategy '{strategy}'")
    if pod_gc.get("labelSelector") is not None:
        for problem in label_selector_problems(pod_gc["labelSelector"]):
            ctx.report_message("spec.podGC.labelSelector", f"podGC.labelSelector invalid: {problem}")
    delay = text(pod_gc.get("deleteDelayDuration"))
    if delay and not contains_tag(delay) and not is_seconds_or_duration(delay):
        ctx.report_message(
            "spec.podGC.deleteDelayDuration",
            f'podGC.deleteDelayDuration invalid: time: invalid duration "{delay}"',
        )


def _check_lifetimes(ctx: SpecContext, spec: dict[str, Any]) -> None:
    """activeDeadlineSeconds and the TTLs are counts of seconds; a negative one means nothing."""
    deadline = spec.get("activeDeadlineSeconds")
    if _is_negative(deadline):
        ctx.report_message("spec.activeDeadlineSeconds", "spec.activeDeadlineSeconds must not be negative")
    ttl = as_dict(spec.get("ttlStrategy"))
    for name in _TTL_FIELDS:
        if _is_negative(ttl.get(name)):
            ctx.report_message(f"spec.ttlStrategy.{name}", f"ttlStrategy.{name} must not be negative")


def _is_negative(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value < 0
