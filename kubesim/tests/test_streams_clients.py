"""The Python client's exec, a raw v4 channel session, and the streams' bounds and refusals seen on the wire:
a message over the size bound, an idle stream, a simulator that stops, a header block that inflates past
its bound, and the answers a request gets before any upgrade."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
import websocket as wsclient
from kubernetes import client, config
from kubernetes.stream import stream

from kubesim.server.streams import spdy
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from kubesim.tests.local_backend import LocalBackend, running_pod

EXEC = "/api/v1/namespaces/default/pods/shell/exec"


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[LocalBackend]:
    local = LocalBackend(tmp_path)
    yield local
    local.stop()


@pytest.fixture
def sim(backend: LocalBackend) -> Iterator[Simulator]:
    with running_simulator(https=True, auth=True) as simulator:
        simulator.streams.backend = backend
        running_pod(simulator, "shell")
        yield simulator


def wait_until(condition: Callable[[], object], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


def open_websocket(sim: Simulator, query: str, protocols: list[str], path: str = EXEC) -> wsclient.WebSocket:
    url = sim.url.replace("https://", "wss://") + f"{path}?{query}"
    return wsclient.create_connection(
        url,
        header=[f"Authorization: Bearer {sim.security.admin_token}"],
        subprotocols=protocols,
        sslopt={"ca_certs": str(sim.security.ca_path)},
        timeout=60,
    )


def messages(ws: wsclient.WebSocket) -> list[bytes]:
    """Every data message until the server's close frame."""
    received: list[bytes] = []
    while True:
        opcode, frame = ws.recv_data_frame(True)
        if opcode == wsclient.ABNF.OPCODE_CLOSE:
            return received
        received.append(frame.data)


# --- the Python client ----------------------------------------------------------------------------------


def test_the_python_client_execs_over_v5(sim: Simulator) -> None:
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(sim.kubeconfig_path)))
    output = stream(
        core.connect_get_namespaced_pod_exec, "shell", "default",
        command=["sh", "-c", "echo out; echo err >&2"], stdout=True, stderr=True, stdin=False, tty=False,
    )  # fmt: skip
    assert sorted(output.splitlines()) == ["err", "out"]  # two streams: no order between them
    session = stream(
        core.connect_get_namespaced_pod_exec, "shell", "default",
        command=["sh", "-c", "read line; echo got $line; exit 5"], stdout=True, stderr=True, stdin=True,
        tty=False, _preload_content=False,
    )  # fmt: skip
    assert session.subprotocol == "v5.channel.k8s.io"
    session.write_stdin("value\n")
    session.run_forever(timeout=30)
    assert session.read_stdout() == "got value\n"
    assert session.returncode == 5


def test_a_v4_session_carries_channels_and_ends_with_the_status(sim: Simulator) -> None:
    """v4.channel.k8s.io on the wire: an empty stdout message first, then output by channel, then the Status
    on channel 3 and the close frame."""
    ws = open_websocket(
        sim,
        "command=sh&command=-c&command=echo+hi%3B+echo+oops+%3E%262%3B+exit+7&stdout=1&stderr=1",
        ["v4.channel.k8s.io"],
    )
    assert ws.subprotocol == "v4.channel.k8s.io"
    received = messages(ws)
    ws.close()
    assert received[0] == b"\x01"
    output = {channel: b"".join(m[1:] for m in received if m[0] == channel) for channel in (1, 2, 3)}
    assert output[1] == b"hi\n"
    assert output[2] == b"oops\n"
    status = json.loads(output[3])
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "7"}]


# --- bounds ----------------------------------------------------------------------------------------------


def test_a_message_over_the_size_bound_closes_the_stream_and_ends_the_exec(
    sim: Simulator, backend: LocalBackend
) -> None:
    ws = open_websocket(sim, "command=sleep&command=600&stdin=1&stdout=1", ["v5.channel.k8s.io"])
    assert ws.recv() == b"\x01"
    wait_until(lambda: backend.execs, "the exec to start")
    # a masked binary frame whose header announces 33 MiB: refused before any of it is read
    assert ws.sock is not None
    ws.sock.sendall(b"\x82\xff" + struct.pack("!Q", 33 * 1024 * 1024) + b"\x00\x00\x00\x00")
    opcode, frame = ws.recv_data_frame(True)
    assert opcode == wsclient.ABNF.OPCODE_CLOSE
    assert struct.unpack("!H", frame.data[:2])[0] == 1009
    assert b"exceeds the bound of 33554432" in frame.data
    wait_until(lambda: backend.execs[-1].process.poll() is not None, "the exec to be killed")
    assert backend.execs[-1].killed


