"""Injection rules: which Pods they select, what they add, and what they never override."""

from __future__ import annotations

import copy

import pytest

from kubesim.patch import json_patch
from webhooks.injection import (
    Rule,
    SecretEnv,
    injection_patch,
    label_problems,
    namespace_pattern_problems,
    selector_matches,
    selector_problems,
)
from webhooks.tests.conftest import pod

WANDB = SecretEnv("WANDB_API_KEY", "wandb", "api-key")


def inject(pod: dict, namespace: str, rules: list[Rule]) -> tuple[dict, list[str]]:
    """The pod as stored once the apiserver applied the rules' patch, and the rules that applied."""
    operations, applied = injection_patch(pod, namespace, rules)
    return json_patch(copy.deepcopy(pod), operations), applied


WORKFLOW_PODS = {"matchExpressions": [{"key": "workflows.argoproj.io/workflow", "operator": "Exists"}]}


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, {}, True),
        ({"matchLabels": {"app": "x"}}, {"app": "x", "b": "c"}, True),
        ({"matchLabels": {"app": "x"}}, {"app": "y"}, False),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {"tier": "a"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"tier": ""}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"tier": ""}, False),
        (
            {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"app": "x"},
            False,
        ),
    ],
)
def test_label_selectors_match_as_kubernetes_matches_them(selector, labels, matches):
    assert selector_matches(selector, labels) is matches


def test_a_rule_selects_pods_by_namespace_pattern_and_labels():
    rule = Rule("wandb", namespaces=("team-*", "research"), pod_selector=WORKFLOW_PODS)
    workflow_pod = {"workflows.argoproj.io/workflow": "w1"}
    assert rule.selects("team-a", workflow_pod)
    assert rule.selects("research", workflow_pod)
    assert not rule.selects("research-2", workflow_pod)
    assert not rule.selects("team-a", {"app": "web"})
    assert Rule("everywhere").selects("anything", {})


def test_a_selected_pod_gets_the_secret_env_in_every_container_first_in_the_list():
    original = pod(
        initContainers=[{"name": "init", "image": "busybox"}],
        containers=[
            {"name": "main", "image": "busybox", "env": [{"name": "URL", "value": "$(WANDB_API_KEY)@host"}]},
            {"name": "sidecar", "image": "busybox"},
        ],
    )
    injected, applied = inject(original, "ml", [Rule("wandb", env=(WANDB,))])
    expected = {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "wandb", "key": "api-key"}}}
    assert applied == ["wandb"]
    assert injected["spec"]["initContainers"][0]["env"] == [expected]
    assert injected["spec"]["containers"][0]["env"] == [
        expected,
        {"name": "URL", "value": "$(WANDB_API_KEY)@host"},
    ]
    assert injected["spec"]["containers"][1]["env"] == [expected]
    assert "env" not in original["spec"]["containers"][1], "the pod given is not modified"


def test_an_optional_secret_says_so():
    variable = SecretEnv("TOKEN", "maybe", "token", optional=True)
    assert variable.manifest()["valueFrom"]["secretKeyRef"]["optional"] is True


def test_pull_secrets_labels_and_annotations_are_added_but_what_the_pod_sets_wins():
    original = pod(labels={"team": "vision"}, imagePullSecrets=[{"name": "registry"}])
    original["metadata"]["annotations"] = {"owner": "alice"}
    rule = Rule(
        "common",
        image_pull_secrets=("registry", "mirror"),
        labels={"team": "platform", "argoml.io/injected": "true"},
        annotations={"owner": "platform", "cost-center": "42"},
    )
    injected, _ = inject(original, "ml", [rule])
    assert injected["spec"]["imagePullSecrets"] == [{"name": "registry"}, {"name": "mirror"}]
    assert injected["metadata"]["labels"] == {"team": "vision", "argoml.io/injected": "true"}
    assert injected["metadata"]["annotations"] == {"owner": "alice", "cost-center": "42"}


def test_an_env_var_the_container_already_has_is_kept_and_an_earlier_rule_wins():
    own = {"name": "WANDB_API_KEY", "value": "mine"}
    original = pod(containers=[{"name": "main", "image": "busybox", "env": [own]}])
    other = SecretEnv("WANDB_API_KEY", "other", "key")
    injected, applied = inject(original, "ml", [Rule("a", env=(WANDB,)), Rule("b", env=(other,))])
    assert injected["spec"]["containers"][0]["env"] == [own]
    assert applied == ["a", "b"]
    first_wins, _ = inject(pod(), "ml", [Rule("a", env=(WANDB,)), Rule("b", env=(other,))])
    assert first_wins["spec"]["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "wandb"


def test_a_pod_no_rule_selects_gets_no_patch():
    original = pod(labels={"app": "web"})
    assert injection_patch(original, "ml", [Rule("wandb", pod_selector=WORKFLOW_PODS, env=(WANDB,))]) == (
        [],
        [],
    )


def test_the_patch_touches_only_what_it_adds_and_escapes_keys():
    original = pod(labels={"team": "vision"}, containers=[{"name": "main", "image": "x", "env": []}])
    operations, _ = injection_patch(
        original, "ml", [Rule("r", env=(WANDB,), labels={"argoml.io/injected": "1"})]
    )
    assert operations == [
        {"op": "add", "path": "/metadata/labels/argoml.io~1injected", "value": "1"},
        {"op": "add", "path": "/spec/containers/0/env/0", "value": WANDB.manifest()},
    ]


def test_fields_of_the_wrong_type_are_left_for_the_apiserver_to_refuse():
    original = pod(containers=[{"name": "main", "image": "x", "env": "A=1"}], imagePullSecrets="registry")
    rule = Rule("r", env=(WANDB,), image_pull_secrets=("registry",))
    assert injection_patch(original, "ml", [rule]) == ([], ["r"])


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ([], "must be a label selector"),
        ({"matchLabel": {}}, "unknown field 'matchLabel'"),
        ({"matchLabels": {"bad key!": "x"}}, "'bad key!' is not a valid key"),
        ({"matchLabels": {"app": "no spaces"}}, "'no spaces' is not a valid label value"),
        ({"matchExpressions": [{"key": "a", "operator": "Has"}]}, "operator: must be one of"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "In needs a non-empty list"),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "must be empty for Exists",
        ),
        ({"matchExpressions": {"key": "a"}}, "matchExpressions must be a list"),
    ],
)
def test_a_malformed_selector_is_explained(selector, problem):
    assert any(problem in message for message in selector_problems(selector))


def test_valid_selectors_and_names_have_no_problems():
    assert selector_problems(WORKFLOW_PODS) == []
    assert namespace_pattern_problems(["team-*", "research", "ns?"]) == []
    assert label_problems({"argoml.io/team": "vision", "app": ""}, "labels") == []


def test_namespace_patterns_and_annotation_keys_are_checked():
    assert namespace_pattern_problems("team-a") == [
        "must be a list of namespace names or patterns such as team-*"
    ]
    assert len(namespace_pattern_problems(["Team_A", "ok"])) == 1
    assert label_problems({"a/b/c": "x"}, "annotations", values_are_labels=False)
    assert label_problems({"note": "any text at all"}, "annotations", values_are_labels=False) == []
