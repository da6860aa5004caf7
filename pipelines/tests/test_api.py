"""POST /api/pipelines/transpile and /submit: the Workflow or every problem, and submit only as an editor."""

import re
import tracemalloc
from typing import Any

import pytest
import yaml
from rest_framework.test import APIClient

from access.models import NamespacePodSecurity
from kubesim.simulator import Simulator
from pipelines.api.views import EXAMPLE_REQUEST
from pipelines.tests.conftest import NAMESPACE
from workflows.tests.pipeline_examples import (
    FULL_CONFIG_YAML,
    FULL_PIPELINE_YAML,
    MAGNUS_CONFIG_YAML,
    MAGNUS_PARAMETERS_YAML,
    MAGNUS_PIPELINE_YAML,
    full_config,
    one_task_pipeline,
)

pytestmark = pytest.mark.django_db

TRANSPILE = "/api/pipelines/transpile"
SUBMIT = "/api/pipelines/submit"
VARIABLES = {"tag": "ci-42"}
QUANTITY_EXAMPLES = "(examples: 500m, 2, 1G, 512Mi)"


def post(api: APIClient, user: Any, url: str, body: dict[str, Any]) -> Any:
    api.force_authenticate(user)
    return api.post(url, body, format="json")


def full_request(**extra: Any) -> dict[str, Any]:
    return {"pipeline": FULL_PIPELINE_YAML, "config": FULL_CONFIG_YAML, "variables": VARIABLES, **extra}


def error_lines(response: Any) -> list[str]:
    return [error["text"] for error in response.json()["errors"]]


# --- transpile ------------------------------------------------------------------------------------------


def magnus_request(**extra: Any) -> dict[str, Any]:
    """A Magnus user's three files as they are, and the variable their CI exports as MAGNUS_VAR_."""
    return {
        "pipeline": MAGNUS_PIPELINE_YAML,
        "config": MAGNUS_CONFIG_YAML,
        "parameters_file": MAGNUS_PARAMETERS_YAML,
        "variables": {"docker_image": "churn:1"},
        **extra,
    }


def test_transpile_takes_a_magnus_users_files_and_parameters_win_over_the_file(
    api: APIClient, editor: Any
) -> None:
    response = post(api, editor, TRANSPILE, magnus_request(parameters={"seeds": [7, 8]}))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["workflow"]["spec"]["arguments"]["parameters"] == [
        {"name": "lr", "value": "0.01"},
        {"name": "seeds", "value": "[7, 8]"},
    ]
    assert body["warnings"] == [
        "step fit.fail: no step leads to this fail step; it is left out",
        "step fail: no step leads to this fail step; it is left out",
        "config: run_log_store: ignored (a Magnus service; Argo keeps its own logs and artifacts)",
    ]


def test_a_parameters_file_may_be_a_json_object_and_its_problems_are_named(
    api: APIClient, editor: Any
) -> None:
    response = post(api, editor, TRANSPILE, magnus_request(parameters_file={"lr": 0.1, "seeds": [1]}))
    assert response.status_code == 200, response.json()
    response = post(api, editor, TRANSPILE, magnus_request(parameters_file="lr: [unclosed\n"))
    assert response.status_code == 400
    assert [error["where"] for error in response.json()["errors"]] == ["parameters_file"]
    response = post(api, editor, TRANSPILE, magnus_request(parameters_file="seeds:\n"))
    assert error_lines(response) == ["parameters_file: seeds: has no value"]


def test_transpile_answers_the_workflow_as_yaml_and_json(api: APIClient, editor: Any) -> None:
    response = post(api, editor, TRANSPILE, full_request())
    assert response.status_code == 200
    body = response.json()
    assert body["workflow"]["kind"] == "Workflow"
    assert body["workflow"]["metadata"]["generateName"] == "churn-model-"
    assert yaml.safe_load(body["yaml"]) == body["workflow"]
    assert body["warnings"] == []


def test_transpile_takes_json_objects_and_parameters(api: APIClient, editor: Any) -> None:
    pipeline = one_task_pipeline(command="python train.py --lr {{parameters.lr}}")
    pipeline["parameters"] = {"lr": 0.1, "unused": True}
    body = {"pipeline": pipeline, "config": {"docker_image": "churn:1"}, "parameters": {"lr": 0.5}}
    response = post(api, editor, TRANSPILE, body)
    assert response.status_code == 200
    arguments = response.json()["workflow"]["spec"]["arguments"]["parameters"]
    assert arguments == [{"name": "lr", "value": "0.5"}, {"name": "unused", "value": "true"}]
    assert response.json()["warnings"] == ["parameter 'unused' is not used by any step"]


