"""Updates the API server refuses on built-in kinds (immutable fields), driven with the real kubectl and the
official client as a CI script would. Upstream messages are quoted from kubernetes' validation.go."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes.client.rest import ApiException

from kubesim.builtins import updates


def pod_manifest(image: str = "busybox:1.36", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "fixed"},
        "spec": {"containers": [{"name": "main", "image": image}], **spec},
    }


def test_kubectl_may_change_a_pods_image_but_nothing_else(kubectl) -> None:
    """ "pod updates may not change fields other than `spec.containers[*].image`,
    `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to
    existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was
    previously negative)" (ValidatePodUpdate)."""
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(pod_manifest()))
    kubectl(
        "apply", "-f", "-", stdin=yaml.safe_dump(pod_manifest(image="busybox:1.37", activeDeadlineSeconds=60))
    )
    image = kubectl("get", "pod", "fixed", "-o", "jsonpath={.spec.containers[0].image}").stdout
    assert image == "busybox:1.37"
    refused = kubectl(
        "apply",
        "-f",
        "-",
        stdin=yaml.safe_dump(pod_manifest(image="busybox:1.37", hostname="other")),
        check=False,
    )
    assert refused.returncode != 0
    assert (
        'The Pod "fixed" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    ) in refused.stderr
    assert "spec.hostname" in refused.stderr


def test_pod_tolerations_may_only_be_added(core, namespace: str) -> None:
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    core.create_namespaced_pod(namespace, pod_manifest(tolerations=[toleration]))
    more = [toleration, {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    core.patch_namespaced_pod("fixed", namespace, {"spec": {"tolerations": more}})
    with pytest.raises(ApiException) as error:
        core.patch_namespaced_pod(
            "fixed",
            namespace,
            {"spec": {"tolerations": [more[1]]}},
            _content_type="application/merge-patch+json",
        )
    assert error.value.status == 422
    assert json.loads(error.value.body)["details"]["causes"][0]["field"] == "spec"


def test_scheduling_gates_may_only_be_removed(core, namespace: str) -> None:
    """ "After creation, each schedulingGate can be removed in arbitrary order, but addition of a new
    scheduling gate is disallowed" (Pod Scheduling Readiness)."""
    core.create_namespaced_pod(namespace, pod_manifest(schedulingGates=[{"name": "a"}, {"name": "b"}]))
    patch = {"spec": {"schedulingGates": [{"name": "b"}]}}
    core.patch_namespaced_pod("fixed", namespace, patch, _content_type="application/merge-patch+json")
    patch = {"spec": {"schedulingGates": [{"name": "b"}, {"name": "c"}]}}
    with pytest.raises(ApiException) as error:
        core.patch_namespaced_pod("fixed", namespace, patch, _content_type="application/merge-patch+json")
    assert error.value.status == 422
    assert (
        "only deletion is allowed, but found new scheduling gate 'c'"
        in json.loads(error.value.body)["message"]
    )


def test_a_jobs_template_and_selector_are_immutable(kubectl) -> None:
    """ "spec.template: Invalid value: …: field is immutable": a running Job's pod template is fixed."""
    kubectl("create", "job", "once", "--image=busybox:1.36", "--", "true")
    refused = kubectl(
        "patch",
        "job",
        "once",
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "busybox:1.37"}]',
        check=False,
    )
    assert refused.returncode != 0
    assert 'The Job "once" is invalid: spec.template: Invalid value:' in refused.stderr
    assert "field is immutable" in refused.stderr


def test_a_deployments_selector_is_immutable(apps, namespace: str) -> None:
    labels = {"app": "web"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
    }
    apps.create_namespaced_deployment(
        namespace,
        {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": labels}, "template": template}},
    )
    with pytest.raises(ApiException) as error:
        apps.patch_namespaced_deployment(
            "web", namespace, {"spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}}}}
        )
    assert error.value.status == 422
    cause = json.loads(error.value.body)["details"]["causes"][0]
    assert cause["field"] == "spec.selector"
    assert cause["message"].endswith("field is immutable")


def test_immutable_configmaps_keep_their_data(core, namespace: str) -> None:
    """ "Once a ConfigMap is marked as immutable, it is not possible to revert this change nor to mutate the
    contents of the data or the binaryData field" (ConfigMaps, "Immutable ConfigMaps")."""
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": True}
    )
    core.patch_namespaced_config_map("frozen", namespace, {"metadata": {"labels": {"ok": "yes"}}})
    for patch, field in (({"data": {"a": "2"}}, "data"), ({"immutable": False}, "immutable")):
        with pytest.raises(ApiException) as error:
            core.patch_namespaced_config_map("frozen", namespace, patch)
        assert error.value.status == 422
        cause = json.loads(error.value.body)["details"]["causes"][0]
        assert (cause["field"], cause["message"]) == (
            field,
            "Forbidden: field is immutable when `immutable` is set",
        )


def test_a_secrets_type_is_immutable(core, namespace: str) -> None:
    core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "stringData": {"a": "1"}})
    with pytest.raises(ApiException) as error:
        core.patch_namespaced_secret("s", namespace, {"type": "kubernetes.io/tls"})
    assert error.value.status == 422
    assert json.loads(error.value.body)["details"]["causes"][0]["field"] == "type"


def test_a_services_cluster_ip_is_kept_and_may_not_change(kubectl) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    kubectl("create", "-f", "-", stdin=yaml.safe_dump(service))
    allocated = kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}").stdout
    # replacing with the manifest that has no clusterIP keeps the allocated one (patchAllocatedValues)
    kubectl("replace", "-f", "-", stdin=yaml.safe_dump(service))
    assert kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}").stdout == allocated
    moved = {**service, "spec": {**service["spec"], "clusterIP": "10.96.250.250"}}
    refused = kubectl("replace", "-f", "-", stdin=yaml.safe_dump(moved), check=False)
    assert refused.returncode != 0
    assert 'spec.clusterIPs[0]: Invalid value: ["10.96.250.250"]: may not change once set' in refused.stderr


def test_the_pod_rule_lets_only_the_listed_changes_through() -> None:
    old = {"spec": {"containers": [{"name": "a", "image": "x:1"}], "tolerations": [{"key": "k"}]}}
    allowed = {
        "spec": {
            "containers": [{"name": "a", "image": "x:2"}],
            "tolerations": [{"key": "k"}, {"key": "l"}],
            "activeDeadlineSeconds": 30,
        }
    }
    assert updates.update_causes("", "Pod", old, allowed) == []
    shorter = {"spec": {**allowed["spec"], "activeDeadlineSeconds": 10}}
    assert updates.update_causes("", "Pod", allowed, shorter) == []
    longer = {"spec": {**allowed["spec"], "activeDeadlineSeconds": 60}}
    assert [c.field for c in updates.update_causes("", "Pod", allowed, longer)] == ["spec"]
    renamed = {"spec": {"containers": [{"name": "b", "image": "x:1"}], "tolerations": [{"key": "k"}]}}
    (cause,) = updates.update_causes("", "Pod", old, renamed)
    assert cause.message.endswith("(changed: spec.containers)")
