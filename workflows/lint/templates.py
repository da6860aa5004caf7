"""One template: its type, inputs, scope, limits and retries, metrics, then its body and outputs."""

from __future__ import annotations

import re
from typing import Any

from workflows.lint.dag import lint_dag
from workflows.lint.durations import is_duration
from workflows.lint.leaf import artifact_path_problem, check_artifact_location, check_leaf
from workflows.lint.model import (
    TYPE_NAMES,
    SpecContext,
    as_dict,
    as_list,
    is_leaf,
    is_pod,
    template_type,
    template_types,
)
from workflows.lint.names import check_named_list, named_items, text
from workflows.lint.outputs import check_outputs
from workflows.lint.steps import NodeTemplate, lint_steps
from workflows.lint.variables import Scope, contains_tag, unresolved_tags

RETRY_POLICIES = ("Always", "OnError", "OnFailure", "OnTransientError", "")
_TYPE_CHOICES = (
    "choose one of: container, containerSet, steps, script, resource, dag, suspend, template, template ref"
)
_INTEGER = re.compile(r"[+-]?\d+")
_METRIC_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def lint_template(
    ctx: SpecContext, template: dict[str, Any], prefix: str, name: str, outer: Scope | None = None
) -> None:
    """Every rule for one template. ``prefix`` is how messages name it (``templates.<name>``); ``outer`` is
    the scope of the step or task that holds it inline."""
    kinds = template_types(template)
    if not kinds:
        ctx.report(prefix, f"template type unspecified. {_TYPE_CHOICES}")
    elif len(kinds) > 1:
        ctx.report(prefix, f"multiple template types specified. {_TYPE_CHOICES}")
    scope = _check_inputs(ctx, template, prefix)
    scope.parent = outer
    for container in as_list(template.get("initContainers")):
        if isinstance(container, dict) and not text(container.get("name")):
            ctx.report(prefix, "initContainers must all have container name")
    _check_limits(ctx, template, prefix)
    check_retry_strategy(ctx, template.get("retryStrategy"), prefix)
    globals_ = ctx.globals_for(name)
    kind = template_type(template)

    def lint_inline(inline: dict[str, Any], where: str, inline_scope: Scope) -> None:
        lint_template(ctx, inline, where, name, inline_scope)

    if kind == "steps":
        lint_steps(NodeTemplate(ctx, template, prefix, scope, globals_, lint_inline))
    elif kind == "dag":
        lint_dag(NodeTemplate(ctx, template, prefix, scope, globals_, lint_inline))
    else:
        for tag in unresolved_tags(_leaf_view(template), scope, globals_):
            ctx.report_message(prefix, f"{prefix}: failed to resolve {{{{{tag}}}}}")
        check_leaf(ctx, template, prefix)
    check_outputs(ctx, template, prefix, scope, globals_)
    if isinstance(template.get("archiveLocation"), dict):
        check_artifact_location(ctx, template["archiveLocation"], f"{prefix}.archiveLocation")
    check_metrics(ctx, template.get("metrics"), prefix)


def _check_inputs(ctx: SpecContext, template: dict[str, Any], prefix: str) -> Scope:
    """Argo's validateInputs; returns the template's own scope (inputs, pod name, output paths)."""
    inputs = as_dict(template.get("inputs"))
    ctx.errors.extend(
        check_named_list(inputs.get("parameters"), f"{prefix}.inputs.parameters", parameters=True)
    )
    ctx.errors.extend(
        check_named_list(inputs.get("artifacts"), f"{prefix}.inputs.artifacts", parameters=True)
    )
    names: set[str] = set()
    parameters = [name for _, _, name in named_items(inputs.get("parameters"))]
    names.update(f"inputs.parameters.{name}" for name in parameters)
    if parameters:
        names.add("inputs.parameters")
    leaf = is_leaf(template)
    for _, artifact, name in named_items(inputs.get("artifacts")):
        reference = f"{prefix}.inputs.artifacts.{name}"
        names.add(f"inputs.artifacts.{name}")
        if leaf:
            names.add(f"inputs.artifacts.{name}.path")
            if problem := artifact_path_problem(artifact, name):
                ctx.report_message(reference, f"error in {reference}: {problem}")
        elif text(artifact.get("path")):
            ctx.report(f"{reference}.path", "only valid in container/script templates")
        if text(artifact.get("from")):
            ctx.report(f"{reference}.from", "not valid in inputs")
        check_artifact_location(ctx, artifact, reference)
    if is_pod(template):
        names.add("pod.name")
    if leaf:
        outputs = as_dict(template.get("outputs"))
        names.update(
            f"outputs.artifacts.{name}.path"
            for _, artifact, name in named_items(outputs.get("artifacts"))
            if text(artifact.get("path"))
        )
        names.update(
            f"outputs.parameters.{name}.path"
            for _, parameter, name in named_items(outputs.get("parameters"))
            if text(as_dict(parameter.get("valueFrom")).get("path"))
        )
    return Scope(names)


