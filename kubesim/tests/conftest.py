"""Fixtures for the contract tests: a cluster reached only through the official client, raw HTTP and kubectl.

By default the cluster is a simulator started for the session; set KUBESIM_CONTRACT_KUBECONFIG to run the
same contract tests against another cluster (tests that need the simulator's own controls use the
`kubesim` / `kubesim_factory` fixtures of kubesim.pytest_plugin, which the root conftest loads).
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client, config

from kubesim.testing import KUBECTL, running_simulator

WIDGET_GROUP = "kubesim.test"


@dataclass
class Cluster:
    kubeconfig_path: Path
    api: client.ApiClient

    @property
    def url(self) -> str:
        return str(self.api.configuration.host)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    external = os.environ.get("KUBESIM_CONTRACT_KUBECONFIG")
    if external:
        path = Path(external)
        yield Cluster(path, config.new_client_from_config(config_file=str(path)))
        return
    with running_simulator(bookmark_interval=0.2) as simulator:
        assert simulator.kubeconfig_path is not None
        yield Cluster(
            simulator.kubeconfig_path,
            config.new_client_from_config(config_file=str(simulator.kubeconfig_path)),
        )


@pytest.fixture(scope="session")
def core(cluster: Cluster) -> client.CoreV1Api:
    return client.CoreV1Api(cluster.api)


@pytest.fixture(scope="session")
def apps(cluster: Cluster) -> client.AppsV1Api:
    return client.AppsV1Api(cluster.api)


@pytest.fixture(scope="session")
def custom(cluster: Cluster) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(cluster.api)


@pytest.fixture(scope="session")
def http(cluster: Cluster) -> Iterator[Callable[..., requests.Response]]:
    """Raw HTTP against the cluster: `http("GET", "/api/v1/...", json=...)`."""
    session = requests.Session()

    def call(method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 10)
        return session.request(method, cluster.url + path, **kwargs)

    yield call
    session.close()


@pytest.fixture
def namespace(core: client.CoreV1Api) -> Iterator[str]:
    name = f"kst-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def widget_crd(scope: str = "Namespaced", plural: str = "widgets", kind: str = "Widget") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{WIDGET_GROUP}"},
        "spec": {
            "group": WIDGET_GROUP,
            "scope": scope,
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "shortNames": [kind.lower()[:3]],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["color"],
                                    "properties": {
                                        "color": {"type": "string", "enum": ["red", "blue"]},
                                        "size": {"type": "integer", "minimum": 1, "default": 3},
                                        "parts": {
                                            "type": "array",
                                            "maxItems": 3,
                                            "items": {
                                                "type": "object",
                                                "properties": {"name": {"type": "string"}},
                                            },
                                        },
                                        "free": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                        },
                                    },
                                },
                                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                            },
                        }
                    },
                }
            ],
        },
    }


def wait_established(cluster: Cluster, plural: str) -> None:
    extensions = client.ApiextensionsV1Api(cluster.api)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        crd = extensions.read_custom_resource_definition(f"{plural}.{WIDGET_GROUP}")
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        if conditions.get("Established") == "True":
            return
        time.sleep(0.1)
    raise AssertionError(f"CRD {plural} never became Established")


@pytest.fixture(scope="session")
def widgets(cluster: Cluster) -> Iterator[str]:
    """A namespaced Widget CRD (group kubesim.test), established for the session; yields its plural."""
    extensions = client.ApiextensionsV1Api(cluster.api)
    extensions.create_custom_resource_definition(widget_crd())
    wait_established(cluster, "widgets")
    yield "widgets"
    extensions.delete_custom_resource_definition(f"widgets.{WIDGET_GROUP}")


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]},
    }


@pytest.fixture(scope="session")
def kubectl_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kubectl-home")


@pytest.fixture
def kubectl(cluster: Cluster, kubectl_home: Path, namespace: str):
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig_path),
        "HOME": str(kubectl_home),
        "KUBECACHEDIR": str(kubectl_home / "cache"),
    }

    def run(
        *args: str, stdin: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(KUBECTL), "--namespace", namespace, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    return run


@dataclass
class SecureCluster:
    """A cluster that authenticates and authorizes: `admin` is a session with the kubeconfig's credentials,
    `as_token(t)` / `anonymous()` sessions trust the cluster's CA and carry only what they are given."""

    kubeconfig_path: Path
    url: str
    ca_file: str | bool
    admin: requests.Session

    def session(self, token: str | None = None) -> requests.Session:
        session = requests.Session()
        session.verify = self.ca_file
        if token:
            session.headers["Authorization"] = f"Bearer {token}"
        return session

    def call(self, session: requests.Session, method: str, path: str, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 10)
        kwargs.setdefault(
            "verify", session.verify
        )  # a session's verify loses to REQUESTS_CA_BUNDLE otherwise
        return session.request(method, self.url + path, **kwargs)


def _secure(path: Path) -> SecureCluster:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=configuration)
    admin = requests.Session()
    admin.verify = configuration.ssl_ca_cert or True
    if configuration.cert_file:
        admin.cert = (configuration.cert_file, configuration.key_file)
    authorization = configuration.get_api_key_with_prefix("BearerToken") or configuration.api_key.get(
        "authorization"
    )
    if authorization:
        admin.headers["Authorization"] = authorization
    return SecureCluster(path, str(configuration.host), configuration.ssl_ca_cert or True, admin)


@pytest.fixture(scope="session")
def secure_cluster() -> Iterator[SecureCluster]:
    """HTTPS + authentication + RBAC: the simulator with `https=True, auth=True`, or the cluster that
    KUBESIM_CONTRACT_KUBECONFIG names (any real cluster is secured this way)."""
    external = os.environ.get("KUBESIM_CONTRACT_KUBECONFIG")
    if external:
        cluster = _secure(Path(external))
        yield cluster
        cluster.admin.close()
        return
    with running_simulator(https=True, auth=True) as simulator:
        assert simulator.kubeconfig_path is not None
        cluster = _secure(simulator.kubeconfig_path)
        yield cluster
        cluster.admin.close()
