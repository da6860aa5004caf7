"""Contract tests: RBAC privilege-escalation prevention and roleRef immutability, as a real apiserver answers.
They run against `secure_cluster` (the simulator with `https=True, auth=True`, or the cluster that
KUBESIM_CONTRACT_KUBECONFIG names). The quoted documentation is "Using RBAC Authorization: Privilege
escalation prevention and bootstrapping" and "RoleBinding and ClusterRoleBinding"."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesim.tests.conftest import SecureCluster
from kubesim.tests.test_auth import RBAC, _kubeconfig_for, _ok, bind, kubectl, sa_subject, service_account

MANAGE_ROLES = {
    "apiGroups": ["rbac.authorization.k8s.io"],
    "resources": ["roles"],
    "verbs": ["create", "update"],
}
MANAGE_BINDINGS = {
    "apiGroups": ["rbac.authorization.k8s.io"],
    "resources": ["rolebindings"],
    "verbs": ["create", "update"],
}
READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
DELETE_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}
SA_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:{ns}" "system:authenticated"]'


@pytest.fixture
def ns(secure_cluster: SecureCluster) -> Iterator[str]:
    name = f"kst-esc-{uuid.uuid4().hex[:8]}"
    _ok(
        secure_cluster.call(
            secure_cluster.admin, "POST", "/api/v1/namespaces", json={"metadata": {"name": name}}
        ),
        201,
    )
    yield name
    secure_cluster.call(secure_cluster.admin, "DELETE", f"/api/v1/namespaces/{name}")


def role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": list(rules)}


def role_binding(name: str, role_name: str, subject: dict[str, Any], kind: str = "Role") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
        "subjects": [subject],
    }


def refusal_message(ns: str, plural: str, name: str, *missing: str) -> str:
    return (
        f'{plural}.rbac.authorization.k8s.io "{name}" is forbidden: user '
        f'"system:serviceaccount:{ns}:robot" (groups={SA_GROUPS.format(ns=ns)}) is attempting to grant RBAC '
        "permissions not currently held:\n" + "\n".join(missing)
    )


def test_a_role_may_grant_only_what_its_author_holds(secure_cluster: SecureCluster, ns: str) -> None:
    """ "You can only create/update a role if at least one of the following things is true: 1. You already
    have all the permissions contained in the role, at the same scope as the object being modified [...]
    2. You are granted explicit permission to perform the escalate verb on the roles or clusterroles
    resource in the rbac.authorization.k8s.io API group." """
    robot = secure_cluster.session(service_account(secure_cluster, ns))
    bind(secure_cluster, ns, [MANAGE_ROLES, READ_PODS], sa_subject(ns))
    roles = f"{RBAC}/namespaces/{ns}/roles"
    held = secure_cluster.call(robot, "POST", roles, json=role("reader", READ_PODS))
    assert held.status_code == 201, held.text

    grabbing = secure_cluster.call(robot, "POST", roles, json=role("deleter", READ_PODS, DELETE_PODS))
    assert grabbing.status_code == 403
    body = grabbing.json()
    assert body["reason"] == "Forbidden"
    assert body["details"] == {"name": "deleter", "group": "rbac.authorization.k8s.io", "kind": "roles"}
    assert body["message"] == refusal_message(
        ns, "roles", "deleter", '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}'
    )

    widened = role("reader", READ_PODS, DELETE_PODS)
    widened["metadata"]["resourceVersion"] = _ok(held, 201)["metadata"]["resourceVersion"]
    updated = secure_cluster.call(robot, "PUT", f"{roles}/reader", json=widened)
    assert updated.status_code == 403, updated.text


def test_the_escalate_verb_lets_a_role_grant_more(secure_cluster: SecureCluster, ns: str) -> None:
    """ "You are granted explicit permission to perform the escalate verb on the roles or clusterroles
    resource in the rbac.authorization.k8s.io API group." """
    robot = secure_cluster.session(service_account(secure_cluster, ns))
    escalate = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}
    bind(secure_cluster, ns, [MANAGE_ROLES, escalate], sa_subject(ns))
    created = secure_cluster.call(
        robot, "POST", f"{RBAC}/namespaces/{ns}/roles", json=role("deleter", DELETE_PODS)
    )
    assert created.status_code == 201, created.text


