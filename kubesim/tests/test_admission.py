"""Admission webhooks registered in the simulator, called over HTTPS like the apiserver calls them."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubesim.identity import User
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL
from kubesim.tests.webhook_server import (
    Certificates,
    WebhookServer,
    make_certificates,
    patch_response,
    running_webhook_server,
)

ALLOW: dict[str, Any] = {"allowed": True}


@pytest.fixture(scope="module")
def certificates() -> Certificates:
    return make_certificates("hooks.kst.svc", "localhost")


@pytest.fixture
def hooks(certificates: Certificates) -> Iterator[WebhookServer]:
    with running_webhook_server(certificates) as server:
        yield server


@pytest.fixture
def api(kubesim: Simulator) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(kubesim.kubeconfig_path))


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def webhook(name: str, client_config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    rules = extra.pop("rules", None) or [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "resources": ["pods"],
        }
    ]
    return {
        "name": name,
        "clientConfig": client_config,
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def by_url(hooks: WebhookServer, path: str) -> dict[str, Any]:
    return {"url": hooks.url(path), "caBundle": hooks.ca_bundle}


def register(api: client.ApiClient, kind: str, name: str, *webhooks: dict[str, Any]) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    body = {"metadata": {"name": name}, "webhooks": list(webhooks)}
    if kind == "mutating":
        admission.create_mutating_webhook_configuration(body)
    else:
        admission.create_validating_webhook_configuration(body)


def pod(name: str, image: str = "trainer:1", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }


def refusal(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as refused:
        call()
    return refused.value.status, json.loads(refused.value.body)


def test_a_validating_webhook_denial_becomes_the_apiservers_status(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer(
        "/validate",
        lambda request: {"allowed": ":latest" not in request["object"]["spec"]["containers"][0]["image"]}
        | {"status": {"code": 403, "reason": "Forbidden", "message": "images must be pinned"}},
    )
    register(api, "validating", "pinning", webhook("pinning.kst.argoml.io", by_url(hooks, "/validate")))

    code, status = refusal(
        lambda: core.create_namespaced_pod("default", pod("loose", image="trainer:latest"))
    )
    assert code == 403
    assert (
        status["message"]
        == 'admission webhook "pinning.kst.argoml.io" denied the request: images must be pinned'
    )
    assert status["reason"] == "Forbidden"
    core.create_namespaced_pod("default", pod("pinned"))

    request = hooks.requests_to("/validate")[-1]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert (request["namespace"], request["name"], request["operation"]) == ("default", "pinned", "CREATE")
    assert request["userInfo"]["username"] == "kubernetes-admin"
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["uid"]


def test_a_denial_without_a_code_is_a_400_and_kubectl_prints_the_message(
    kubesim: Simulator, api: client.ApiClient, hooks: WebhookServer, tmp_path: Path
) -> None:
    hooks.answer("/deny", lambda request: {"allowed": False, "status": {"message": "no pods today"}})
    register(api, "validating", "deny", webhook("deny.kst.argoml.io", by_url(hooks, "/deny")))
    code, status = refusal(lambda: client.CoreV1Api(api).create_namespaced_pod("default", pod("p")))
    assert code == 400
    assert status["message"] == 'admission webhook "deny.kst.argoml.io" denied the request: no pods today'
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"
    )
    result = subprocess.run(
        [str(KUBECTL), "create", "-f", str(manifest)],
        env={"KUBECONFIG": str(kubesim.kubeconfig_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode != 0
    assert 'admission webhook "deny.kst.argoml.io" denied the request: no pods today' in result.stderr


def test_mutating_webhooks_patch_the_object_before_validating_webhooks_see_it(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer(
        "/mutate",
        lambda request: patch_response([{"op": "add", "path": "/metadata/labels/injected", "value": "yes"}]),
    )
    hooks.answer("/validate", lambda request: ALLOW)
    register(api, "mutating", "inject", webhook("inject.kst.argoml.io", by_url(hooks, "/mutate")))
    register(api, "validating", "check", webhook("check.kst.argoml.io", by_url(hooks, "/validate")))

    created = core.create_namespaced_pod("default", pod("patched"))
    assert created.metadata.labels == {"injected": "yes"}
    assert core.read_namespaced_pod("patched", "default").metadata.labels["injected"] == "yes"
    assert hooks.requests_to("/validate")[-1]["object"]["metadata"]["labels"] == {"injected": "yes"}


def test_updates_carry_the_old_object_and_deletes_only_the_old_object(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer("/validate", lambda request: ALLOW)
    register(api, "validating", "audit", webhook("audit.kst.argoml.io", by_url(hooks, "/validate")))
    core.create_namespaced_pod("default", pod("p", stage="one"))
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"stage": "two"}}})
    core.delete_namespaced_pod("p", "default")
    update, delete = hooks.requests_to("/validate")[1:]
    assert update["operation"] == "UPDATE"
    assert update["oldObject"]["metadata"]["labels"] == {"stage": "one"}
    assert update["object"]["metadata"]["labels"] == {"stage": "two"}
    assert delete["operation"] == "DELETE"
    assert delete["object"] is None
    assert delete["oldObject"]["metadata"]["labels"] == {"stage": "two"}


def test_an_unreachable_webhook_fails_closed_or_is_ignored_by_failure_policy(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    nowhere = {"url": "https://127.0.0.1:9/validate", "caBundle": hooks.ca_bundle}
    register(api, "validating", "lenient", webhook("lenient.kst.argoml.io", nowhere, failurePolicy="Ignore"))
    core.create_namespaced_pod("default", pod("ignored"))
    register(api, "validating", "strict", webhook("strict.kst.argoml.io", nowhere))
    code, status = refusal(lambda: core.create_namespaced_pod("default", pod("refused")))
    assert code == 500
    assert status["reason"] == "InternalError"
    assert status["message"].startswith(
        'Internal error occurred: failed calling webhook "strict.kst.argoml.io": failed to call webhook: '
        'Post "https://127.0.0.1:9/validate?timeout=10s": '
    )


def test_a_webhook_slower_than_its_timeout_counts_as_a_failed_call(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    def slow(request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(3)
        return ALLOW

    hooks.answer("/slow", slow)
    register(
        api, "validating", "slow", webhook("slow.kst.argoml.io", by_url(hooks, "/slow"), timeoutSeconds=1)
    )
    started = time.monotonic()
    code, status = refusal(lambda: core.create_namespaced_pod("default", pod("late")))
    assert code == 500
    assert "context deadline exceeded" in status["message"]
    assert time.monotonic() - started < 2.5  # the 1 s timeout, not the webhook's 3 s


def test_the_certificate_must_chain_to_the_ca_bundle(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer("/validate", lambda request: ALLOW)
    stranger = make_certificates("elsewhere.example").ca_bundle
    untrusted = {"url": hooks.url("/validate"), "caBundle": stranger}
    register(api, "validating", "untrusted", webhook("untrusted.kst.argoml.io", untrusted))
    code, status = refusal(lambda: core.create_namespaced_pod("default", pod("p")))
    assert code == 500
    assert "CERTIFICATE_VERIFY_FAILED" in status["message"]
    assert hooks.requests_to("/validate") == []


def test_a_service_reference_goes_to_its_registered_address_and_is_verified_by_service_name(
    kubesim: Simulator, api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer("/svc", lambda request: {"allowed": False, "status": {"message": "via the service"}})
    service = {"service": {"namespace": "kst", "name": "hooks", "path": "/svc"}, "caBundle": hooks.ca_bundle}
    register(api, "validating", "svc", webhook("svc.kst.argoml.io", service))
    code, status = refusal(lambda: core.create_namespaced_pod("default", pod("p")))
    assert code == 500
    assert "has no local address" in status["message"]

    kubesim.webhooks.route_service("kst", "hooks", f"127.0.0.1:{hooks.port}")
    code, status = refusal(lambda: core.create_namespaced_pod("default", pod("p")))
    assert (code, status["message"]) == (
        400,
        'admission webhook "svc.kst.argoml.io" denied the request: via the service',
    )

    kubesim.webhooks.route_service("kst", "wrong-name", f"127.0.0.1:{hooks.port}")
    misnamed = {
        "service": {"namespace": "kst", "name": "wrong-name", "path": "/svc"},
        "caBundle": hooks.ca_bundle,
    }
    register(api, "validating", "misnamed", webhook("misnamed.kst.argoml.io", misnamed))
    code, status = refusal(lambda: core.create_namespaced_pod("default", pod("q")))
    assert code == 500
    assert "wrong-name.kst.svc" in status["message"]


def test_rules_pick_resources_operations_and_subresources(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer("/creates", lambda request: ALLOW)
    hooks.answer("/status", lambda request: ALLOW)
    creates_only = [
        {"apiGroups": [""], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["pods"]}
    ]
    status_only = [
        {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["pods/status"]}
    ]
    register(
        api,
        "validating",
        "rules",
        webhook("creates.kst.argoml.io", by_url(hooks, "/creates"), rules=creates_only),
        webhook("status.kst.argoml.io", by_url(hooks, "/status"), rules=status_only),
    )
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    core.create_namespaced_pod("default", pod("p"))
    core.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "b"}}})
    core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert [r["operation"] for r in hooks.requests_to("/creates")] == ["CREATE"]
    (status_request,) = hooks.requests_to("/status")
    assert (status_request["operation"], status_request["subResource"]) == ("UPDATE", "status")


def test_namespace_and_object_selectors_narrow_the_requests_sent(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer("/validate", lambda request: ALLOW)
    register(
        api,
        "validating",
        "selective",
        webhook(
            "selective.kst.argoml.io",
            by_url(hooks, "/validate"),
            namespaceSelector={"matchLabels": {"argoml.io/managed": "true"}},
            objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        ),
    )
    core.create_namespace({"metadata": {"name": "managed", "labels": {"argoml.io/managed": "true"}}})
    core.create_namespace({"metadata": {"name": "unmanaged"}})
    core.create_namespaced_pod("managed", pod("checked"))
    core.create_namespaced_pod("managed", pod("skipped", skip="yes"))
    core.create_namespaced_pod("unmanaged", pod("elsewhere"))
    assert [r["name"] for r in hooks.requests_to("/validate")] == ["checked"]


def test_dry_run_requests_reach_webhooks_flagged_and_store_nothing(
    api: client.ApiClient, core: client.CoreV1Api, hooks: WebhookServer
) -> None:
    hooks.answer("/validate", lambda request: ALLOW)
    register(
        api,
        "validating",
        "dry",
        webhook("dry.kst.argoml.io", by_url(hooks, "/validate"), sideEffects="NoneOnDryRun"),
    )
    core.create_namespaced_pod("default", pod("rehearsal"), dry_run="All")
    assert hooks.requests_to("/validate")[-1]["dryRun"] is True
    assert core.list_namespaced_pod("default").items == []


def test_webhook_configurations_are_validated_and_defaulted(api: client.ApiClient) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    bad = webhook("short", {"url": "http://127.0.0.1:1/x"}, sideEffects="Some", timeoutSeconds=40)
    code, status = refusal(
        lambda: admission.create_validating_webhook_configuration(
            {"metadata": {"name": "bad"}, "webhooks": [bad]}
        )
    )
    assert code == 422
    fields = {cause["field"] for cause in status["details"]["causes"]}
    assert fields == {
        "webhooks[0].name",
        "webhooks[0].sideEffects",
        "webhooks[0].timeoutSeconds",
        "webhooks[0].clientConfig.url",
    }
    good = webhook("good.kst.argoml.io", {"url": "https://127.0.0.1:1/x"})
    admission.create_validating_webhook_configuration({"metadata": {"name": "good"}, "webhooks": [good]})
    stored = admission.read_validating_webhook_configuration("good").webhooks[0]
    assert (stored.failure_policy, stored.timeout_seconds, stored.match_policy) == ("Fail", 10, "Equivalent")


def test_webhooks_receive_the_requesting_users_identity(
    kubesim_factory: Callable[..., Simulator], hooks: WebhookServer
) -> None:
    """AdmissionReview `request.userInfo`: "UserInfo is information about the requesting user"
    (k8s.io/api/admission/v1) — the authenticated caller, not a fixed one; under impersonation, the user
    impersonated (what every later stage of the apiserver sees)."""
    sim = kubesim_factory(https=True, auth=True)
    sim.security.gate.add_token("alice-token", User("alice", ("devs",), "alice-uid"))
    sim.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "alice-admin"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
                {"kind": "Group", "name": "team", "apiGroup": "rbac.authorization.k8s.io"},
            ],
        }
    )
    hooks.answer("/validate", lambda request: ALLOW)
    sim.store.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "audit"},
            "webhooks": [webhook("audit.kst.argoml.io", by_url(hooks, "/validate"))],
        }
    )
    created = requests.post(
        f"{sim.url}/api/v1/namespaces/default/pods",
        json=pod("p"),
        headers={"Authorization": "Bearer alice-token"},
        verify=str(sim.security.ca_path),
        timeout=10,
    )
    assert created.status_code == 201, created.text
    impersonating = requests.post(
        f"{sim.url}/api/v1/namespaces/default/pods",
        json=pod("q"),
        headers={
            "Authorization": "Bearer alice-token",
            "Impersonate-User": "bob",
            "Impersonate-Group": "team",
        },
        verify=str(sim.security.ca_path),
        timeout=10,
    )
    assert impersonating.status_code == 201, impersonating.text
    first, second = hooks.requests_to("/validate")
    assert first["userInfo"] == {
        "username": "alice",
        "uid": "alice-uid",
        "groups": ["devs", "system:authenticated"],
    }
    assert second["userInfo"] == {"username": "bob", "groups": ["team", "system:authenticated"]}


def test_a_scale_write_shows_webhooks_a_scale_and_their_patch_sets_the_replicas(
    api: client.ApiClient, hooks: WebhookServer
) -> None:
    """As the apiserver: `deployments/scale` is admitted as an autoscaling/v1 Scale (the resource stays the
    Deployment's), a rule on `deployments` alone is not consulted, and a mutating patch of the Scale's
    replicas is what gets stored."""
    hooks.answer(
        "/scale",
        lambda request: {"allowed": request["object"]["spec"]["replicas"] <= 4}
        | {"status": {"code": 422, "reason": "Invalid", "message": "at most 4 replicas"}},
    )
    hooks.answer("/deployments", lambda request: ALLOW)
    hooks.answer(
        "/halve",
        lambda request: patch_response(
            [{"op": "replace", "path": "/spec/replicas", "value": request["object"]["spec"]["replicas"] // 2}]
        ),
    )

    def on(resources: list[str], operations: tuple[str, ...] = ("UPDATE",)) -> list[dict[str, Any]]:
        rule = {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": list(operations)}
        return [rule | {"resources": resources}]

    register(
        api,
        "validating",
        "scaling",
        webhook("scale.kst.argoml.io", by_url(hooks, "/scale"), rules=on(["deployments/scale"])),
        webhook("deployments.kst.argoml.io", by_url(hooks, "/deployments"), rules=on(["deployments"])),
    )
    apps = client.AppsV1Api(api)
    labels = {"app": "web"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}}
    apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
        },
    )

    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    (review,) = hooks.requests_to("/scale")
    assert review["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert review["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert review["subResource"] == "scale"
    assert (review["object"]["kind"], review["object"]["spec"]["replicas"]) == ("Scale", 3)
    assert review["oldObject"]["spec"]["replicas"] == 1
    assert hooks.requests_to("/deployments") == [], "a rule on the resource alone skips its subresources"

    code, status = refusal(
        lambda: apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 5}})
    )
    assert (code, status["message"]) == (
        422,
        'admission webhook "scale.kst.argoml.io" denied the request: at most 4 replicas',
    )
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3

    register(
        api,
        "mutating",
        "halving",
        webhook("halve.kst.argoml.io", by_url(hooks, "/halve"), rules=on(["deployments/scale"])),
    )
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 2
    assert hooks.requests_to("/scale")[-1]["object"]["spec"]["replicas"] == 2
