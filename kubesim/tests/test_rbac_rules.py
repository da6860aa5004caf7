"""RBAC evaluation as pure functions: rule matching, subjects, bindings, aggregation, messages."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.auth import escalation, rbac
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


# --- escalation prevention ------------------------------------------------------------------------------


def test_breakdown_splits_a_rule_into_one_verb_resource_and_name_each() -> None:
    rule = {
        "apiGroups": ["", "apps"],
        "resources": ["pods"],
        "verbs": ["get", "list"],
        "resourceNames": ["a"],
    }
    assert rbac.breakdown(rule) == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
        {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
    ]
    assert rbac.breakdown({"nonResourceURLs": ["/a", "/b"], "verbs": ["get"]}) == [
        {"nonResourceURLs": ["/a"], "verbs": ["get"]},
        {"nonResourceURLs": ["/b"], "verbs": ["get"]},
    ]


POD_GET = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}


@pytest.mark.parametrize(
    ("owner", "piece", "covered"),
    [
        (POD_GET, POD_GET, True),
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, POD_GET, True),
        ({**POD_GET, "verbs": ["list"]}, POD_GET, False),
        ({**POD_GET, "apiGroups": ["apps"]}, POD_GET, False),
        ({**POD_GET, "resourceNames": ["a"]}, POD_GET, False),  # a named grant does not cover all names
        (POD_GET, {**POD_GET, "resourceNames": ["a"]}, True),
        ({**POD_GET, "resourceNames": ["a", "b"]}, {**POD_GET, "resourceNames": ["b"]}, True),
        ({**POD_GET, "resources": ["*/log"]}, {**POD_GET, "resources": ["pods/log"]}, True),
        ({**POD_GET, "resources": ["*/log"]}, {**POD_GET, "resources": ["pods/exec"]}, False),
        (
            {"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]},
            {"nonResourceURLs": ["/healthz/x"], "verbs": ["get"]},
            True,
        ),
        (
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            False,
        ),
    ],
)
def test_rule_covers_as_the_apiservers_comparator(owner: rbac.Rule, piece: rbac.Rule, covered: bool) -> None:
    assert rbac.rule_covers(owner, piece) is covered


def test_uncovered_lists_only_what_no_held_rule_grants() -> None:
    held = [POD_GET, {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    wanted = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "delete"]}]
    assert rbac.uncovered(held, wanted) == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}]
    assert rbac.uncovered(held, [POD_GET]) == []


def test_compact_merges_verbs_of_rules_that_differ_only_by_verb() -> None:
    pieces = rbac.breakdown({"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "list"]})
    url = {"nonResourceURLs": ["/x"], "verbs": ["get"]}
    assert rbac.compact([*pieces, url]) == [
        url,
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
    ]


def test_compact_string_prints_the_rule_as_go_does() -> None:
    rule = {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "resourceNames": ["web"],
        "verbs": ["get", "patch"],
    }
    assert rbac.compact_string(rule) == (
        '{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["web"], Verbs:["get" "patch"]}'
    )
    assert (
        rbac.compact_string({"nonResourceURLs": ["/x"], "verbs": ["get"]})
        == '{NonResourceURLs:["/x"], Verbs:["get"]}'
    )


def test_the_escalation_message_names_the_user_its_groups_and_each_missing_rule_sorted() -> None:
    missing = [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        POD_GET,
        {**POD_GET, "verbs": ["list"]},
    ]
    assert rbac.escalation_message(ROBOT, missing) == (
        'user "system:serviceaccount:team:robot" (groups=["system:serviceaccounts" '
        '"system:serviceaccounts:team" "system:authenticated"]) is attempting to grant RBAC permissions '
        "not currently held:\n"
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
    )
    assert rbac.escalation_message(ROBOT, []) is None


def test_only_owner_references_finalizers_and_server_bookkeeping_count_as_unchanged() -> None:
    old = {"metadata": {"name": "r", "resourceVersion": "1", "labels": {"a": "b"}}, "rules": [POD_GET]}
    adopted = {
        "metadata": {
            **old["metadata"],
            "ownerReferences": [{"uid": "u"}],
            "finalizers": ["f"],
            "generation": 2,
        },
        "rules": [POD_GET],
    }
    assert escalation.only_bookkeeping_changed(adopted, old)
    relabelled = {"metadata": {**old["metadata"], "labels": {"a": "c"}}, "rules": [POD_GET]}
    assert not escalation.only_bookkeeping_changed(relabelled, old)
    assert not escalation.only_bookkeeping_changed({**old, "rules": []}, old)
