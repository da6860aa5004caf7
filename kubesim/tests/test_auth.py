"""Contract tests: authentication, RBAC authorization and the review APIs, as a real apiserver answers. They
run against `secure_cluster`: the simulator with `https=True, auth=True`, or any real cluster named by
KUBESIM_CONTRACT_KUBECONFIG (they create and delete their own namespaces, ServiceAccounts and roles). The
upstream documentation each behaviour comes from is quoted in the docstrings."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.testing import KUBECTL
from kubesim.tests.conftest import SecureCluster

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _ok(response: Any, code: int = 200) -> dict[str, Any]:
    assert response.status_code == code, response.text
    return dict(response.json())


@pytest.fixture
def ns(secure_cluster: SecureCluster) -> Iterator[str]:
    name = f"kst-auth-{uuid.uuid4().hex[:8]}"
    _ok(
        secure_cluster.call(
            secure_cluster.admin, "POST", "/api/v1/namespaces", json={"metadata": {"name": name}}
        ),
        201,
    )
    yield name
    secure_cluster.call(secure_cluster.admin, "DELETE", f"/api/v1/namespaces/{name}")


def service_account(cluster: SecureCluster, namespace: str, name: str = "robot", **spec: Any) -> str:
    """A ServiceAccount and a token for it, issued through the TokenRequest API."""
    cluster.call(
        cluster.admin,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        json={"metadata": {"name": name}},
    )
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
    return str(_ok(cluster.call(cluster.admin, "POST", path, json=request), 201)["status"]["token"])


def bind(
    cluster: SecureCluster,
    namespace: str | None,
    rules: list[dict[str, Any]],
    subject: dict[str, Any],
    *,
    cluster_role: bool = False,
) -> str:
    """A Role (or ClusterRole) with `rules`, bound to `subject` in `namespace` (None: cluster-wide)."""
    name = f"kst-{uuid.uuid4().hex[:8]}"
    role_kind = "ClusterRole" if cluster_role or namespace is None else "Role"
    scope = f"/namespaces/{namespace}" if role_kind == "Role" else ""
    role = {"metadata": {"name": name}, "rules": rules}
    _ok(cluster.call(cluster.admin, "POST", f"{RBAC}{scope}/{role_kind.lower()}s", json=role), 201)
    binding_kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    binding_scope = f"/namespaces/{namespace}" if namespace else ""
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [subject],
    }
    _ok(
        cluster.call(cluster.admin, "POST", f"{RBAC}{binding_scope}/{binding_kind.lower()}s", json=binding),
        201,
    )
    return name


def sa_subject(namespace: str, name: str = "robot") -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def whoami(cluster: SecureCluster, token: str) -> dict[str, Any]:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = cluster.call(
        cluster.session(token), "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", json=review
    )
    return dict(_ok(response, 201)["status"]["userInfo"])


# --- authentication -------------------------------------------------------------------------------------


def test_a_request_without_credentials_is_refused_with_401(secure_cluster: SecureCluster) -> None:
    """The documentation: "If the request cannot be authenticated, it is rejected with HTTP status code 401."
    (Controlling Access to the Kubernetes API). With anonymous requests disabled (--anonymous-auth=false) a
    request that carries no credentials at all cannot be authenticated either."""
    response = secure_cluster.call(secure_cluster.session(), "GET", "/api/v1/namespaces")
    assert response.status_code == 401
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


@pytest.mark.parametrize("header", ["Bearer not-a-token", "Bearer a.b.c", "Basic dXNlcjpwYXNz"])
def test_invalid_credentials_are_401_even_where_anonymous_access_would_be_allowed(
    secure_cluster: SecureCluster, header: str
) -> None:
    """The documentation: "Requests that are rejected by other configured authentication methods are not
    treated as anonymous requests" — a bad token gets 401, not the anonymous user's answer (Authenticating:
    Anonymous requests)."""
    session = secure_cluster.session()
    session.headers["Authorization"] = header
    assert secure_cluster.call(session, "GET", "/version").status_code == 401


def test_the_kubeconfig_user_is_a_cluster_admin(secure_cluster: SecureCluster) -> None:
    """The kubeconfig's user is bound to cluster-admin: "Allows super-user access to perform any action on any
    resource" (Using RBAC Authorization: User-facing roles)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}},
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    assert _ok(secure_cluster.call(secure_cluster.admin, "POST", path, json=review), 201)["status"]["allowed"]


