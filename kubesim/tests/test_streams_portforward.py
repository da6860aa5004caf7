"""kubectl 1.37 port-forward and the Python client's portforward against an HTTPS + RBAC simulator whose
stream backend connects to local servers: a real `python -m http.server`, and an echo server for many
connections at once and 20 MB each way, over the WebSocket tunnel kubectl prefers and the SPDY it falls
back to; `svc/` resolved by kubectl to a pod; a port nothing listens on."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests
from kubernetes import client, config
from kubernetes.stream import portforward

from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator
from kubesim.tests.local_backend import LocalBackend, running_pod

PAGE = "<h1>served from the pod</h1>\n"
TRANSPORTS = {"websocket": ({}, "GET"), "spdy": ({"KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"}, "POST")}
HTTP_PORT, ECHO_PORT, CLOSED_PORT = 8000, 7, 9999


def echo_server() -> int:
    """A TCP server that sends back what each connection sends, until that connection half-closes."""
    server = socket.create_server(("127.0.0.1", 0))

    def echo(connection: socket.socket) -> None:
        with connection:
            while data := connection.recv(1 << 16):
                connection.sendall(data)

    def accept() -> None:
        while True:
            connection, _ = server.accept()
            threading.Thread(target=echo, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return int(server.getsockname()[1])


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulator]:
    site = tmp_path_factory.mktemp("site")
    (site / "index.html").write_text(PAGE)
    http = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=site, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert http.stdout is not None
    served = re.search(r"port (\d+)", http.stdout.readline())
    assert served is not None
    backend = LocalBackend(site)
    with running_simulator(https=True, auth=True) as simulator:
        simulator.streams.backend = backend
        running_pod(simulator, "web", labels={"app": "web"}, ports=[HTTP_PORT])
        backend.ports[("default", "web", HTTP_PORT)] = int(served.group(1))
        backend.ports[("default", "web", ECHO_PORT)] = echo_server()
        simulator.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "selector": {"app": "web"},
                    "ports": [{"port": 80, "targetPort": f"port-{HTTP_PORT}"}],
                },
            }
        )
        yield simulator
    http.kill()
    http.wait()


@contextmanager
def forwarding(
    sim: Simulator, target: str, *ports: int, env: dict[str, str] | None = None
) -> Iterator[dict[int, int]]:
    """`kubectl port-forward <target> :<port>...` running; yields the pod's port → local port."""
    environment = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path), **(env or {})}
    process = subprocess.Popen(
        [str(KUBECTL), "port-forward", target, *(f":{port}" for port in ports)],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    local: dict[int, int] = {}
    try:
        while len(local) < len(ports):
            line = process.stdout.readline()
            assert line, f"kubectl port-forward ended: {process.communicate()[1]}"
            if found := re.search(r"127\.0\.0\.1:(\d+) -> (\d+)", line):
                local[int(found.group(2))] = int(found.group(1))
        yield local
    finally:
        process.terminate()
        process.communicate(timeout=30)


def upgrades(sim: Simulator, method: str) -> int:
    return sim.counters.count(resource="pods/portforward", method=method, code=101)


def round_trip(port: int, payload: bytes) -> bytes:
    """Send `payload` and read the echo at the same time (neither side can hold 20 MB in its buffers)."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        received = bytearray()

        def read() -> None:
            while len(received) < len(payload) and (chunk := connection.recv(1 << 20)):
                received.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        connection.sendall(payload)
        reader.join(120)
        return bytes(received)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_page_is_served_through_the_forwarded_port(sim: Simulator, transport: str) -> None:
    env, method = TRANSPORTS[transport]
    before = upgrades(sim, method)
    with forwarding(sim, "pod/web", HTTP_PORT, env=env) as local:
        for _ in range(3):  # one forwarded connection each: requests closes them
            answer = requests.get(f"http://127.0.0.1:{local[HTTP_PORT]}/index.html", timeout=30)
            assert answer.status_code == 200
            assert answer.text == PAGE
    assert upgrades(sim, method) == before + 1  # one upgraded connection carries every forwarded one


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connections_at_once_keep_their_own_bytes(sim: Simulator, transport: str) -> None:
    with forwarding(sim, "pod/web", ECHO_PORT, env=TRANSPORTS[transport][0]) as local:
        first = socket.create_connection(("127.0.0.1", local[ECHO_PORT]))
        second = socket.create_connection(("127.0.0.1", local[ECHO_PORT]))
        with first, second:
            for turn in range(3):
                first.sendall(b"first %d\n" % turn)
                second.sendall(b"second %d\n" % turn)
                assert second.recv(100) == b"second %d\n" % turn
                assert first.recv(100) == b"first %d\n" % turn


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_twenty_megabytes_go_through_each_way(sim: Simulator, transport: str) -> None:
    payload = os.urandom(20 * 1024 * 1024)
    with forwarding(sim, "pod/web", ECHO_PORT, env=TRANSPORTS[transport][0]) as local:
        echoed = round_trip(local[ECHO_PORT], payload)
    assert len(echoed) == len(payload)
    assert hashlib.sha256(echoed).digest() == hashlib.sha256(payload).digest()


def test_a_service_is_forwarded_to_a_pod_its_selector_picks(sim: Simulator) -> None:
    """kubectl resolves svc/web itself: the Service's selector lists the pods, the named targetPort is the
    pod's container port. It reads no Endpoints, and kubesim keeps none."""
    with forwarding(sim, "svc/web", 80) as local:
        answer = requests.get(f"http://127.0.0.1:{local[HTTP_PORT]}/index.html", timeout=30)
    assert answer.text == PAGE
    assert not sim.store.exists("endpoints", "web", "default")


def test_a_port_nothing_listens_on_ends_the_forward_with_the_kubelets_error(sim: Simulator) -> None:
    environment = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    process = subprocess.Popen(
        [str(KUBECTL), "port-forward", "pod/web", f":{CLOSED_PORT}"],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    found = re.search(r"127\.0\.0\.1:(\d+)", process.stdout.readline())
    assert found is not None
    with socket.create_connection(("127.0.0.1", int(found.group(1)))) as connection:
        assert connection.recv(100) == b""
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert f"error forwarding port {CLOSED_PORT} to pod web_default, uid : " in stderr
    assert "lost connection to pod" in stderr


def test_without_create_on_pods_portforward_the_forward_is_forbidden(sim: Simulator) -> None:
    """`get` on pods/portforward is not enough: the WebSocket GET also needs `create`, and the SPDY POST
    kubectl falls back to needs it too."""
    group = "rbac.authorization.k8s.io"
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get"]},
    ]
    sim.store.create(
        {"apiVersion": f"{group}/v1", "kind": "Role", "metadata": {"name": "viewer", "namespace": "default"},
         "rules": rules}
    )  # fmt: skip
    sim.store.create(
        {"apiVersion": f"{group}/v1", "kind": "RoleBinding",
         "metadata": {"name": "viewer", "namespace": "default"},
         "roleRef": {"apiGroup": group, "kind": "Role", "name": "viewer"},
         "subjects": [{"kind": "User", "name": "viewer", "apiGroup": group}]}
    )  # fmt: skip
    environment = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    refused = subprocess.run(
        [str(KUBECTL), "--as", "viewer", "port-forward", "pod/web", f":{HTTP_PORT}"],
        env=environment, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'error: error upgrading connection: unable to upgrade connection: pods "web" is forbidden: '
        'User "viewer" cannot create resource "pods/portforward" in API group "" in the namespace "default"'
    )


# --- the Python client ------------------------------------------------------------------------------------


def python_client(sim: Simulator) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(sim.kubeconfig_path)))