def test_a_binding_may_grant_only_a_role_its_author_holds_or_may_bind(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """ "You can only create/update a role binding if you already have all the permissions contained in the
    referenced role (at the same scope as the role binding) or if you have been authorized to perform the
    bind verb on the referenced role." """
    robot = secure_cluster.session(service_account(secure_cluster, ns))
    bind(secure_cluster, ns, [MANAGE_BINDINGS, READ_PODS], sa_subject(ns))
    roles, bindings = f"{RBAC}/namespaces/{ns}/roles", f"{RBAC}/namespaces/{ns}/rolebindings"
    _ok(secure_cluster.call(secure_cluster.admin, "POST", roles, json=role("reader", READ_PODS)), 201)
    _ok(secure_cluster.call(secure_cluster.admin, "POST", roles, json=role("deleter", DELETE_PODS)), 201)
    alice = {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}

    held = secure_cluster.call(robot, "POST", bindings, json=role_binding("readers", "reader", alice))
    assert held.status_code == 201, held.text
    refused = secure_cluster.call(robot, "POST", bindings, json=role_binding("deleters", "deleter", alice))
    assert refused.status_code == 403
    assert refused.json()["message"] == refusal_message(
        ns, "rolebindings", "deleters", '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}'
    )

    may_bind = {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles"],
        "verbs": ["bind"],
        "resourceNames": ["deleter"],
    }
    bind(secure_cluster, ns, [may_bind], sa_subject(ns))
    allowed = secure_cluster.call(robot, "POST", bindings, json=role_binding("deleters", "deleter", alice))
    assert allowed.status_code == 201, allowed.text


def test_a_cluster_role_is_judged_by_the_authors_cluster_wide_permissions(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """ "[...] at the same scope as the object being modified (cluster-wide for a ClusterRole [...])": what
    a RoleBinding grants in one namespace does not count, and every missing permission is listed."""
    robot = secure_cluster.session(service_account(secure_cluster, ns))
    manage = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]}
    bind(secure_cluster, None, [manage], sa_subject(ns))
    bind(secure_cluster, ns, [READ_PODS], sa_subject(ns), cluster_role=True)
    name = f"kst-{uuid.uuid4().hex[:8]}"
    refused = secure_cluster.call(
        robot,
        "POST",
        f"{RBAC}/clusterroles",
        json=role(name, READ_PODS, {"nonResourceURLs": ["/x"], "verbs": ["get"]}),
    )
    assert refused.status_code == 403
    assert refused.json()["message"] == refusal_message(
        ns,
        "clusterroles",
        name,
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/x"], Verbs:["get"]}',
    )


def test_a_bindings_role_ref_cannot_change(secure_cluster: SecureCluster, ns: str) -> None:
    """ "After you create a binding, you cannot change the Role or ClusterRole that it refers to. If you do
    try to change a binding's roleRef, you get a validation error. If you do want to change the roleRef for
    a binding, you need to remove the binding object and create a replacement." """
    bindings = f"{RBAC}/namespaces/{ns}/rolebindings"
    subject = {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}
    _ok(
        secure_cluster.call(
            secure_cluster.admin, "POST", bindings, json=role_binding("b", "view", subject, "ClusterRole")
        ),
        201,
    )
    patch = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}
    changed = secure_cluster.call(
        secure_cluster.admin,
        "PATCH",
        f"{bindings}/b",
        json=patch,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert changed.status_code == 422
    body = changed.json()
    assert body["message"] == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: '
        "cannot change roleRef"
    )
    assert [cause["field"] for cause in body["details"]["causes"]] == ["roleRef"]
    relabelled = secure_cluster.call(
        secure_cluster.admin,
        "PATCH",
        f"{bindings}/b",
        json={"metadata": {"labels": {"team": "a"}}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert relabelled.status_code == 200, relabelled.text


def test_kubectl_apply_prints_the_escalation_refusal(
    secure_cluster: SecureCluster, ns: str, tmp_path: Path
) -> None:
    """What a CI job applying a chart's RBAC with too little RBAC of its own sees: `kubectl apply` exits
    non-zero and prints the apiserver's refusal, the missing rules included."""
    kubeconfig = _kubeconfig_for(secure_cluster, service_account(secure_cluster, ns), tmp_path)
    bind(
        secure_cluster, ns, [{**MANAGE_ROLES, "verbs": ["create", "update", "get", "patch"]}], sa_subject(ns)
    )
    manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "deleter", "namespace": ns},
        "rules": [DELETE_PODS],
    }
    role_file = tmp_path / "role.json"
    role_file.write_text(json.dumps(manifest))
    applied = kubectl(kubeconfig, "apply", "-f", str(role_file))
    assert applied.returncode != 0
    assert 'roles.rbac.authorization.k8s.io "deleter" is forbidden' in applied.stderr
    missing = '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}'
    assert f"is attempting to grant RBAC permissions not currently held:\n{missing}" in applied.stderr