def test_every_problem_is_a_line_naming_the_step_and_field(api: APIClient, editor: Any) -> None:
    pipeline = one_task_pipeline(next="nowhere", mode_config={"argo": {"cpu_limit": "lots"}})
    body = {"pipeline": pipeline, "config": {"docker_image": "churn:1", "image_pull_policy": "always"}}
    response = post(api, editor, TRANSPILE, body)
    assert response.status_code == 400
    assert response.json()["detail"] == "4 problems found; nothing was transpiled"
    assert error_lines(response) == [
        "step train: mode_config.argo.cpu_limit: 'lots' is not a Kubernetes quantity " + QUANTITY_EXAMPLES,
        "step train: next: 'nowhere' is not a step here (steps: success, train)",
        "step success: is not reachable from start_at 'train'",
        "config: image_pull_policy: 'always' must be one of IfNotPresent, Always, Never",
    ]


def test_each_problem_is_also_given_in_parts(api: APIClient, editor: Any) -> None:
    config = {"docker_image": "churn:1", "cpu_limit": "lots"}
    response = post(api, editor, TRANSPILE, {"pipeline": one_task_pipeline(), "config": config})
    assert response.status_code == 400
    message = "'lots' is not a Kubernetes quantity " + QUANTITY_EXAMPLES
    assert response.json()["errors"] == [
        {"where": "config", "field": "cpu_limit", "message": message, "text": f"config: cpu_limit: {message}"}
    ]


def test_a_yaml_syntax_error_names_the_document_and_line(api: APIClient, editor: Any) -> None:
    response = post(api, editor, TRANSPILE, {"pipeline": "dag:\n  steps: [", "config": FULL_CONFIG_YAML})
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert (error["where"], error["field"]) == ("pipeline", "line 3")


# A 531-byte pipeline gave 418 MB in the review (issue 16): aliases of lists, nine levels deep.
ALIAS_BOMB = "\n".join(
    ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    + ["dag: {start_at: s, steps: {s: {type: task, command: [*a8], next: done}, done: {type: success}}}"]
)


