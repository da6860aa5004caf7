"""RBAC evaluation as pure functions: rule matching, subjects, bindings, aggregation, messages."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.auth import rbac
from kubesim.identity import User, service_account_user

ALICE = User("alice", ("devs", "system:authenticated"))
ROBOT = service_account_user("team", "robot", "uid-1")


def attrs(verb: str = "get", resource: str = "pods", **kwargs: Any) -> rbac.Attributes:
    return rbac.Attributes(kwargs.pop("user", ALICE), verb, resource=resource, **kwargs)


@pytest.mark.parametrize(
    ("rule", "allowed"),
    [
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, True),
        ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, True),
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}, False),
        ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["services"]}, False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]}, True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["db"]}, False),
        ({"verbs": ["get"], "resources": ["pods"]}, False),  # no apiGroups: matches no group
    ],
)
def test_a_rule_allows_a_named_get_only_when_verb_group_resource_and_name_match(
    rule: dict[str, Any], allowed: bool
) -> None:
    assert rbac.rule_allows(rule, attrs(name="web")) is allowed


def test_resource_names_never_match_a_request_without_a_name() -> None:
    rule = {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]}
    assert not rbac.rule_allows(rule, attrs("list"))
    assert rbac.rule_allows(rule, attrs("list", name="web"))


@pytest.mark.parametrize(
    ("pattern", "resource", "subresource", "matches"),
    [
        ("pods", "pods", "", True),
        ("pods", "pods", "log", False),
        ("pods/log", "pods", "log", True),
        ("pods/log", "pods", "", False),
        ("*/status", "deployments", "status", True),
        ("*/status", "deployments", "", False),
        ("*/scale", "deployments", "status", False),
        ("*", "deployments", "scale", True),
    ],
)
def test_subresources_match_only_their_own_patterns(
    pattern: str, resource: str, subresource: str, matches: bool
) -> None:
    assert rbac.resource_matches({"resources": [pattern]}, resource, subresource) is matches


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("/healthz", "/healthz", True),
        ("/healthz", "/healthz/etcd", False),
        ("/healthz/*", "/healthz/etcd", True),
        ("/api*", "/apis/apps", True),
        ("*", "/anything", True),
        ("/version", "/version/", False),
    ],
)
def test_non_resource_urls_match_exactly_or_by_trailing_star(pattern: str, path: str, matches: bool) -> None:
    rule = {"verbs": ["get"], "nonResourceURLs": [pattern]}
    assert rbac.rule_allows(rule, rbac.Attributes(ALICE, "get", resource_request=False, path=path)) is matches


def test_a_resource_rule_never_grants_a_path_and_a_path_rule_never_a_resource() -> None:
    everything = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert not rbac.rule_allows(everything, rbac.Attributes(ALICE, "get", resource_request=False, path="/x"))
    assert not rbac.rule_allows({"verbs": ["*"], "nonResourceURLs": ["*"]}, attrs())


@pytest.mark.parametrize(
    ("subject", "user", "matches"),
    [
        ({"kind": "User", "name": "alice"}, ALICE, True),
        ({"kind": "User", "name": "bob"}, ALICE, False),
        ({"kind": "Group", "name": "devs"}, ALICE, True),
        ({"kind": "Group", "name": "system:serviceaccounts:team"}, ROBOT, True),
        ({"kind": "ServiceAccount", "name": "robot", "namespace": "team"}, ROBOT, True),
        ({"kind": "ServiceAccount", "name": "robot"}, ROBOT, True),  # the binding's namespace
        ({"kind": "ServiceAccount", "name": "robot", "namespace": "other"}, ROBOT, False),
        ({"kind": "User", "name": "system:serviceaccount:team:robot"}, ROBOT, True),
    ],
)
def test_subjects_name_users_groups_and_service_accounts(
    subject: dict[str, Any], user: User, matches: bool
) -> None:
    assert rbac.subject_matches(subject, user, "team") is matches


def _binding(kind: str, name: str, role_kind: str, role: str, namespace: str = "") -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "name": "alice"}],
    }


def _policy() -> rbac.Policy:
    read = [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    write = [{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]
    nodes = [{"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]}]
    return rbac.Policy(
        cluster_roles={"reader": {"rules": read}, "nodes": {"rules": nodes}},
        cluster_role_bindings=[_binding("ClusterRoleBinding", "n", "ClusterRole", "nodes")],
        roles={("team", "writer"): {"rules": write}},
        role_bindings=[
            _binding("RoleBinding", "w", "Role", "writer", "team"),
            _binding("RoleBinding", "r", "ClusterRole", "reader", "team"),
            _binding("RoleBinding", "gone", "Role", "missing", "team"),
        ],
    )


def test_role_bindings_grant_their_role_or_cluster_role_in_their_namespace_only() -> None:
    policy = _policy()
    assert policy.allows(attrs("create", "configmaps", namespace="team"))
    assert policy.allows(attrs("get", "pods", namespace="team"))
    assert not policy.allows(attrs("get", "pods", namespace="other"))
    assert not policy.allows(attrs("get", "pods"))  # cluster scope


def test_cluster_role_bindings_grant_everywhere() -> None:
    policy = _policy()
    assert policy.allows(attrs("list", "nodes"))
    assert policy.allows(attrs("list", "nodes", namespace="anywhere"))
    assert not policy.allows(attrs("list", "nodes", user=User("bob")))


def test_a_binding_to_a_missing_role_grants_nothing() -> None:
    assert len(_policy().rules_for(ALICE, "team")) == 3


def test_forbidden_messages_are_worded_as_the_apiservers() -> None:
    robot = "system:serviceaccount:team:robot"
    error = rbac.forbidden(attrs("list", user=ROBOT, namespace="x"))
    assert (error.code, error.reason) == (403, "Forbidden")
    assert error.message == (
        f'pods is forbidden: User "{robot}" cannot list resource "pods" in API group "" in the namespace "x"'
    )
    named = rbac.forbidden(attrs("get", "deployments", user=ROBOT, api_group="apps", name="web"))
    assert named.message == (
        f'deployments.apps "web" is forbidden: User "{robot}" cannot get resource "deployments" '
        'in API group "apps" at the cluster scope'
    )
    assert named.details == {"kind": "deployments", "name": "web", "group": "apps"}
    log = rbac.forbidden(attrs("get", subresource="log", name="p", namespace="x"))
    assert 'cannot get resource "pods/log" in API group ""' in log.message
    path = rbac.forbidden(rbac.Attributes(ALICE, "get", resource_request=False, path="/metrics"))
    assert path.message == 'forbidden: User "alice" cannot get path "/metrics"'


def _cluster_role(
    name: str, labels: dict[str, str], rules: list[Any], selector: str | None = None
) -> dict[str, Any]:
    role: dict[str, Any] = {"metadata": {"name": name, "labels": labels}, "rules": rules}
    if selector:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {selector: "true"}}]}
    return role


def test_aggregation_collects_the_selected_roles_rules_in_name_order_once_each() -> None:
    a = {"verbs": ["get"], "apiGroups": [""], "resources": ["a"]}
    b = {"verbs": ["get"], "apiGroups": [""], "resources": ["b"]}
    aggregate = _cluster_role("view", {}, [{"stale": True}], selector="agg")
    roles = [
        aggregate,
        _cluster_role("z-role", {"agg": "true"}, [b, a]),
        _cluster_role("a-role", {"agg": "true"}, [a]),
        _cluster_role("other", {}, [{"verbs": ["*"]}]),
    ]
    assert rbac.aggregated_rules(aggregate, roles) == [a, b]
    assert rbac.aggregated_rules(roles[1], roles) is None


def test_rules_review_splits_resource_and_non_resource_rules_without_duplicates() -> None:
    rules = [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"], "nonResourceURLs": ["/version"]},
    ]
    assert rbac.review_rules(rules) == {
        "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}],
        "incomplete": False,
    }