def test_an_update_touching_only_owner_references_or_finalizers_is_never_an_escalation(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """The RBAC storage lets through updates that only change what the garbage collector needs
    (`IsOnlyMutatingGCFields`: owner references and finalizers), so a controller that may patch roles can
    adopt or release one it could not have written; any other change is judged by the role's rules."""
    robot = secure_cluster.session(service_account(secure_cluster, ns))
    patcher = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["patch"]}
    bind(secure_cluster, ns, [patcher], sa_subject(ns))
    roles = f"{RBAC}/namespaces/{ns}/roles"
    _ok(secure_cluster.call(secure_cluster.admin, "POST", roles, json=role("deleter", DELETE_PODS)), 201)

    def patch(body: dict[str, Any]) -> int:
        headers = {"Content-Type": "application/merge-patch+json"}
        return secure_cluster.call(robot, "PATCH", f"{roles}/deleter", json=body, headers=headers).status_code

    assert patch({"metadata": {"finalizers": ["kubesim.test/hold"]}}) == 200
    assert patch({"metadata": {"finalizers": None}}) == 200
    assert patch({"metadata": {"labels": {"team": "a"}}}) == 403


def test_binding_a_cluster_role_cluster_wide_needs_bind_at_the_cluster_scope(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """ "[...] if you have been authorized to perform the bind verb on the referenced role": for a
    ClusterRoleBinding the bind permission must hold cluster-wide; `resourceNames` limit it to the roles
    named. A binding to a role that does not exist is a 404 for whoever cannot bind freely."""
    robot = secure_cluster.session(service_account(secure_cluster, ns))
    rbac_group = "rbac.authorization.k8s.io"
    create = {"apiGroups": [rbac_group], "resources": ["clusterrolebindings"], "verbs": ["create"]}
    may_bind_view = {
        "apiGroups": [rbac_group],
        "resources": ["clusterroles"],
        "verbs": ["bind"],
        "resourceNames": ["view"],
    }
    bind(secure_cluster, None, [create, may_bind_view], sa_subject(ns))
    alice = {"kind": "User", "name": f"alice-{ns}", "apiGroup": rbac_group}
    bindings = f"{RBAC}/clusterrolebindings"
    names = [f"{ns}-{suffix}" for suffix in ("view", "edit", "missing")]
    try:
        viewers = role_binding(names[0], "view", alice, "ClusterRole")
        assert secure_cluster.call(robot, "POST", bindings, json=viewers).status_code == 201
        editors = role_binding(names[1], "edit", alice, "ClusterRole")
        refused = secure_cluster.call(robot, "POST", bindings, json=editors)
        assert refused.status_code == 403
        assert "is attempting to grant RBAC permissions not currently held" in refused.json()["message"]
        missing = role_binding(names[2], f"{ns}-absent", alice, "ClusterRole")
        absent = secure_cluster.call(robot, "POST", bindings, json=missing)
        assert absent.status_code == 404
        assert absent.json()["message"] == f'clusterroles.rbac.authorization.k8s.io "{ns}-absent" not found'
    finally:
        for name in names:
            secure_cluster.call(secure_cluster.admin, "DELETE", f"{bindings}/{name}")
