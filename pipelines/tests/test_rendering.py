"""The Workflow's YAML as the command writes it and the API answers it: the transpiler's text, byte for
byte, with a fraction of the memory (issue 27: a Workflow near its bound was a 67 MiB YAML dump)."""

from __future__ import annotations

import tracemalloc

import pytest

from pipelines.rendering import workflow_yaml
from workflows.pipeline import dump_workflow, load_document, read_parameters_file, transpile
from workflows.tests.pipeline_examples import (
    FULL_PIPELINE_YAML,
    MAGNUS_CONFIG_YAML,
    MAGNUS_PARAMETERS_YAML,
    MAGNUS_PIPELINE_YAML,
    full_config,
)

MIB = 1024 * 1024


def full_example(**parameters: str) -> dict:
    config = {**full_config(), "docker_image": "registry.example.com/churn:1"}
    return transpile(load_document(FULL_PIPELINE_YAML, "pipeline"), config, parameters=parameters).workflow


@pytest.mark.parametrize(
    "workflow",
    [
        pytest.param(lambda: full_example(), id="the full example"),
        pytest.param(
            lambda: transpile(
                load_document(MAGNUS_PIPELINE_YAML, "pipeline"),
                load_document(MAGNUS_CONFIG_YAML, "config"),
                parameters=read_parameters_file(load_document(MAGNUS_PARAMETERS_YAML, "parameters")),
                environ={"MAGNUS_VAR_docker_image": "churn:1"},
            ).workflow,
            id="a Magnus user's files",
        ),
        pytest.param(
            lambda: full_example(note="a: b # not a comment\n  two lines", accents="ünïcode ✓"),
            id="awkward parameter values",
        ),
    ],
)
def test_the_yaml_is_the_transpilers_text_byte_for_byte(workflow):
    built = workflow()
    assert workflow_yaml(built) == dump_workflow(built)


def test_a_workflow_of_thirty_thousand_parameters_is_written_in_a_third_of_the_memory():
    built = full_example(**{f"k{i}": "v" for i in range(30_000)})
    tracemalloc.start()
    try:
        text = workflow_yaml(built)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text == dump_workflow(built)
    assert peak < 20 * MIB  # PyYAML's emitter: 38 MiB