def _leaf_view(template: dict[str, Any]) -> dict[str, Any]:
    """What Argo checks for references in a leaf template once it has filled in the inputs.

    Input parameter values and input artifact sources are replaced by the caller's arguments before the check,
    and outputs are checked on their own, so those parts are left out.
    """
    view = {key: value for key, value in template.items() if key not in ("inputs", "outputs")}
    inputs = as_dict(template.get("inputs"))
    view["inputs"] = {
        "parameters": [
            {key: value for key, value in parameter.items() if key != "value"}
            for parameter in as_list(inputs.get("parameters"))
            if isinstance(parameter, dict)
        ],
        "artifacts": [as_dict(artifact).get("path") for artifact in as_list(inputs.get("artifacts"))],
    }
    return view


def _check_limits(ctx: SpecContext, template: dict[str, Any], prefix: str) -> None:
    """timeout, activeDeadlineSeconds and parallelism, each valid only for some template types."""
    kind = template_type(template)
    nested = kind in ("steps", "dag")
    timeout = text(template.get("timeout"))
    if timeout:
        if not is_leaf(template):
            ctx.report(
                prefix, f"{TYPE_NAMES.get(kind or '', 'Unknown')} template doesn't support timeout field"
            )
        elif _INTEGER.fullmatch(timeout) or not (contains_tag(timeout) or is_duration(timeout)):
            ctx.report(
                prefix, f"{text(template.get('name')) or prefix} has invalid duration format in timeout"
            )
    deadline = template.get("activeDeadlineSeconds")
    if deadline is not None:
        if nested:
            ctx.report(f"{prefix}.activeDeadlineSeconds", "is only valid for leaf templates")
        elif not _is_non_negative_int_or_variable(deadline):
            ctx.report(
                f"{prefix}.activeDeadlineSeconds", "must be a positive integer > 0 or an argo variable"
            )
    if template.get("parallelism") is not None and not nested:
        ctx.report(f"{prefix}.parallelism", "is only valid for steps and dag templates")


def _is_non_negative_int_or_variable(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value >= 0
    value = text(value)
    if _INTEGER.fullmatch(value):
        return int(value) >= 0
    return contains_tag(value)


def check_retry_strategy(ctx: SpecContext, strategy: Any, prefix: str) -> None:
    """A retry policy Argo knows, and a limit that is a number or a variable."""
    if not isinstance(strategy, dict):
        return
    policy = text(strategy.get("retryPolicy"))
    if policy not in RETRY_POLICIES:
        ctx.report(prefix, f"{policy} is not a valid RetryPolicy")
    limit = strategy.get("limit")
    if limit is not None and not _is_non_negative_int_or_variable(limit):
        ctx.report(f"{prefix}.retryStrategy.limit", "must be a non-negative integer or an argo variable")


def check_metrics(ctx: SpecContext, metrics: Any, prefix: str) -> None:
    """Argo's metric rules: valid metric and label names, a help text, and a value for each metric kind."""
    for metric in as_list(as_dict(metrics).get("prometheus")):
        if not isinstance(metric, dict):
            continue
        name = text(metric.get("name"))
        if not _METRIC_NAME.fullmatch(name):
            ctx.report(
                prefix,
                f"metric name '{name}' is invalid. Metric names must contain alphanumeric characters or '_'",
            )
        for label in as_list(metric.get("labels")):
            key = text(as_dict(label).get("key"))
            if not _METRIC_NAME.fullmatch(key):
                ctx.report(
                    prefix,
                    f"metric label '{key}' is invalid: keys may only contain alphanumeric characters or '_'",
                )
        if not text(metric.get("help")):
            ctx.report(prefix, f"metric '{name}' must contain a help string under 'help: ' field")
        for problem in _metric_value_problems(metric):
            ctx.report(prefix, f"metric '{name}' error: {problem}")


def _metric_value_problems(metric: dict[str, Any]) -> list[str]:
    problems = []
    gauge = metric.get("gauge")
    if isinstance(gauge, dict):
        value = text(gauge.get("value"))
        if not value:
            problems.append("missing gauge.value")
        elif gauge.get("realtime") is True and "resourcesDuration." in value:
            problems.append("'resourcesDuration.*' metrics cannot be used in real-time")
    for kind in ("counter", "histogram"):
        if isinstance(metric.get(kind), dict) and not text(metric[kind].get("value")):
            problems.append(f"missing {kind}.value")
    return problems


def lint_all_templates(ctx: SpecContext) -> None:
    """Lint every template of the spec under its Argo name, ``templates.<name>``."""
    for template in as_list(ctx.spec.get("templates")):
        if isinstance(template, dict):
            name = text(template.get("name"))
            lint_template(ctx, template, f"templates.{name}", name)
