"""The pipeline transpiler: a pipeline definition (task, parallel, map, dag, success/fail, on_failure) and an
executor configuration become an Argo Workflow with per-step container settings. Pure: no Django, no I/O."""

from .config import CONFIG_KEYS, DEFAULT_OUTPUT_FILE, PULL_POLICIES, STEP_KEYS, ExecutorConfig, StepSettings
from .errors import PipelineError, Problem
from .model import Pipeline
from .parse import parse_pipeline
from .transpile import (
    Transpiled,
    argument_text,
    dump_workflow,
    load_document,
    parse_parameter_assignments,
    read_parameters_file,
    transpile,
)

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_OUTPUT_FILE",
    "PULL_POLICIES",
    "STEP_KEYS",
    "ExecutorConfig",
    "Pipeline",
    "PipelineError",
    "Problem",
    "StepSettings",
    "Transpiled",
    "argument_text",
    "dump_workflow",
    "load_document",
    "parse_parameter_assignments",
    "parse_pipeline",
    "read_parameters_file",
    "transpile",
]
