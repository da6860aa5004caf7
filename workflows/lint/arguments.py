"""Arguments and inputs: argument values, enums, and whether a call supplies its template's inputs."""

from __future__ import annotations

from typing import Any

from fields import as_dict
from workflows.lint.model import SpecContext, as_list, has_location
from workflows.lint.names import check_named_list, named_items, text

_ALLOWED_ARGUMENT_VALUE_FROM = ("configMapKeyRef", "event", "supplied")
_FORBIDDEN_ARGUMENT_VALUE_FROM = ("path", "jsonPath", "parameter", "expression")


def check_arguments(ctx: SpecContext, prefix: str, arguments: Any, *, allow_empty_values: bool) -> None:
    """Argo's validateArguments: names, then a value for each parameter and a source for each artifact.

    ``prefix`` ends with a dot, e.g. ``spec.arguments.`` or ``templates.main.steps[0].a.arguments.``;
    ``allow_empty_values`` lets a parameter have no value (linting a Workflow, or any WorkflowTemplate).
    """
    arguments = as_dict(arguments)
    parameters, artifacts = arguments.get("parameters"), arguments.get("artifacts")
    ctx.errors.extend(check_named_list(parameters, f"{prefix}parameters", parameters=True))
    ctx.errors.extend(check_named_list(artifacts, f"{prefix}artifacts", parameters=True))
    for _, parameter, name in named_items(parameters):
        _check_parameter_value(ctx, f"{prefix}{name}", parameter, allow_empty_values)
    for _, artifact, name in named_items(artifacts):
        where = f"{prefix}{name}"
        has_from = bool(text(artifact.get("from")))
        if not has_from and not text(artifact.get("fromExpression")) and not has_location(artifact):
            ctx.report_message(where, f"{where}.from, artifact location, or key is required")
        if has_from and text(artifact.get("fromExpression")):
            ctx.report(where, "shouldn't have both `from` and `fromExpression` in Artifact")


def _check_parameter_value(
    ctx: SpecContext, where: str, parameter: dict[str, Any], allow_empty: bool
) -> None:
    value, value_from = parameter.get("value"), parameter.get("valueFrom")
    if value is None and value_from is None and not allow_empty:
        ctx.report_message(where, f"{where}.value or {where}.valueFrom is required")
    if value_from is not None:
        source = as_dict(value_from)
        allowed = any(source.get(key) not in (None, "") for key in _ALLOWED_ARGUMENT_VALUE_FROM)
        forbidden = any(text(source.get(key)) for key in _FORBIDDEN_ARGUMENT_VALUE_FROM)
        if not allowed or forbidden:
            ctx.report_message(where, f"{where}.valueFrom only allows: default, configMapKeyRef and supplied")
    enum = parameter.get("enum")
    if enum is None:
        return
    if not as_list(enum):
        ctx.report_message(where, f"{where}.enum should contain at least one value")
    elif value is None:
        if not allow_empty:
            ctx.report_message(where, f"{where}.value is required")
    elif text(value) not in {text(option) for option in enum}:
        ctx.report_message(where, f"{where}.value should be present in {where}.enum list")


def missing_inputs(template: dict[str, Any], arguments: Any) -> list[str]:
    """Why the arguments of a call do not satisfy the template's inputs (Argo's ProcessArgs wording).

    A parameter is satisfied by an argument, its own value or default, or a ConfigMap reference; an artifact
    by an argument, its own location, or being optional.
    """
    arguments = as_dict(arguments)
    supplied_parameters = {name: parameter for _, parameter, name in named_items(arguments.get("parameters"))}
    supplied_artifacts = {name for _, _, name in named_items(arguments.get("artifacts"))}
    inputs = as_dict(template.get("inputs"))
    problems = []
    for _, parameter, name in named_items(inputs.get("parameters")):
        value = parameter.get("value")
        if value is None:
            value = parameter.get("default")
        value_from = parameter.get("valueFrom")
        argument = supplied_parameters.get(name)
        if argument is not None:  # an argument replaces the input's own value and source
            value = argument.get("value")
            value_from = None if value is not None else argument.get("valueFrom")
        from_config_map = as_dict(value_from).get("configMapKeyRef") is not None
        if value is None and not from_config_map:
            problems.append(f"inputs.parameters.{name} was not supplied")
    for _, artifact, name in named_items(inputs.get("artifacts")):
        if artifact.get("optional") is True or has_location(artifact):
            continue
        if name not in supplied_artifacts:
            problems.append(f"inputs.artifacts.{name} was not supplied")
    return problems
