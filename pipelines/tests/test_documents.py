"""Request documents: objects or YAML text, JSON parameter values, placeholders filled from the request."""

import pytest
import yaml

from pipelines.documents import transpile_documents
from workflows.pipeline import PipelineError, argument_text
from workflows.tests.pipeline_examples import FULL_CONFIG_YAML, FULL_PIPELINE_YAML, full_config, full_pipeline

VARIABLES = {"tag": "ci-42"}


def test_yaml_text_and_json_objects_transpile_to_the_same_workflow() -> None:
    from_text = transpile_documents(FULL_PIPELINE_YAML, FULL_CONFIG_YAML, variables=VARIABLES)
    from_objects = transpile_documents(full_pipeline(), full_config(), variables=VARIABLES)
    assert from_text.workflow == from_objects.workflow
    assert from_text.workflow["spec"]["entrypoint"] == "main"


def test_variables_fill_the_placeholders_of_the_configuration() -> None:
    result = transpile_documents(full_pipeline(), full_config(), variables=VARIABLES)
    images = {t["container"]["image"] for t in result.workflow["spec"]["templates"] if "container" in t}
    assert images == {"registry.example.com/churn:ci-42"}


def test_the_servers_environment_never_fills_a_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGOML_VAR_tag", "from-the-server")
    with pytest.raises(PipelineError) as caught:
        transpile_documents(full_pipeline(), full_config())
    assert [problem.field for problem in caught.value.problems] == ["docker_image"]
    assert "ARGOML_VAR_tag" in caught.value.problems[0].message


def test_yaml_syntax_errors_of_both_documents_are_reported_together() -> None:
    with pytest.raises(PipelineError) as caught:
        transpile_documents("dag: [unclosed", "docker_image: {", variables=VARIABLES)
    assert [(p.where, p.field) for p in caught.value.problems] == [
        ("pipeline", "line 2"),
        ("config", "line 2"),
    ]
    assert all("is not valid YAML" in p.message for p in caught.value.problems)


def test_a_json_list_parameter_reaches_the_workflow_arguments_as_json_text() -> None:
    result = transpile_documents(
        full_pipeline(),
        full_config(),
        parameters={"regions": ["eu"], "learning_rate": 0.1},
        variables=VARIABLES,
    )
    arguments = {p["name"]: p["value"] for p in result.workflow["spec"]["arguments"]["parameters"]}
    assert arguments == {"learning_rate": "0.1", "regions": '["eu"]'}


def test_a_map_parameter_sent_as_a_string_that_is_not_a_list_is_a_problem() -> None:
    with pytest.raises(PipelineError, match="--parameter regions: must be a JSON list"):
        transpile_documents(full_pipeline(), full_config(), parameters={"regions": "eu"}, variables=VARIABLES)


@pytest.mark.parametrize(
    ("value", "text"),
    [("eu", "eu"), (True, "true"), (False, "false"), (3, "3"), (0.5, "0.5"), (["a", 1], '["a", 1]'),
     ({"k": "v"}, '{"k": "v"}')],
)  # fmt: skip
def test_parameter_values_become_the_text_the_command_line_would_give(value: object, text: str) -> None:
    assert argument_text(value) == text


def test_warnings_come_back_with_the_workflow() -> None:
    pipeline = full_pipeline()
    pipeline["parameters"]["unused"] = 1
    result = transpile_documents(yaml.safe_dump(pipeline), full_config(), variables=VARIABLES)
    assert result.warnings == ("parameter 'unused' is not used by any step",)