def test_a_service_account_token_authenticates_with_the_service_account_groups(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """The documentation: "Service accounts authenticate with the username
    system:serviceaccount:(NAMESPACE):(SERVICEACCOUNT), and are assigned to the groups system:serviceaccounts
    and system:serviceaccounts:(NAMESPACE)." and "The system:authenticated group is included in the list of
    groups for all authenticated users." (Authenticating)."""
    token = service_account(secure_cluster, ns)
    info = whoami(secure_cluster, token)
    assert info["username"] == f"system:serviceaccount:{ns}:robot"
    assert set(info["groups"]) == {
        "system:serviceaccounts",
        f"system:serviceaccounts:{ns}",
        "system:authenticated",
    }


def test_token_request_answers_with_the_token_and_its_expiry(secure_cluster: SecureCluster, ns: str) -> None:
    """TokenRequest "requests a token for a given service account"; its status holds `token` and
    `expirationTimestamp` "of the returned token" (authentication.k8s.io/v1 TokenRequest)."""
    secure_cluster.call(
        secure_cluster.admin,
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        json={"metadata": {"name": "robot"}},
    )
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/robot/token"
    answer = _ok(secure_cluster.call(secure_cluster.admin, "POST", path, json=body), 201)
    assert answer["kind"] == "TokenRequest"
    assert answer["status"]["token"].count(".") == 2  # a JWT
    assert answer["status"]["expirationTimestamp"].endswith("Z")
    header = json.loads(base64.urlsafe_b64decode(answer["status"]["token"].split(".")[0] + "=="))
    assert header["alg"] == "RS256"


def test_token_request_refuses_a_lifetime_under_ten_minutes(secure_cluster: SecureCluster, ns: str) -> None:
    """The documentation: "may not specify a duration less than 10 minutes" (TokenRequest validation, 422)."""
    secure_cluster.call(
        secure_cluster.admin,
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        json={"metadata": {"name": "robot"}},
    )
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 60},
    }
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/robot/token"
    response = secure_cluster.call(secure_cluster.admin, "POST", path, json=body)
    assert response.status_code == 422
    assert "may not specify a duration less than 10 minutes" in response.json()["message"]


def test_token_request_for_a_missing_service_account_is_404(secure_cluster: SecureCluster, ns: str) -> None:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/ghost/token"
    response = secure_cluster.call(secure_cluster.admin, "POST", path, json=body)
    assert response.status_code == 404
    assert response.json()["message"] == 'serviceaccounts "ghost" not found'


def test_token_review_authenticates_issued_tokens_for_their_audiences(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """The documentation: "TokenReview attempts to authenticate a token to a known user." A token is valid
    only for the audiences it was issued for (`spec.audiences`)."""
    token = service_account(secure_cluster, ns, audiences=["argoml"])
    path = "/apis/authentication.k8s.io/v1/tokenreviews"

    def review(audiences: list[str]) -> dict[str, Any]:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences},
        }
        return dict(_ok(secure_cluster.call(secure_cluster.admin, "POST", path, json=body), 201)["status"])

    accepted = review(["argoml"])
    assert accepted["authenticated"] is True
    assert accepted["user"]["username"] == f"system:serviceaccount:{ns}:robot"
    assert accepted["audiences"] == ["argoml"]
    assert review(["someone-else"])["authenticated"] is False


