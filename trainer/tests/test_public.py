"""Trainer's public ConfigMap, which Kubeflow's SDK reads for the control plane's version: the objects as
Trainer's manifests ship them, and `install_runtimes --public-configmap` applying them against kubesim."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from argoml_site.crds import TRAINER_RESOURCES
from kube.client import get_client, reset_client
from kube.crds.install import install, wait_established
from kube.resources import CONFIGMAP, ROLE, ROLE_BINDING
from kubesim.testing import running_simulator
from trainer import public

NAME = "kubeflow-trainer-public"


def test_the_configmap_says_the_trainer_version_whose_api_we_serve():
    by_kind = {manifest["kind"]: manifest for manifest in public.manifests()}
    assert by_kind["Namespace"]["metadata"]["name"] == "kubeflow-system"
    configmap = by_kind["ConfigMap"]
    assert (configmap["metadata"]["name"], configmap["metadata"]["namespace"]) == (NAME, "kubeflow-system")
    assert configmap["data"] == {"kubeflow_trainer_version": "2.3.0"}


def test_every_authenticated_user_may_read_that_configmap_and_nothing_else():
    by_kind = {manifest["kind"]: manifest for manifest in public.manifests("trainer-system")}
    assert by_kind["Role"]["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [NAME],
            "verbs": ["get", "list", "watch"],
        }
    ]
    binding = by_kind["RoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME}
    assert binding["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}
    ]
    assert {m["metadata"].get("namespace") for m in by_kind.values() if m["kind"] != "Namespace"} == {
        "trainer-system"
    }


@pytest.fixture
def cluster(settings):
    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        yield simulator
    reset_client()


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("install_runtimes", *args, stdout=out)
    return [line for line in out.getvalue().splitlines() if not line.startswith("clustertrainingruntime/")]


@pytest.fixture
def runtimes_crds(cluster):
    client = get_client()
    install(client, TRAINER_RESOURCES)
    assert wait_established(client, [r.name for r in TRAINER_RESOURCES], timeout=10) == []


def test_install_runtimes_creates_the_public_configmap_once_and_restores_its_version(runtimes_crds):
    assert run("--public-configmap") == [
        "namespace/kubeflow-system created",
        f"configmap/{NAME} created",
        f"role/{NAME} created",
        f"rolebinding/{NAME} created",
    ]
    client = get_client()
    assert client.get(CONFIGMAP, NAME, "kubeflow-system")["data"] == {"kubeflow_trainer_version": "2.3.0"}
    assert client.get(ROLE, NAME, "kubeflow-system")["rules"][0]["resourceNames"] == [NAME]
    assert client.get(ROLE_BINDING, NAME, "kubeflow-system")["subjects"][0]["name"] == "system:authenticated"

    client.patch(CONFIGMAP, NAME, {"data": {"kubeflow_trainer_version": "0.1"}}, "kubeflow-system")
    assert run("--public-configmap") == [
        "namespace/kubeflow-system unchanged",
        f"configmap/{NAME} configured",
        f"role/{NAME} unchanged",
        f"rolebinding/{NAME} unchanged",
    ]
    assert client.get(CONFIGMAP, NAME, "kubeflow-system")["data"] == {"kubeflow_trainer_version": "2.3.0"}


def test_the_namespace_follows_the_variable_the_sdk_reads(runtimes_crds, monkeypatch):
    monkeypatch.setenv("KUBEFLOW_SYSTEM_NAMESPACE", "trainer-system")
    run("--public-configmap")
    assert get_client().get(CONFIGMAP, NAME, "trainer-system")["data"]["kubeflow_trainer_version"] == "2.3.0"
    run("--public-configmap", "--system-namespace", "elsewhere")
    assert get_client().get(CONFIGMAP, NAME, "elsewhere")


def test_without_the_flag_install_runtimes_leaves_the_configmap_alone(runtimes_crds):
    assert run() == []
    assert get_client().list(CONFIGMAP, "kubeflow-system")["items"] == []
