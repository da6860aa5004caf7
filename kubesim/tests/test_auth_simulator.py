"""What only the simulator can show about its security: client certificates from its CA, token expiry on the
simulated clock, bound tokens, anonymous access, the kubeconfig it writes and plain HTTP by default."""

from __future__ import annotations

import base64
import logging
import socket
import ssl
import stat
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
import yaml
from kubernetes import client, config

from kubesim.identity import User
from kubesim.server.app import client_went_away
from kubesim.simulator import Simulator

TOKEN_REQUEST = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}


def _admin(sim: Simulator) -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {sim.security.admin_token}"
    return session


def _ca(sim: Simulator) -> str | bool:
    return str(sim.security.ca_path) if sim.security.ca_path else True


def _token(sim: Simulator, namespace: str, name: str, **spec: Any) -> str:
    sim.store.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
    )
    response = requests.post(
        f"{sim.url}/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        json={**TOKEN_REQUEST, "spec": spec},
        headers={"Authorization": f"Bearer {sim.security.admin_token}"},
        verify=_ca(sim),
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return str(response.json()["status"]["token"])


def _status(sim: Simulator, token: str, path: str = "/api") -> int:
    headers = {"Authorization": f"Bearer {token}"}
    return requests.get(sim.url + path, headers=headers, verify=_ca(sim), timeout=10).status_code


def test_a_client_certificate_authenticates_its_common_name_with_its_organizations_as_groups(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """ "the common name of the subject is used as the user name for the request ... A client certificate may
    also indicate a user's group memberships using the certificate's organization fields" (X509)."""
    sim = kubesim_factory(https=True, auth=True)
    cert, key = sim.security.client_certificate("alice", ("devs", "ops"))
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = requests.post(
        f"{sim.url}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json=review,
        cert=(str(cert), str(key)),
        verify=_ca(sim),
        timeout=10,
    )
    assert response.status_code == 201, response.text
    assert response.json()["status"]["userInfo"] == {
        "username": "alice",
        "groups": ["devs", "ops", "system:authenticated"],
    }


def test_a_token_expires_on_the_simulated_clock(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True, frozen_clock=True)
    token = _token(sim, "default", "robot", expirationSeconds=600)
    assert _status(sim, token) == 200
    sim.clock.advance(599)
    assert _status(sim, token) == 200
    sim.clock.advance(1)
    assert _status(sim, token) == 401


def test_a_token_bound_to_a_pod_dies_with_the_pod(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    sim.store.create(pod)
    token = _token(
        sim, "default", "robot", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "trainer"}
    )
    assert _status(sim, token) == 200
    sim.store.delete("pods", "trainer", "default", grace_period_seconds=0)
    assert _status(sim, token) == 401


def test_a_token_from_another_simulator_is_refused(kubesim_factory: Callable[..., Simulator]) -> None:
    first, second = kubesim_factory(https=True, auth=True), kubesim_factory(https=True, auth=True)
    token = _token(first, "default", "robot")
    second.store.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}})
    assert _status(second, token) == 401


