"""Built-in kinds decoded against the Kubernetes 1.37 schemas, as the API server decodes them.

Written against the `cluster` fixture (and the real kubectl, as a CI script would drive it) so they could run
against a real cluster too (KUBESIM_CONTRACT_KUBECONFIG).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

TYPO_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: typo
spec:
  containers:
  - name: main
    imagee: busybox
    image: busybox
"""


def pod(name: str, **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox", **container}]},
    }


def test_kubectl_refuses_a_misspelt_field_of_a_built_in_kind(kubectl) -> None:
    """ "Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped
    from the object, or if any duplicate fields are present. The error returned from the server will
    contain all unknown and duplicate fields encountered." (API reference, fieldValidation; kubectl sends
    Strict by default: "--validate='strict'")."""
    result = kubectl("apply", "-f", "-", stdin=TYPO_POD, check=False)
    assert result.returncode != 0
    assert (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagee"'
    ) in result.stderr
    assert kubectl("get", "pods", "-o", "name").stdout == ""


def test_kubectl_validate_false_drops_the_unknown_field(kubectl) -> None:
    """ "Ignore: This will ignore any unknown fields that are silently dropped from the object" — kubectl
    `--validate=false` sends fieldValidation=Ignore."""
    kubectl("apply", "--validate=false", "-f", "-", stdin=TYPO_POD)
    stored = json.loads(kubectl("get", "pod", "typo", "-o", "json").stdout)
    assert "imagee" not in stored["spec"]["containers"][0]
    assert stored["spec"]["containers"][0]["image"] == "busybox"


def test_warn_drops_unknown_fields_and_says_so_in_a_warning_header(http, namespace: str) -> None:
    """ "Warn: This will send a warning via the standard warning response header for each unknown field
    that is dropped from the object, and for each duplicate field that is encountered. The request will
    still succeed if there are no other errors" (the default when the parameter is absent)."""
    response = http("POST", f"/api/v1/namespaces/{namespace}/pods", json=pod("warned", imagee="x"))
    assert response.status_code == 201
    assert response.headers["Warning"] == '299 - "unknown field \\"spec.containers[0].imagee\\""'
    assert "imagee" not in response.json()["spec"]["containers"][0]


def test_unknown_metadata_fields_are_unknown_too(http, namespace: str) -> None:
    """A manifest indented one level too deep: upstream answers `unknown field "metadata.spec"`."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep", "spec": {"a": 1}}}
    response = http(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", params={"fieldValidation": "Strict"}, json=body
    )
    assert response.status_code == 400
    assert response.json()["message"].endswith('strict decoding error: unknown field "metadata.spec"')


def test_duplicate_fields_are_refused_under_strict_and_warned_about_otherwise(http, namespace: str) -> None:
    """ "…or if any duplicate fields are present" (fieldValidation=Strict); Warn sends one warning each."""
    text = (
        '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"},'
        ' "data": {"a": "1"}, "data": {"b": "2"}}'
    )
    headers = {"Content-Type": "application/json"}
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    strict = http("POST", path, params={"fieldValidation": "Strict"}, data=text, headers=headers)
    assert strict.status_code == 400
    assert strict.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "data"'
    )
    warned = http("POST", path, data=text, headers=headers)
    assert warned.status_code == 201
    assert warned.headers["Warning"] == '299 - "duplicate field \\"data\\""'
    assert warned.json()["data"] == {"b": "2"}  # the last one wins, as in Go's decoder


@pytest.mark.parametrize("validation", ["Strict", "Warn", "Ignore"])
def test_a_value_of_the_wrong_type_is_a_bad_request_whatever_the_validation(
    http, namespace: str, validation: str
) -> None:
    """The API server cannot decode `replicas: "1"` into the Deployment struct's int32 (Go's json error)."""
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "typed"},
        "spec": {
            "replicas": "1",
            "selector": {"matchLabels": {"app": "typed"}},
            "template": {"metadata": {"labels": {"app": "typed"}}, "spec": pod("x")["spec"]},
        },
    }
    response = http(
        "POST",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        params={"fieldValidation": validation},
        json=body,
    )
    assert response.status_code == 400
    assert response.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into '
        "Go struct field DeploymentSpec.spec.replicas of type int32"
    )


def test_kubectl_reports_a_wrong_type_in_a_pod_template(kubectl) -> None:
    manifest = TYPO_POD.replace("    imagee: busybox\n", "    ports: [{containerPort: eighty}]\n")
    result = kubectl("apply", "-f", "-", stdin=manifest, check=False)
    assert result.returncode != 0
    assert (
        "json: cannot unmarshal string into Go struct field "
        "ContainerPort.spec.containers.ports.containerPort of type int32"
    ) in result.stderr


def test_patches_are_decoded_too(core, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "patched"}, "data": {"a": "1"}})
    with pytest.raises(ApiException) as error:
        core.patch_namespaced_config_map(
            "patched", namespace, {"data": {"a": 1}}, _content_type="application/merge-patch+json"
        )
    assert error.value.status == 400
    assert "json: cannot unmarshal number into Go struct field ConfigMap.data of type string" in str(
        error.value.body
    )


def test_typed_client_objects_round_trip_unchanged(core, namespace: str) -> None:
    """Everything the official client's models serialize is a known field."""
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name="typed", labels={"a": "b"}),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="main",
                    image="busybox:1",
                    env=[client.V1EnvVar(name="A", value="1")],
                    resources=client.V1ResourceRequirements(limits={"cpu": "1"}),
                    ports=[client.V1ContainerPort(container_port=80)],
                )
            ]
        ),
    )
    created = core.create_namespaced_pod(namespace, body)
    assert created.spec.containers[0].resources.limits == {"cpu": "1"}
    assert created.spec.containers[0].ports[0].container_port == 80


def test_kubectl_explain_describes_built_in_fields(kubectl) -> None:
    """`kubectl explain` reads /openapi/v3: "List the fields for supported resources. This command describes
    the fields associated with each supported API resource. Fields are identified via a simple JSONPath
    identifier: <type>.<fieldName>[.<fieldName>]" (kubectl explain --help)."""
    pod_spec = kubectl("explain", "pod.spec").stdout
    assert "FIELD: spec <PodSpec>" in pod_spec
    assert "containers\t<[]Container> -required-" in pod_spec
    strategy = kubectl("explain", "deployment.spec.strategy").stdout
    assert "GROUP:      apps" in strategy
    assert "FIELD: strategy <DeploymentStrategy>" in strategy
    assert "rollingUpdate\t<RollingUpdateDeployment>" in strategy
    ports = kubectl("explain", "jobs.spec.template.spec.containers.ports.containerPort").stdout
    assert "FIELD: containerPort <integer>" in ports


def test_kubectl_explain_describes_custom_resources_too(kubectl, widgets: str) -> None:
    explained = kubectl("explain", "widgets.spec").stdout
    assert "KIND:       Widget" in explained
    assert "color\t<string> -required-" in explained


def test_openapi_v3_documents_are_addressed_by_content_hash(http) -> None:
    """ "The paths are /openapi/v3/apis/<group>/<version>?hash=<hash>. … The hash is used to verify the
    freshness of the resource" (Kubernetes docs, "OpenAPI V3"): same content, same hash."""
    index = http("GET", "/openapi/v3").json()["paths"]
    assert index == http("GET", "/openapi/v3").json()["paths"]
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    document = http("GET", url).json()
    deployment = document["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    containers = document["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    int_or_string = document["components"]["schemas"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string == {"type": "string", "format": "int-or-string"}
    operation = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"
    }
