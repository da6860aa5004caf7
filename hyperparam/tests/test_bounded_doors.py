"""Every door a sweep enters by refuses the same hostile specs, naming the same field, before it plans a
trial: the validating webhook, the REST API, the dashboard's Submit page, `manage.py render_hyperparam`
and the controller. Each spec is a few kilobytes that used to cost seconds or gigabytes (issue 27); the
door's wall time and peak traced memory are asserted with its answer."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from access import podsecurity
from access.models import NamespaceGrant, Role
from hyperparam.reconcile import HPW, reconcile_hyperparam_workflow
from hyperparam.tests.conftest import make_hpw, make_spec
from hyperparam.tests.test_bounds import assert_cheap, measured, wide_grid
from kube.client import get_client
from kube.resources import WORKFLOW
from webhooks import validating
from webhooks.review import parse_review
from webhooks.tests.conftest import admission_review

pytestmark = pytest.mark.django_db

NAMESPACE = "team-a"


LEAF = {"name": "leaf", "container": {"image": "busybox:1.36", "command": ["true"]}}


def entry_calling(step: dict[str, Any], *templates: dict[str, Any]) -> dict[str, Any]:
    """A plain grid (no objective) whose entrypoint runs `step` once per trial, beside `templates`."""
    spec = make_spec()
    del spec["objective"]
    entry = {
        "name": "main",
        "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}]},
        "steps": [[step]],
    }
    spec["workflow"]["templates"] += [entry, copy.deepcopy(LEAF), *templates]
    spec["workflow"]["entrypoint"] = "main"
    return spec


def call_graph_bomb() -> dict[str, Any]:
    """Twelve levels of templates calling the one below ten times: 10^12 paths in a few kilobytes."""
    levels, callee = [], "leaf"
    for level in range(12):
        tasks = [{"name": f"t{i}", "template": callee} for i in range(10)]
        levels.append({"name": f"level-{level}", "dag": {"tasks": tasks}})
        callee = f"level-{level}"
    return entry_calling({"name": "all", "template": callee}, *levels)


def endless_loop() -> dict[str, Any]:
    return entry_calling({"name": "each", "template": "leaf", "withSequence": {"count": "1000000000000"}})


HOSTILE: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "twenty-by-a-hundred-grid": (wide_grid, "spec.hyperparams"),
    "ten-by-five-grid": (lambda: wide_grid(parameters=10, values=5), "spec.hyperparams"),
    "template-call-graph": (call_graph_bomb, "spec.workflow"),
    "loop-of-a-trillion": (endless_loop, "spec.workflow.templates[1].steps[0][0].withSequence.count"),
    "parallelism": (lambda: make_spec(parallelism=10**9), "spec.parallelism"),
}


def manifest(spec: dict[str, Any]) -> dict[str, Any]:
    return make_hpw(spec, name="hostile", uid="")


@pytest.fixture
def editor(django_user_model) -> Any:
    user = django_user_model.objects.create_user("sweep-editor")
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=Role.EDITOR)
    return user


@pytest.fixture(autouse=True)
def default_pod_security():
    podsecurity.reset_process_cache(load=dict, read_version=lambda: None)
    yield
    podsecurity.reset_process_cache()


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_webhook_denies_it_naming_the_field(hostile):
    spec, field = HOSTILE[hostile]
    review = parse_review(admission_review(manifest(spec())))
    with measured() as cost:
        verdict = validating.review(review)
    assert not verdict.allowed
    assert field in {cause.path for cause in verdict.causes}
    assert_cheap(cost, seconds=2, mib=16)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_api_answers_400_naming_the_field(hostile, editor, cluster):
    spec, field = HOSTILE[hostile]
    api = APIClient()
    api.force_authenticate(editor)
    body = manifest(spec())
    with measured() as cost:
        response = api.post("/api/hyperparams/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()
    assert get_client().list(HPW, NAMESPACE)["items"] == []
    assert_cheap(cost, seconds=3, mib=32)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_submit_page_refuses_it_before_any_preview(hostile, editor):
    spec, field = HOSTILE[hostile]
    text = yaml.safe_dump(manifest(spec()))
    client = Client(raise_request_exception=False)
    client.force_login(editor)
    with measured() as cost:
        response = client.post(reverse("dashboard:submit"), {"manifest": text, "action": "preview"})
    assert response.status_code == 422
    assert field in {problem.path for problem in response.context["problems"]}
    assert "preview" not in response.context
    assert_cheap(cost, seconds=3, mib=32)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_render_hyperparam_refuses_it_naming_the_field(hostile, tmp_path):
    spec, field = HOSTILE[hostile]
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(manifest(spec())))
    with measured() as cost, pytest.raises(CommandError) as refused:
        call_command("render_hyperparam", str(path))
    assert f"\n  {field}: " in str(refused.value)
    assert_cheap(cost, seconds=2, mib=16)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_controller_fails_the_sweep_naming_the_field_and_creates_nothing(hostile, cluster):
    spec, field = HOSTILE[hostile]
    get_client().create(HPW, manifest(spec()))  # as if the webhook were not there (kubectl --validate off)
    with measured() as cost:
        reconcile_hyperparam_workflow(NAMESPACE, "hostile")
    status = get_client().get(HPW, "hostile", NAMESPACE)["status"]
    assert status["phase"] == "Failed"
    assert status["conditions"][-1]["reason"] == "InvalidSpec"
    assert f"{field}: " in status["message"]
    assert get_client().list(WORKFLOW, NAMESPACE)["items"] == []
    assert_cheap(cost, seconds=3, mib=32)


def test_each_hostile_spec_is_a_few_kilobytes():
    for build, _ in HOSTILE.values():
        assert len(json.dumps(manifest(build()))) < 10_000