def test_the_python_client_forwards_a_port_over_websocket_channels(sim: Simulator) -> None:
    """One connection per port; the WebSocket (and so each port's socket) ends once the pod's side has."""
    forward = portforward(
        python_client(sim).connect_get_namespaced_pod_portforward, "web", "default", ports="8000"
    )
    page = forward.socket(HTTP_PORT)
    page.sendall(b"GET /index.html HTTP/1.0\r\nHost: pod\r\n\r\n")
    answer = b""
    while chunk := page.recv(1 << 16):
        answer += chunk
    assert answer.startswith(b"HTTP/1.0 200 OK")
    assert answer.endswith(PAGE.encode())
    assert forward.error(HTTP_PORT) is None


def test_the_python_client_forwards_several_ports_on_one_websocket(sim: Simulator) -> None:
    forward = portforward(
        python_client(sim).connect_get_namespaced_pod_portforward,
        "web",
        "default",
        ports=f"{ECHO_PORT},{HTTP_PORT}",
    )
    echo, page = forward.socket(ECHO_PORT), forward.socket(HTTP_PORT)
    page.sendall(b"GET /index.html HTTP/1.0\r\nHost: pod\r\n\r\n")
    for turn in range(3):
        echo.sendall(b"ping %d" % turn)
        assert echo.recv(100) == b"ping %d" % turn
    answer = b""
    while not answer.endswith(PAGE.encode()):
        answer += page.recv(1 << 16)
    assert answer.startswith(b"HTTP/1.0 200 OK")
    forward.close()


def test_the_python_client_reads_a_ports_error_on_its_error_channel(sim: Simulator) -> None:
    forward = portforward(
        python_client(sim).connect_get_namespaced_pod_portforward, "web", "default", ports=str(CLOSED_PORT)
    )
    closed = forward.socket(CLOSED_PORT)
    assert closed.recv(100) == b""
    assert forward.error(CLOSED_PORT) is not None
    assert f"error forwarding port {CLOSED_PORT} to pod web_default" in str(forward.error(CLOSED_PORT))
    forward.close()
