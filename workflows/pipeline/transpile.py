"""The front door: documents in, a checked Argo Workflow (and warnings) out, or every problem at once."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from workflows import safeyaml

from .config import read_config
from .errors import PipelineError, Problem, Problems
from .fanout import check_fanout
from .model import MapStep, Pipeline, TaskStep, iter_steps
from .parse import PARAMETER_NAME, read_pipeline
from .render import render_workflow
from .settings import check_settings

# libyaml's safe dumper is ~10x faster than the pure-Python one on large workflows.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Lines fold past this many characters in the Workflow's YAML.
YAML_WIDTH = 120


@dataclass(frozen=True)
class Transpiled:
    """The Workflow manifest, where the configuration says to write it, and things worth a second look."""

    workflow: dict[str, Any]
    output_file: str
    warnings: tuple[str, ...] = ()


def transpile(
    pipeline_document: Any,
    config_document: Any,
    *,
    parameters: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Transpiled:
    """Check both documents and render the Workflow; raises PipelineError listing every problem found.

    ``parameters`` set pipeline parameters (as the CLI's ``--parameter k=v`` does), declared or not: Magnus
    pipelines declare none and take them all from a parameters file. ``environ`` fills the configuration's
    ``${var}`` placeholders from ``ARGOML_VAR_<var>`` or ``MAGNUS_VAR_<var>``. Pure: no files, no process
    environment.
    """
    problems = Problems()
    parameters = parameters or {}
    pipeline = read_pipeline(pipeline_document, problems, given_parameters=list(parameters))
    config = read_config(config_document, environ or {}, problems)
    if pipeline is None:
        problems.raise_if_any()
        raise AssertionError("read_pipeline returned nothing without reporting a problem")
    arguments = _workflow_arguments(pipeline, parameters, problems)
    check_fanout(pipeline, parameters, problems)
    check_settings(pipeline, config, problems)
    problems.raise_if_any()
    workflow = render_workflow(pipeline, config, arguments)
    for warning in _warnings(pipeline, workflow):
        problems.warn(warning)
    return Transpiled(workflow=workflow, output_file=config.output_file, warnings=problems.listed_warnings())


def read_parameters_file(document: Any, what: str = "--parameters-file") -> dict[str, str]:
    """A parameters file (Magnus's ``--parameters-file``): a mapping of name to any value, each value as the
    Workflow argument holds it (lists and mappings as JSON). Raises PipelineError naming every bad entry."""
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise PipelineError([Problem(what, "", "must be a mapping of parameter name: value")])
    values: dict[str, str] = {}
    problems = []
    for name, value in document.items():
        if value is None:
            problems.append(Problem(what, str(name), "has no value"))
        else:
            values[str(name)] = argument_text(value)
    if problems:
        raise PipelineError(problems)
    return values


def parse_parameter_assignments(assignments: Iterable[str]) -> dict[str, str]:
    """``["lr=0.1", "shards=[\\"a\\"]"]`` → ``{"lr": "0.1", ...}``; the value may itself contain '='."""
    values: dict[str, str] = {}
    problems = []
    for assignment in assignments:
        name, equals, value = assignment.partition("=")
        if not equals or not name.strip():
            problems.append(Problem("--parameter", assignment, "must look like NAME=VALUE"))
        else:
            values[name.strip()] = value
    if problems:
        raise PipelineError(problems)
    return values


def load_document(text: str, what: str) -> Any:
    """Parse YAML (or JSON) text with the bounded reader (`workflows.safeyaml`); a syntax error or a broken
    limit (size, values, depth, an alias of a mapping or a sequence) becomes a PipelineError naming the
    document and the line."""
    try:
        return safeyaml.load(text)
    except safeyaml.YamlRefused as error:
        where = f"line {error.line}" if error.line is not None else error.limit
        problem = f"is not valid YAML: {error.problem}" if error.limit == "syntax" else error.problem
        raise PipelineError([Problem(what, where, problem)]) from error


def dump_workflow(workflow: Mapping[str, Any]) -> str:
    """The Workflow as YAML, keys in the order Argo's documentation writes them (`pipelines.rendering`
    writes the same text with less memory, for the web process and the command)."""
    return yaml.dump(
        dict(workflow), Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=YAML_WIDTH
    )


def _list_parameters(pipeline: Pipeline) -> dict[str, str]:
    """Parameters that must hold a JSON list, with the map step that needs it."""
    needs = {
        name: "its default is a list"
        for name, value in pipeline.parameters.items()
        if isinstance(value, list)
    }
    for step in iter_steps(pipeline.graph):
        if isinstance(step, MapStep) and step.iterate_on is not None:
            needs[step.iterate_on] = f"map step {step.path} iterates on it"
    return needs


def _workflow_arguments(
    pipeline: Pipeline, overrides: Mapping[str, str], problems: Problems
) -> dict[str, str]:
    list_parameters = _list_parameters(pipeline)
    arguments: dict[str, str] = {}
    for name, value in overrides.items():
        if not PARAMETER_NAME.match(name):
            problems.add(f"--parameter {name}", "", "is not a valid name (letters, digits, '-' and '_')")
        elif name in list_parameters and not _is_json_list(value):
            message = f'must be a JSON list like ["a", "b"] because {list_parameters[name]}'
            problems.add(f"--parameter {name}", "", message)
    for name, default in pipeline.parameters.items():
        if name in overrides:
            arguments[name] = overrides[name]
        elif default is None:
            problems.add(
                "pipeline", f"parameters.{name}", f"has no value; set one with --parameter {name}=VALUE"
            )
        else:
            arguments[name] = argument_text(default)
    # Parameters the pipeline does not declare follow, as given: steps may read them all the same.
    arguments.update((name, value) for name, value in overrides.items() if name not in arguments)
    return arguments


def _is_json_list(text: str) -> bool:
    try:
        return isinstance(safeyaml.load_json(text), list)
    except safeyaml.YamlRefused:
        return False


def argument_text(value: Any) -> str:
    """Argo parameters are strings: lists and mappings as JSON (what withParam reads), flags as true/false."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value)


def _warnings(pipeline: Pipeline, workflow: Mapping[str, Any]) -> tuple[str, ...]:
    used: set[str] = set()
    for step in iter_steps(pipeline.graph):
        if isinstance(step, TaskStep):
            used.update(step.command.parameters)
        if isinstance(step, MapStep) and step.iterate_on is not None:
            used.add(step.iterate_on)
    warnings = [
        f"parameter '{name}' is not used by any step" for name in pipeline.parameters if name not in used
    ]
    caches = {
        template["memoize"]["cache"]["configMap"]["name"]
        for template in workflow["spec"]["templates"]
        if "memoize" in template
    }
    for cache in sorted(caches):
        warnings.append(
            f"cached steps are memoized in ConfigMap '{cache}': Argo needs create/update rights on "
            "ConfigMaps, and memoizes steps without outputs only from Argo Workflows 3.5"
        )
    return tuple(warnings)