def test_a_token_stops_authenticating_once_its_service_account_is_deleted(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """Bound service account tokens are invalidated "when the ServiceAccount is deleted" (Managing Service
    Accounts: bound service account tokens)."""
    token = service_account(secure_cluster, ns)
    assert secure_cluster.call(secure_cluster.session(token), "GET", "/version").status_code == 200
    secure_cluster.call(secure_cluster.admin, "DELETE", f"/api/v1/namespaces/{ns}/serviceaccounts/robot")
    assert secure_cluster.call(secure_cluster.session(token), "GET", "/version").status_code == 401


# --- authorization ---------------------------------------------------------------------------------------


def test_an_unbound_service_account_is_forbidden_in_the_apiservers_words(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """The documentation: "Permissions are purely additive (there are no "deny" rules)" — with no binding,
    nothing is allowed beyond the defaults, and the 403 names the user, verb, resource, group and namespace.
    """
    session = secure_cluster.session(service_account(secure_cluster, ns))
    user = f"system:serviceaccount:{ns}:robot"
    listing = secure_cluster.call(session, "GET", f"/api/v1/namespaces/{ns}/pods")
    assert listing.status_code == 403
    assert listing.json()["reason"] == "Forbidden"
    assert listing.json()["message"] == (
        f'pods is forbidden: User "{user}" cannot list resource "pods" '
        f'in API group "" in the namespace "{ns}"'
    )
    named = secure_cluster.call(session, "GET", f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    assert named.json()["message"] == (
        f'deployments.apps "web" is forbidden: User "{user}" cannot get resource "deployments" '
        f'in API group "apps" in the namespace "{ns}"'
    )
    assert named.json()["details"] == {"name": "web", "group": "apps", "kind": "deployments"}
    nodes = secure_cluster.call(session, "GET", "/api/v1/nodes")
    assert nodes.json()["message"] == (
        f'nodes is forbidden: User "{user}" cannot list resource "nodes" in API group "" at the cluster scope'
    )
    path = secure_cluster.call(session, "GET", "/metrics")
    assert path.status_code == 403
    assert path.json()["message"] == f'forbidden: User "{user}" cannot get path "/metrics"'


def test_discovery_and_health_are_open_to_every_authenticated_user(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """system:discovery "Allows read-only access to API discovery endpoints needed to discover and negotiate
    an API level" and system:public-info-viewer reads /healthz and /version (Default roles and bindings)."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    for path in ("/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/healthz", "/openapi/v3"):
        assert secure_cluster.call(session, "GET", path).status_code == 200, path


def test_a_role_binding_grants_only_in_its_namespace(secure_cluster: SecureCluster, ns: str) -> None:
    """The documentation: "A Role always sets permissions within a particular namespace" and a RoleBinding
    "grants the permissions defined in a role to a user or set of users" in that namespace (Using RBAC
    Authorization)."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    bind(
        secure_cluster,
        ns,
        [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
        sa_subject(ns),
    )
    assert secure_cluster.call(session, "GET", f"/api/v1/namespaces/{ns}/configmaps").status_code == 200
    assert secure_cluster.call(session, "GET", "/api/v1/namespaces/default/configmaps").status_code == 403
    assert secure_cluster.call(session, "GET", "/api/v1/configmaps").status_code == 403


def test_a_role_binding_may_grant_a_cluster_role_in_its_namespace(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """The documentation: "A RoleBinding can reference a ClusterRole and bind that ClusterRole to the
    namespace of the RoleBinding." — here the built-in `view` role."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    binding = {
        "metadata": {"name": "viewers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [sa_subject(ns)],
    }
    _ok(
        secure_cluster.call(
            secure_cluster.admin, "POST", f"{RBAC}/namespaces/{ns}/rolebindings", json=binding
        ),
        201,
    )
    assert secure_cluster.call(session, "GET", f"/api/v1/namespaces/{ns}/pods").status_code == 200
    assert (
        secure_cluster.call(session, "GET", f"/apis/apps/v1/namespaces/{ns}/deployments").status_code == 200
    )
    assert secure_cluster.call(session, "GET", f"/api/v1/namespaces/{ns}/secrets").status_code == 403
    created = secure_cluster.call(
        session, "POST", f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "x"}}
    )
    assert created.status_code == 403


def test_list_watch_and_get_are_separate_verbs(secure_cluster: SecureCluster, ns: str) -> None:
    """Request verbs: GET on a collection is `list`, with `?watch=true` it is `watch`, GET on one object is
    `get` (Authorization: Determine the Request Verb)."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    bind(
        secure_cluster,
        ns,
        [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
        sa_subject(ns),
    )
    base = f"/api/v1/namespaces/{ns}/configmaps"
    assert secure_cluster.call(session, "GET", base).status_code == 200
    watch = secure_cluster.call(session, "GET", base + "?watch=true&timeoutSeconds=1")
    assert watch.status_code == 403
    assert 'cannot watch resource "configmaps"' in watch.json()["message"]
    get = secure_cluster.call(session, "GET", base + "/kube-root-ca.crt")
    assert 'cannot get resource "configmaps"' in get.json()["message"]


def test_resource_names_restrict_get_and_need_a_name_selector_on_list(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """The documentation: "If you restrict list or watch by resourceName, clients must include a metadata.name
    field selector in their list or watch request that matches the specified resourceName in order to be
    authorized." (Using RBAC Authorization)"""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    for name in ("mine", "theirs"):
        secure_cluster.call(
            secure_cluster.admin,
            "POST",
            f"/api/v1/namespaces/{ns}/configmaps",
            json={"metadata": {"name": name}},
        )
    rule = {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": ["mine"],
        "verbs": ["get", "list"],
    }
    bind(secure_cluster, ns, [rule], sa_subject(ns))
    base = f"/api/v1/namespaces/{ns}/configmaps"
    assert secure_cluster.call(session, "GET", f"{base}/mine").status_code == 200
    assert secure_cluster.call(session, "GET", f"{base}/theirs").status_code == 403
    assert secure_cluster.call(session, "GET", base).status_code == 403
    selected = secure_cluster.call(session, "GET", f"{base}?fieldSelector=metadata.name%3Dmine")
    assert [i["metadata"]["name"] for i in _ok(selected)["items"]] == ["mine"]


def test_subresources_need_their_own_rules(secure_cluster: SecureCluster, ns: str) -> None:
    """The documentation: "To represent this in an RBAC role, use a slash (/) to delimit the resource and
    subresource"; a rule for `*/status` matches the status of every resource."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    _ok(
        secure_cluster.call(
            secure_cluster.admin,
            "POST",
            f"/api/v1/namespaces/{ns}/services",
            json={"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}},
        ),
        201,
    )
    bind(
        secure_cluster, ns, [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}], sa_subject(ns)
    )
    base = f"/api/v1/namespaces/{ns}/services/web"
    assert secure_cluster.call(session, "GET", base).status_code == 200
    status = secure_cluster.call(session, "GET", base + "/status")
    assert status.status_code == 403
    assert 'cannot get resource "services/status"' in status.json()["message"]
    bind(
        secure_cluster,
        ns,
        [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}],
        sa_subject(ns),
    )
    assert secure_cluster.call(session, "GET", base + "/status").status_code == 200


def test_deletecollection_is_its_own_verb(secure_cluster: SecureCluster, ns: str) -> None:
    """DELETE on a collection is `deletecollection`, not `delete`."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    bind(
        secure_cluster,
        ns,
        [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"]}],
        sa_subject(ns),
    )
    response = secure_cluster.call(session, "DELETE", f"/api/v1/namespaces/{ns}/configmaps")
    assert response.status_code == 403
    assert 'cannot deletecollection resource "configmaps"' in response.json()["message"]


def test_cluster_role_bindings_grant_everywhere_and_non_resource_urls(
    secure_cluster: SecureCluster, ns: str
) -> None:
    """A ClusterRoleBinding grants cluster-wide; `nonResourceURLs` rules (with a trailing `*` as a prefix)
    govern paths that are not resources."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    rules = [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]},
        {"nonResourceURLs": ["/metrics*"], "verbs": ["get"]},
    ]
    name = bind(secure_cluster, None, rules, sa_subject(ns))
    try:
        assert secure_cluster.call(session, "GET", "/api/v1/namespaces").status_code == 200
        assert secure_cluster.call(session, "GET", "/metrics").status_code != 403
    finally:
        secure_cluster.call(secure_cluster.admin, "DELETE", f"{RBAC}/clusterrolebindings/{name}")
        secure_cluster.call(secure_cluster.admin, "DELETE", f"{RBAC}/clusterroles/{name}")


def test_aggregated_cluster_roles_follow_the_roles_they_select(secure_cluster: SecureCluster) -> None:
    """The documentation: "A controller, running as part of the cluster control plane, watches for ClusterRole
    objects with an aggregationRule set" and fills in their rules; "The control plane overwrites any values
    that you manually specify in the rules field of an aggregate ClusterRole." Labelling a ClusterRole
    `rbac.authorization.k8s.io/aggregate-to-view: "true"` adds its rules to `view`, `edit` and `admin`."""
    name = f"kst-widgets-{uuid.uuid4().hex[:6]}"
    rule = {"apiGroups": ["kubesim.test"], "resources": ["gadgets"], "verbs": ["get", "list", "watch"]}
    role = {
        "metadata": {"name": name, "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [rule],
    }
    _ok(secure_cluster.call(secure_cluster.admin, "POST", f"{RBAC}/clusterroles", json=role), 201)

    def rules_of(role_name: str) -> list[dict[str, Any]]:
        return list(
            _ok(secure_cluster.call(secure_cluster.admin, "GET", f"{RBAC}/clusterroles/{role_name}")).get(
                "rules"
            )
            or []
        )

    try:
        for aggregate in ("view", "edit", "admin"):
            assert _eventually(lambda a=aggregate: rule in rules_of(a)), aggregate
    finally:
        secure_cluster.call(secure_cluster.admin, "DELETE", f"{RBAC}/clusterroles/{name}")
    assert _eventually(lambda: rule not in rules_of("view"))


def _eventually(condition: Any, seconds: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


def test_subject_access_review_answers_for_another_user(secure_cluster: SecureCluster, ns: str) -> None:
    """SubjectAccessReview "checks whether or not a user or group can perform an action"."""
    bind(
        secure_cluster,
        ns,
        [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        {"kind": "User", "name": "alice"},
    )
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

    def allowed(user: str, verb: str) -> bool:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "resourceAttributes": {"namespace": ns, "verb": verb, "resource": "pods"}},
        }
        return bool(
            _ok(secure_cluster.call(secure_cluster.admin, "POST", path, json=body), 201)["status"]["allowed"]
        )

    assert allowed("alice", "get")
    assert not allowed("alice", "delete")
    assert not allowed("bob", "get")


def test_self_subject_rules_review_lists_what_a_user_may_do(secure_cluster: SecureCluster, ns: str) -> None:
    """SelfSubjectRulesReview "enumerates the set of actions the current user can perform within a namespace"
    (what `kubectl auth can-i --list` prints)."""
    session = secure_cluster.session(service_account(secure_cluster, ns))
    rule = {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]}
    bind(secure_cluster, ns, [rule], sa_subject(ns))
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": ns},
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
    status = _ok(secure_cluster.call(session, "POST", path, json=body), 201)["status"]
    assert {"verbs": ["create", "get"], "apiGroups": ["batch"], "resources": ["jobs"]} in status[
        "resourceRules"
    ]
    assert any("/version" in r["nonResourceURLs"] for r in status["nonResourceRules"])
    assert status["incomplete"] is False


# --- kubectl -------------------------------------------------------------------------------------------


def _kubeconfig_for(cluster: SecureCluster, token: str, directory: Path) -> Path:
    document = yaml.safe_load(cluster.kubeconfig_path.read_text())
    current = next(c for c in document["contexts"] if c["name"] == document["current-context"])
    user_name = current["context"]["user"]
    for user in document["users"]:
        if user["name"] == user_name:
            user["user"] = {"token": token}
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        check=False,
    )


def test_kubectl_auth_can_i_asks_the_authorization_layer(
    secure_cluster: SecureCluster, ns: str, tmp_path: Path
) -> None:
    """The documentation: "kubectl provides the auth can-i subcommand for quickly querying the API
    authorization layer"; it prints yes or no and exits 0 or 1 (Checking API Access)."""
    kubeconfig = _kubeconfig_for(secure_cluster, service_account(secure_cluster, ns), tmp_path)
    bind(
        secure_cluster,
        ns,
        [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}],
        sa_subject(ns),
    )
    allowed = kubectl(kubeconfig, "auth", "can-i", "list", "pods", "-n", ns)
    assert (allowed.returncode, allowed.stdout.strip()) == (0, "yes"), allowed.stderr
    denied = kubectl(kubeconfig, "auth", "can-i", "delete", "pods", "-n", ns)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no"), denied.stderr
    logs = kubectl(kubeconfig, "auth", "can-i", "get", "pods", "--subresource=log", "-n", ns)
    assert logs.stdout.strip() == "yes", logs.stderr
    listing = kubectl(kubeconfig, "auth", "can-i", "--list", "-n", ns)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert any(line.split()[0] == "pods/log" and line.split()[-2:] == ["[get", "list]"] for line in lines[1:])
    forbidden = kubectl(kubeconfig, "get", "secrets", "-n", ns)
    assert forbidden.returncode == 1
    assert f'User "system:serviceaccount:{ns}:robot" cannot list resource "secrets"' in forbidden.stderr


def test_kubectl_impersonation_needs_the_impersonate_verb(
    secure_cluster: SecureCluster, ns: str, tmp_path: Path
) -> None:
    """The documentation: "A user can act as another user through impersonation headers" if allowed the
    `impersonate` verb on `users`, `groups` or `serviceaccounts` (User impersonation)."""
    as_robot = kubectl(
        secure_cluster.kubeconfig_path,
        "auth",
        "can-i",
        "list",
        "pods",
        "-n",
        ns,
        "--as",
        f"system:serviceaccount:{ns}:robot",
    )
    assert as_robot.stdout.strip() == "no", as_robot.stderr
    kubeconfig = _kubeconfig_for(secure_cluster, service_account(secure_cluster, ns), tmp_path)
    refused = kubectl(kubeconfig, "get", "pods", "-n", ns, "--as", "alice")
    assert 'cannot impersonate resource "users" in API group "" at the cluster scope' in refused.stderr


def test_every_namespace_gets_a_default_service_account(secure_cluster: SecureCluster, ns: str) -> None:
    """ "Kubernetes automatically creates a ServiceAccount object named default for every namespace in your
    cluster." (Service Accounts: Default service accounts); `kubectl create token default` works at once."""
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/default"
    assert _eventually(lambda: secure_cluster.call(secure_cluster.admin, "GET", path).status_code == 200)
    secure_cluster.call(secure_cluster.admin, "DELETE", path)
    assert _eventually(lambda: secure_cluster.call(secure_cluster.admin, "GET", path).status_code == 200)


def test_every_namespace_is_labelled_with_its_name(secure_cluster: SecureCluster, ns: str) -> None:
    """ "The Kubernetes control plane sets an immutable label kubernetes.io/metadata.name on all namespaces.
    The value of the label is the namespace name." (Namespaces: Automatic labelling)."""
    namespace = _ok(secure_cluster.call(secure_cluster.admin, "GET", f"/api/v1/namespaces/{ns}"))
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == ns
    patch = {"metadata": {"labels": {"kubernetes.io/metadata.name": "other", "team": "a"}}}
    patched = secure_cluster.call(
        secure_cluster.admin,
        "PATCH",
        f"/api/v1/namespaces/{ns}",
        json=patch,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert _ok(patched)["metadata"]["labels"] == {"kubernetes.io/metadata.name": ns, "team": "a"}


def _eventually(check: Any, timeout: float = 10.0) -> Any:
    """The token controller works asynchronously, in a cluster as here: poll until `check()` is truthy."""
    deadline = time.monotonic() + timeout
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


LEGACY_TOKEN_SECRET = """
apiVersion: v1
kind: Secret
metadata:
  name: bot-token
  annotations: {kubernetes.io/service-account.name: bot}
type: kubernetes.io/service-account-token
"""


def test_kubectl_a_legacy_token_secret_is_filled_and_its_token_authenticates(
    secure_cluster: SecureCluster, ns: str, tmp_path: Path
) -> None:
    """The documentation: "To create a non-expiring, persisted API token for a ServiceAccount, create a
    Secret of type kubernetes.io/service-account-token with an annotation referencing the ServiceAccount.
    The control plane then generates a long-lived token and updates that Secret with that generated token
    data" (Manually create a long-lived API token for a ServiceAccount); the token works until the Secret
    is deleted, and the Secret goes with its ServiceAccount."""
    admin = secure_cluster.kubeconfig_path
    assert kubectl(admin, "create", "serviceaccount", "bot", "-n", ns).returncode == 0
    applied = kubectl(admin, "apply", "-n", ns, "-f", "-", stdin=LEGACY_TOKEN_SECRET)
    assert applied.returncode == 0, applied.stderr

    def data() -> dict[str, str]:
        shown = kubectl(admin, "get", "secret", "bot-token", "-n", ns, "-o", "json")
        return dict(json.loads(shown.stdout).get("data") or {}) if shown.returncode == 0 else {}

    filled = _eventually(lambda: (found := data()).get("token") and found)
    assert filled, "the token controller filled nothing"
    assert {"token", "ca.crt", "namespace"} <= filled.keys()
    assert base64.b64decode(filled["namespace"]).decode() == ns
    token = base64.b64decode(filled["token"]).decode()
    account = json.loads(kubectl(admin, "get", "serviceaccount", "bot", "-n", ns, "-o", "json").stdout)
    annotations = json.loads(kubectl(admin, "get", "secret", "bot-token", "-n", ns, "-o", "json").stdout)[
        "metadata"
    ]["annotations"]
    assert annotations["kubernetes.io/service-account.uid"] == account["metadata"]["uid"]
    as_bot = _kubeconfig_for(secure_cluster, token, tmp_path)
    who = kubectl(as_bot, "auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    assert json.loads(who.stdout)["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:bot"
    assert kubectl(admin, "delete", "secret", "bot-token", "-n", ns).returncode == 0
    refused = kubectl(as_bot, "auth", "whoami")
    assert refused.returncode == 1
    assert "Unauthorized" in refused.stderr
    kubectl(admin, "apply", "-n", ns, "-f", "-", stdin=LEGACY_TOKEN_SECRET)
    assert _eventually(lambda: data().get("token"))
    assert kubectl(admin, "delete", "serviceaccount", "bot", "-n", ns).returncode == 0
    assert _eventually(lambda: kubectl(admin, "get", "secret", "bot-token", "-n", ns).returncode == 1)
