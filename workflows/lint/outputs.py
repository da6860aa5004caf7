"""Template outputs: names, references, artifact paths, global names and where parameter values come from."""

from __future__ import annotations

from typing import Any

from fields import as_dict
from workflows.lint.leaf import artifact_path_problem
from workflows.lint.model import TYPE_NAMES, SpecContext, is_leaf, template_type
from workflows.lint.names import check_named_list, named_items, param_name_problems, text
from workflows.lint.variables import Globals, Scope, is_parameter_reference, unresolved_tags

_VALUE_FROM_SOURCES = ("path", "jqFilter", "jsonPath", "parameter", "expression")


def check_outputs(
    ctx: SpecContext, template: dict[str, Any], prefix: str, scope: Scope, globals_: Globals
) -> None:
    """Argo's validateOutputs for one template, given the scope its body ended with."""
    outputs = as_dict(template.get("outputs"))
    if not outputs:
        return
    parameters, artifacts = outputs.get("parameters"), outputs.get("artifacts")
    ctx.errors.extend(check_named_list(parameters, f"{prefix}.outputs.parameters", parameters=True))
    ctx.errors.extend(check_named_list(artifacts, f"{prefix}.outputs.artifacts", parameters=True))
    for tag in unresolved_tags(outputs, scope, globals_):
        ctx.report(f"{prefix}.outputs", f"failed to resolve {{{{{tag}}}}}")
    leaf = is_leaf(template)
    for _, artifact, name in named_items(artifacts):
        reference = f"{prefix}.outputs.artifacts.{name}"
        if leaf:
            if problem := artifact_path_problem(artifact, name):
                ctx.report_message(reference, f"error in {reference}: {problem}")
        elif text(artifact.get("path")):
            ctx.report(f"{reference}.path", "only valid in container/script templates")
        _check_global_name(ctx, artifact, reference)
    kind = template_type(template)
    for _, parameter, name in named_items(parameters):
        reference = f"{prefix}.outputs.parameters.{name}"
        if _check_parameter_source(ctx, parameter, reference):
            _check_source_for_type(ctx, as_dict(parameter.get("valueFrom")), reference, kind)
        _check_global_name(ctx, parameter, reference)


def _check_parameter_source(ctx: SpecContext, parameter: dict[str, Any], reference: str) -> bool:
    """Argo's validateOutputParameter: exactly one of value and valueFrom, and one kind of valueFrom.

    Returns whether the valueFrom is worth checking against the template type.
    """
    value, value_from = parameter.get("value"), parameter.get("valueFrom")
    if value is not None and value_from is not None:
        ctx.report(reference, "has both valueFrom and value specified, choose one")
        return False
    if value is not None:
        return False
    if value_from is None:
        ctx.report(reference, "does not have valueFrom or value specified")
        return False
    source = as_dict(value_from)
    kinds = sum(1 for key in _VALUE_FROM_SOURCES if text(source.get(key))) + (
        source.get("supplied") is not None
    )
    if kinds == 0:
        ctx.report(
            reference,
            "valueFrom type unspecified. choose one of: path, jqFilter, jsonPath, parameter, raw, expression",
        )
    elif kinds > 1:
        ctx.report(
            reference,
            "multiple valueFrom types specified. choose one of: path, jqFilter, jsonPath, parameter, raw",
        )
    return kinds == 1


def _check_source_for_type(
    ctx: SpecContext, source: dict[str, Any], reference: str, kind: str | None
) -> None:
    type_name = TYPE_NAMES.get(kind or "", "")
    if kind in ("container", "containerSet", "script") and not text(source.get("path")):
        ctx.report_message(reference, f"{reference}.path must be specified for {type_name} templates")
    elif kind == "resource" and not text(source.get("jqFilter")) and not text(source.get("jsonPath")):
        ctx.report(reference, f".jqFilter or jsonPath must be specified for {type_name} templates")
    elif kind in ("dag", "steps"):
        parameter, expression = text(source.get("parameter")), text(source.get("expression"))
        if not parameter and not expression:
            ctx.report_message(
                reference, f"{reference}.parameter or expression must be specified for {type_name} templates"
            )
        elif parameter and expression:
            ctx.report(
                reference,
                "shouldn't have both `from` and `expression` specified in `ValueFrom` for"
                f" {type_name} templates",
            )


def _check_global_name(ctx: SpecContext, item: dict[str, Any], reference: str) -> None:
    global_name = text(item.get("globalName"))
    if global_name and not is_parameter_reference(global_name):
        for problem in param_name_problems(global_name)[:1]:
            ctx.report_message(f"{reference}.globalName", f"{reference}.globalName: {problem}")
