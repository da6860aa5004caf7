"""The in-cluster path: address from KUBERNETES_SERVICE_HOST/PORT, token and CA from the ServiceAccount
directory (KUBE_SERVICEACCOUNT_DIR), against a secured kubesim that issued the token."""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from kube import config as kube_config
from kube.client import get_client, reset_client
from kube.errors import ApiError
from kube.resources import NAMESPACE
from kubesim.testing import KUBECTL, running_simulator


def issue_token(simulator, namespace: str, account: str) -> str:
    """`kubectl create token`, as the kubelet's projected volume would request it."""
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(simulator.kubeconfig_path), "create", "token", account,
         "-n", namespace, "--duration=1h"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return result.stdout.strip()


def mount_service_account(directory: Path, simulator, namespace: str, token: str) -> Path:
    """The files a kubelet mounts at /var/run/secrets/kubernetes.io/serviceaccount."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(simulator.security.ca_path.read_bytes())
    (directory / "namespace").write_text(namespace)
    return directory


@pytest.fixture(scope="module")
def secured():
    with running_simulator(https=True, auth=True) as simulator:
        simulator.store.ensure_namespace("team-a")
        account = {"name": "reader", "namespace": "team-a"}
        simulator.store.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": account})
        simulator.store.create(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "reader-view"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
             "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "team-a"}]}
        )  # fmt: skip
        yield simulator


@pytest.fixture
def in_cluster(secured, settings, tmp_path, monkeypatch):
    address = urlsplit(secured.url)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", address.hostname)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(address.port))
    token = issue_token(secured, "team-a", "reader")
    mount = mount_service_account(tmp_path / "sa", secured, "team-a", token)
    settings.KUBE_IN_CLUSTER, settings.KUBECONFIG, settings.KUBE_SERVICEACCOUNT_DIR = True, "", str(mount)
    reset_client()
    yield mount
    reset_client()


def test_the_client_talks_tls_to_the_service_address_as_the_mounted_service_account(in_cluster, secured):
    assert get_client().get(NAMESPACE, "team-a")["metadata"]["name"] == "team-a"
    secured.security.gate.denials.clear()
    with pytest.raises(ApiError) as denied:
        get_client().create(
            NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "not-allowed"}}
        )
    assert denied.value.status == 403
    assert 'User "system:serviceaccount:team-a:reader" cannot create' in str(denied.value)
    [denial] = secured.security.gate.denials
    assert (denial.verb, denial.resource, denial.user.name) == (
        "create",
        "namespaces",
        "system:serviceaccount:team-a:reader",
    )


def test_the_leader_election_namespace_defaults_to_the_mounted_one(in_cluster):
    from kube.controller.conf import _own_namespace

    assert _own_namespace() == "team-a"


def test_a_missing_service_account_directory_is_an_error_naming_the_file(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    settings.KUBE_IN_CLUSTER, settings.KUBE_SERVICEACCOUNT_DIR = True, str(tmp_path / "absent")
    with pytest.raises(Exception, match="token file does not exist"):
        kube_config.new_api_client()