def test_an_alias_bomb_is_refused_naming_the_alias_before_it_is_expanded(
    api: APIClient, editor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pipelines.documents.transpile", lambda *a, **k: pytest.fail("transpiled"))
    response = post(api, editor, TRANSPILE, {"pipeline": ALIAS_BOMB, "config": FULL_CONFIG_YAML})
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert (error["where"], error["field"]) == ("pipeline", "line 2")
    assert "*a0 is an alias of a mapping or a sequence" in error["text"]


# A 103 KB pipeline gave a 200 MB answer in the review (issue 27): one 8,000-character string, named by
# 12,000 aliases of it, each written out in full in the Workflow and again in its YAML.
LONG_STRING = "x" * 8000
SCALAR_ALIAS_BOMB = (
    f"parameters:\n  s: &s {LONG_STRING}\n  regions: [{', '.join(['*s'] * 24_000)}]\n"
    "dag: {start_at: s, steps: {s: {type: task, command: python train.py, next: done}, "
    "done: {type: success}}}"
)


def test_aliases_of_a_long_string_are_refused_before_they_are_written_out(
    api: APIClient, editor: Any
) -> None:
    assert len(SCALAR_ALIAS_BOMB) < 110_000
    tracemalloc.start()
    try:
        response = post(api, editor, TRANSPILE, full_request(pipeline=SCALAR_ALIAS_BOMB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert (error["where"], error["field"]) == ("pipeline", "line 3")
    assert "more than the limit of 4194304 bytes (MAX_YAML_EXPANDED_BYTES)" in error["text"]
    assert peak < 20_000_000  # the answer it used to build was 200 MB


def test_a_map_over_more_items_than_the_bound_is_a_problem_of_its_step(api: APIClient, editor: Any) -> None:
    """A million-item parameter list for one map: 18.7 s and 286 MiB (traced) before the bound (issue 27)."""
    task = {"type": "task", "command": "echo {{item.shard}}", "next": "ok"}
    branch = {"start_at": "t", "steps": {"t": task, "ok": {"type": "success"}}}
    shards = {"type": "map", "iterate_on": "shards", "iterate_as": "shard", "branch": branch, "next": "ok"}
    pipeline = {
        "parameters": {"shards": ["a"]},
        "dag": {"start_at": "m", "steps": {"m": shards, "ok": {"type": "success"}}},
    }
    body = {"pipeline": pipeline, "config": FULL_CONFIG_YAML, "variables": VARIABLES}
    response = post(api, editor, TRANSPILE, {**body, "parameters": {"shards": list(range(10_001))}})
    assert response.status_code == 400
    assert error_lines(response) == [
        "step m: iterate_on: must be at most 10000 items (MAX_MAP_ITEMS), not 10001 (the list in parameter "
        "'shards', as given)"
    ]
    assert (
        post(api, editor, TRANSPILE, {**body, "parameters": {"shards": list(range(10_000))}}).status_code
        == 200
    )


def test_a_malformed_request_is_reported_in_the_same_shape(api: APIClient, editor: Any) -> None:
    response = post(api, editor, TRANSPILE, {"pipeline": 7, "parameters": {"lr": None}})
    assert response.status_code == 400
    assert response.json()["detail"] == "The request is invalid; nothing was transpiled"
    assert error_lines(response) == [
        "request: pipeline: Must be a JSON object or YAML text.",
        "request: config: This field is required.",
        "request: parameters.lr: This field may not be null.",
    ]


def test_transpile_needs_a_signed_in_user(api: APIClient) -> None:
    assert api.post(TRANSPILE, full_request(), format="json").status_code == 401


# --- transpile: who may (issue 27: "a user with no grant at all got the 200") ------------------------


def not_json(api: APIClient, user: Any, url: str) -> Any:
    """A body no parser can read: refused with 403, not 400, when the grant is checked before it is read."""
    api.force_authenticate(user)
    return api.post(url, b'{"pipeline": ', content_type="application/json")


@pytest.mark.parametrize("persona", ["outsider", "viewer"])
def test_only_an_editor_of_some_namespace_may_transpile_and_the_body_is_not_read_first(
    api: APIClient, persona: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = request.getfixturevalue(persona)
    monkeypatch.setattr("pipelines.documents.load_document", lambda *a, **k: pytest.fail("parsed"))
    monkeypatch.setattr("pipelines.documents.transpile", lambda *a, **k: pytest.fail("transpiled"))
    response = post(api, user, TRANSPILE, full_request(pipeline=ALIAS_BOMB))
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "You are an editor of no namespace: pipelines are transpiled (and submitted) only for a user who "
        "may submit them somewhere."
    )
    assert not_json(api, user, TRANSPILE).status_code == 403


def test_an_editor_transpiles_for_no_namespace_or_for_one_they_edit(api: APIClient, editor: Any) -> None:
    assert post(api, editor, TRANSPILE, full_request()).status_code == 200
    assert post(api, editor, TRANSPILE, full_request(namespace=NAMESPACE)).status_code == 200
    assert not_json(api, editor, TRANSPILE).status_code == 400


def test_transpiling_for_a_namespace_needs_the_editor_role_there(api: APIClient, editor: Any) -> None:
    response = post(api, editor, TRANSPILE, full_request(namespace="team-b"))
    assert response.status_code == 403
    assert response.json()["detail"] == "You may not change resources in namespace 'team-b'."


def test_an_outsider_may_not_submit_and_the_body_is_not_read_first(api: APIClient, outsider: Any) -> None:
    assert not_json(api, outsider, SUBMIT).status_code == 403


# --- submit: who may ------------------------------------------------------------------------------------


def test_an_outsider_may_not_submit(api: APIClient, outsider: Any) -> None:
    response = post(api, outsider, SUBMIT, full_request(namespace=NAMESPACE))
    assert response.status_code == 403
    assert response.json()["detail"].startswith("You are an editor of no namespace")


def test_a_viewer_may_not_submit(api: APIClient, viewer: Any, cluster: Simulator) -> None:
    assert post(api, viewer, SUBMIT, full_request(namespace=NAMESPACE)).status_code == 403
    assert cluster.store.list("workflows.argoproj.io", NAMESPACE)["items"] == []


def test_an_outsider_is_refused_before_the_documents_are_read_or_transpiled(
    api: APIClient, outsider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pipelines.documents.load_document", lambda *a, **k: pytest.fail("parsed"))
    monkeypatch.setattr("pipelines.documents.transpile", lambda *a, **k: pytest.fail("transpiled"))
    response = post(api, outsider, SUBMIT, full_request(namespace=NAMESPACE, pipeline=ALIAS_BOMB))
    assert response.status_code == 403


def test_an_editor_of_another_namespace_may_not_submit_here(api: APIClient, editor: Any) -> None:
    assert post(api, editor, SUBMIT, full_request(namespace="team-b")).status_code == 403


def test_submit_needs_a_signed_in_user(api: APIClient) -> None:
    assert api.post(SUBMIT, full_request(namespace=NAMESPACE), format="json").status_code == 401


# --- submit: what happens -------------------------------------------------------------------------------


def test_an_editor_submits_and_the_workflow_is_created_in_the_cluster(
    api: APIClient, editor: Any, cluster: Simulator
) -> None:
    response = post(api, editor, SUBMIT, full_request(namespace=NAMESPACE))
    assert response.status_code == 201
    body = response.json()
    assert body["namespace"] == NAMESPACE
    assert body["name"].startswith("churn-model-")
    stored = cluster.store.get("workflows.argoproj.io", body["name"], NAMESPACE)
    assert stored["metadata"]["uid"] == body["uid"]
    transpiled = post(api, editor, TRANSPILE, full_request()).json()["workflow"]
    assert stored["spec"] == transpiled["spec"]


def test_submit_without_a_namespace_is_a_request_problem(api: APIClient, editor: Any) -> None:
    response = post(api, editor, SUBMIT, full_request())
    assert response.status_code == 400
    assert error_lines(response) == ["request: namespace: This field is required."]


def test_an_invalid_pipeline_is_never_submitted(api: APIClient, editor: Any, cluster: Simulator) -> None:
    body = {"pipeline": one_task_pipeline(next="nowhere"), "config": full_config(), "namespace": NAMESPACE}
    response = post(api, editor, SUBMIT, {**body, "variables": VARIABLES})
    assert response.status_code == 400
    assert error_lines(response)[0].startswith("step train: next: 'nowhere' is not a step")
    assert cluster.store.list("workflows.argoproj.io", NAMESPACE)["items"] == []


def test_a_refusal_by_the_cluster_is_a_problem_of_the_request(
    api: APIClient, editor: Any, cluster: Simulator
) -> None:
    cluster.store.delete("namespaces", NAMESPACE)
    response = post(api, editor, SUBMIT, full_request(namespace=NAMESPACE))
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["where"] == "cluster"
    assert NAMESPACE in error["message"]


def test_an_unreachable_cluster_is_a_503(api: APIClient, editor: Any, cluster: Simulator) -> None:
    cluster.faults.fail(500, verb="create", times=None)
    response = post(api, editor, SUBMIT, full_request(namespace=NAMESPACE))
    assert response.status_code == 503
    assert response.json()["detail"].startswith(f"submitting to namespace {NAMESPACE} failed")


# --- documentation --------------------------------------------------------------------------------------


def test_the_openapi_schema_documents_both_verbs(api: APIClient, outsider: Any) -> None:
    api.force_authenticate(outsider)
    schema = yaml.safe_load(api.get("/api/schema/").content)
    transpile, submit = schema["paths"][TRANSPILE]["post"], schema["paths"][SUBMIT]["post"]
    assert set(transpile["responses"]) >= {"200", "400", "403"}
    assert set(submit["responses"]) >= {"201", "400", "403", "503"}
    request = schema["components"]["schemas"]["SubmitRequest"]
    assert {"pipeline", "config", "parameters", "variables", "namespace"} <= set(request["properties"])


def test_the_documented_example_request_transpiles(api: APIClient, editor: Any) -> None:
    response = post(api, editor, TRANSPILE, EXAMPLE_REQUEST.value)
    assert response.status_code == 200
    [train] = [t for t in response.json()["workflow"]["spec"]["templates"] if t["name"] == "train"]
    assert train["container"]["image"] == "registry.example.com/churn:2024.06.1"


def test_form_posts_are_refused(api: APIClient, editor: Any) -> None:
    api.force_authenticate(editor)
    assert api.post(TRANSPILE, {"pipeline": "dag: {}"}).status_code == 415


def test_a_namespace_whose_pod_security_refuses_the_workflow_gets_a_problem_per_field(
    api: APIClient, editor: Any, cluster: Simulator
) -> None:
    NamespacePodSecurity.objects.create(namespace=NAMESPACE, level="restricted")
    body = {"pipeline": one_task_pipeline(), "config": full_config(), "namespace": NAMESPACE}

    response = post(api, editor, SUBMIT, {**body, "variables": VARIABLES})

    assert response.status_code == 400
    assert response.json()["detail"] == "The namespace's pod security refuses the Workflow"
    errors = response.json()["errors"]
    assert {error["where"] for error in errors} == {"pod security"}
    container = next(e["field"] for e in errors).rsplit(".securityContext", 1)[0]
    assert re.fullmatch(r"spec\.templates\[\d+\]\.container", container)
    assert {e["field"].removeprefix(container) for e in errors} == {
        ".securityContext.allowPrivilegeEscalation",
        ".securityContext.runAsNonRoot",
        ".securityContext.seccompProfile.type",
        ".securityContext.capabilities.drop",
    }
    assert cluster.store.list("workflows.argoproj.io", NAMESPACE)["items"] == []