def test_anonymous_access_when_enabled_is_the_anonymous_user(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """ "requests that are not rejected by other configured authentication methods are treated as anonymous
    requests, and given a username of system:anonymous and a group of system:unauthenticated"."""
    sim = kubesim_factory(auth=True, anonymous=True)
    assert requests.get(sim.url + "/version", timeout=10).status_code == 200
    listing = requests.get(sim.url + "/api/v1/namespaces", timeout=10)
    assert listing.status_code == 403
    assert 'User "system:anonymous" cannot list resource "namespaces"' in listing.json()["message"]


def test_the_kubeconfig_carries_the_ca_and_the_admin_token_and_is_private(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    sim = kubesim_factory(https=True, auth=True)
    assert sim.kubeconfig_path is not None
    document = yaml.safe_load(sim.kubeconfig_path.read_text())
    assert document["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert "certificate-authority-data" in document["clusters"][0]["cluster"]
    assert document["users"][0]["user"] == {"token": sim.security.admin_token}
    assert stat.S_IMODE(sim.kubeconfig_path.stat().st_mode) == 0o600
    api = config.new_client_from_config(config_file=str(sim.kubeconfig_path))
    names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "kube-system" in names


def test_without_options_the_simulator_stays_plain_http_and_open(kubesim: Simulator) -> None:
    assert kubesim.url.startswith("http://")
    assert requests.get(kubesim.url + "/api/v1/namespaces", timeout=10).status_code == 200
    assert kubesim.security.gate is None


def test_https_without_auth_serves_everyone(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True)
    assert requests.get(sim.url + "/api/v1/namespaces", verify=_ca(sim), timeout=10).status_code == 200
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(sim.url + "/version", verify=True, timeout=10)


def test_discovery_lists_the_review_kinds_as_create_only(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True)
    session = _admin(sim)
    resources = session.get(sim.url + "/apis/authorization.k8s.io/v1", verify=_ca(sim), timeout=10).json()[
        "resources"
    ]
    assert {r["name"]: r["verbs"] for r in resources}["selfsubjectaccessreviews"] == ["create"]
    core = session.get(sim.url + "/api/v1", verify=_ca(sim), timeout=10).json()["resources"]
    assert {r["name"]: r["verbs"] for r in core}["serviceaccounts/token"] == ["create"]
    listing = session.get(
        sim.url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", verify=_ca(sim), timeout=10
    )
    assert listing.status_code == 405


def test_static_tokens_stand_for_their_users(kubesim_factory: Callable[..., Simulator]) -> None:
    """A static token (the apiserver's --token-auth-file) authenticates as the user it was added for."""
    sim = kubesim_factory(auth=True)
    assert sim.security.gate is not None
    sim.security.gate.add_token("s3cret", User("carol", ("auditors",)))
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = requests.post(
        f"{sim.url}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json=review,
        headers={"Authorization": "Bearer s3cret"},
        timeout=10,
    )
    assert response.json()["status"]["userInfo"] == {
        "username": "carol",
        "groups": ["auditors", "system:authenticated"],
    }


def _tls_watch(sim: Simulator, token: str) -> ssl.SSLSocket:
    """A raw TLS connection holding a watch of ConfigMaps (bookmarks on), its answer's head read."""
    kubeconfig = yaml.safe_load(sim.kubeconfig_path.read_text())
    ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    context = ssl.create_default_context(cadata=ca)
    host, port = sim.url.removeprefix("https://").split(":")
    connection = context.wrap_socket(socket.create_connection((host, int(port))), server_hostname=host)
    connection.sendall(
        b"GET /api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true HTTP/1.1\r\n"
        + f"Host: {host}\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
    )
    assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    return connection


@pytest.mark.parametrize(
    "leave",
    [
        lambda connection: connection.shutdown(socket.SHUT_RDWR),  # a client closing its watch
        lambda connection: None,  # closed at once, as a killed process's socket is
    ],
    ids=["socket-shut-down", "closed"],
)
def test_a_tls_client_that_leaves_mid_watch_is_no_error_of_the_servers(
    kubesim_factory: Callable[..., Simulator], caplog: pytest.LogCaptureFixture, leave: Any
) -> None:
    """As an API server hears it, a client that goes away is no error of its own: the simulator's next
    bookmark meets an ended TLS session (EOF without close_notify: `make run`'s worker closing its watches
    at Ctrl-C), which it logs at debug level, never as a traceback."""
    sim = kubesim_factory(https=True, auth=True, bookmark_interval=0.05)
    token = yaml.safe_load(sim.kubeconfig_path.read_text())["users"][0]["user"]["token"]
    with caplog.at_level(logging.DEBUG, logger="kubesim.server.app"):
        for _ in range(5):
            connection = _tls_watch(sim, token)
            leave(connection)
            connection.close()
        time.sleep(0.5)  # several bookmarks' time
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == [], [record.exc_info for record in errors]


def _tls_error(kind: type[ssl.SSLError], reason: str) -> ssl.SSLError:
    error = kind(1, reason)
    error.reason = reason
    return error


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        (ConnectionResetError(), True),
        (BrokenPipeError(), True),
        (_tls_error(ssl.SSLEOFError, "UNEXPECTED_EOF_WHILE_READING"), True),
        (_tls_error(ssl.SSLZeroReturnError, "ZERO_RETURN"), True),
        (_tls_error(ssl.SSLError, "TLSV1_ALERT_DECODE_ERROR"), True),  # what a client sends as it drops
        (_tls_error(ssl.SSLError, "WRONG_VERSION_NUMBER"), False),  # a TLS layer in trouble: logged
        (ValueError("a bug of ours"), False),
        (None, False),
    ],
)
def test_only_a_client_leaving_is_quiet(error: BaseException | None, gone: bool) -> None:
    assert client_went_away(error) is gone