def test_an_idle_stream_is_closed_and_its_exec_killed(sim: Simulator, backend: LocalBackend) -> None:
    sim.streams.idle_timeout = 1.0
    ws = open_websocket(sim, "command=sleep&command=600&stdout=1", ["v5.channel.k8s.io"])
    assert ws.recv() == b"\x01"
    with pytest.raises((wsclient.WebSocketConnectionClosedException, ConnectionError)):
        ws.recv()  # nothing moves: the server closes the connection
    wait_until(lambda: backend.execs[-1].process.poll() is not None, "the exec to be killed")
    assert backend.execs[-1].killed


def test_stopping_the_simulator_ends_its_streams(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path)
    with running_simulator(https=True, auth=True) as simulator:
        simulator.streams.backend = backend
        running_pod(simulator, "shell")
        ws = open_websocket(simulator, "command=sleep&command=600&stdout=1", ["v5.channel.k8s.io"])
        assert ws.recv() == b"\x01"
        wait_until(lambda: backend.execs, "the exec to start")
    wait_until(lambda: backend.execs[0].process.poll() is not None, "the exec to be killed")
    assert backend.execs[0].killed


def spdy_upgrade(sim: Simulator, path: str, protocol: str) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(sim.security.ca_path))
    host, port = sim.server.address.split(":")
    connection = context.wrap_socket(
        socket.create_connection((host, int(port)), timeout=30), server_hostname=host
    )
    headers = {
        "Host": sim.server.address,
        "Authorization": f"Bearer {sim.security.admin_token}",
        "Connection": "Upgrade",
        "Upgrade": "SPDY/3.1",
        "X-Stream-Protocol-Version": protocol,
    }
    lines = [f"POST {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers.items())]
    connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += connection.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return connection


def test_a_header_block_inflating_past_its_bound_ends_the_spdy_connection(sim: Simulator) -> None:
    connection = spdy_upgrade(sim, "/api/v1/namespaces/default/pods/shell/portforward", "portforward.k8s.io")
    deflate = zlib.compressobj(zdict=spdy.HEADER_DICTIONARY)
    block = spdy.build_header_block({"streamtype": "data", "port": "7", "padding": "x" * 1_000_000})
    compressed = deflate.compress(block) + deflate.flush(zlib.Z_SYNC_FLUSH)
    connection.sendall(spdy.control_frame(spdy.SYN_STREAM, 0, struct.pack("!IIBB", 1, 0, 0, 0) + compressed))
    received = b""
    while len(received) < 16 and (chunk := connection.recv(16)):
        received += chunk
    assert received[:16] == spdy.goaway(0, spdy.GOAWAY_PROTOCOL_ERROR)
    connection.close()


def test_an_idle_spdy_connection_is_closed(sim: Simulator) -> None:
    sim.streams.idle_timeout = 1.0
    connection = spdy_upgrade(sim, "/api/v1/namespaces/default/pods/shell/portforward", "portforward.k8s.io")
    assert connection.recv(16) == b""  # nothing moved either way: the server hung up
    connection.close()


# --- refused before any upgrade -----------------------------------------------------------------------------


def test_a_request_that_does_not_upgrade_is_told_so(sim: Simulator) -> None:
    answer = requests.post(
        f"{sim.url}{EXEC}?command=true&stdout=1",
        headers={"Authorization": f"Bearer {sim.security.admin_token}"},
        verify=str(sim.security.ca_path),
        timeout=30,
    )
    assert answer.status_code == 400
    assert answer.json()["message"] == "Upgrade request required"


@pytest.mark.parametrize(
    ("query", "protocols", "message"),
    [
        (
            "command=true&stdout=1",
            ["v3.channel.k8s.io"],
            "requested protocol(s) are not supported: [v3.channel.k8s.io]; "
            "supports [v5.channel.k8s.io v4.channel.k8s.io]",
        ),
        (
            "command=true&stdout=1&container=nope",
            ["v5.channel.k8s.io"],
            "container nope is not valid for pod shell",
        ),
        ("command=true", ["v5.channel.k8s.io"], "you must specify at least 1 of stdin, stdout, stderr"),
    ],
)
def test_a_websocket_handshake_is_refused_with_the_reason(
    sim: Simulator, query: str, protocols: list[str], message: str
) -> None:
    with pytest.raises(wsclient.WebSocketBadStatusException) as refused:
        open_websocket(sim, query, protocols)
    assert refused.value.status_code == 400
    assert json.loads(refused.value.resp_body or b"")["message"] == message


def test_a_spdy_upgrade_without_a_protocol_version_is_forbidden(sim: Simulator) -> None:
    answer = requests.post(
        f"{sim.url}{EXEC}?command=true&stdout=1",
        headers={
            "Authorization": f"Bearer {sim.security.admin_token}",
            "Connection": "Upgrade",
            "Upgrade": "SPDY/3.1",
        },
        verify=str(sim.security.ca_path),
        timeout=30,
    )
    assert answer.status_code == 403
    assert answer.json()["message"] == "unable to upgrade: X-Stream-Protocol-Version is required"
