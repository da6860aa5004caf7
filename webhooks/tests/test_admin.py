"""Injection rules in the admin: a rule and its Secret env vars are checked, saved, and reach the webhook."""

from __future__ import annotations

import json

import pytest

from webhooks import rulesversion
from webhooks.models import InjectionRule

pytestmark = pytest.mark.django_db


def rule_form(**overrides: str) -> dict[str, str]:
    """The add form as a browser posts it: the rule, then the inline formset of env vars."""
    form = {
        "name": "wandb",
        "description": "W&B key for every workflow pod",
        "enabled": "on",
        "priority": "10",
        "namespaces": json.dumps(["team-*"]),
        "pod_selector": json.dumps(
            {"matchExpressions": [{"key": "workflows.argoproj.io/workflow", "operator": "Exists"}]}
        ),
        "image_pull_secrets": "[]",
        "labels": "{}",
        "annotations": "{}",
        "env-TOTAL_FORMS": "1",
        "env-INITIAL_FORMS": "0",
        "env-MIN_NUM_FORMS": "0",
        "env-MAX_NUM_FORMS": "1000",
        "env-0-name": "WANDB_API_KEY",
        "env-0-secret_name": "wandb",
        "env-0-secret_key": "api-key",
    }
    form.update(overrides)
    return form


def test_an_admin_adds_a_rule_with_its_env_and_the_version_moves(
    admin_client, django_capture_on_commit_callbacks
):
    before = int(rulesversion.read_rules_version() or 0)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/admin/webhooks/injectionrule/add/", rule_form())
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = InjectionRule.objects.get(name="wandb").as_rule()
    assert [variable.name for variable in rule.env] == ["WANDB_API_KEY"]
    assert rule.namespaces == ("team-*",)
    assert int(rulesversion.read_rules_version() or 0) > before


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        (
            "pod_selector",
            json.dumps({"matchExpressions": [{"key": "a", "operator": "Has"}]}),
            "operator: must be",
        ),
        ("namespaces", json.dumps(["Team_A"]), "is not a namespace name"),
        ("labels", json.dumps({"team": "not a value"}), "is not a valid label value"),
        ("image_pull_secrets", json.dumps(["Registry!"]), "is not a Secret name"),
        ("env-0-secret_name", "Bad_Name", "A Secret name"),
        ("env-0-name", "1ST", "An env var name"),
    ],
)
def test_the_admin_refuses_a_malformed_rule_naming_the_problem(admin_client, field, value, problem):
    response = admin_client.post("/admin/webhooks/injectionrule/add/", rule_form(**{field: value}))
    assert response.status_code == 200
    assert problem in response.content.decode()
    assert not InjectionRule.objects.exists()


def test_the_list_shows_rules_and_the_disable_action_works(admin_client, django_capture_on_commit_callbacks):
    InjectionRule.objects.create(name="wandb")
    assert b"wandb" in admin_client.get("/admin/webhooks/injectionrule/").content
    before = int(rulesversion.read_rules_version() or 0)
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            "/admin/webhooks/injectionrule/",
            {"action": "disable", "_selected_action": [str(InjectionRule.objects.get().pk)]},
        )
    assert InjectionRule.objects.get().enabled is False
    assert int(rulesversion.read_rules_version() or 0) > before
