"""What kubesim's streams carry: MB/s of `kubectl exec` output and input and of `kubectl port-forward` each
way, over the WebSocket kubectl prefers and the SPDY it falls back to, and ms per Python-client exec.

    .venv/bin/python bench/kubesim_streams.py [--megabytes 100] [--execs 50]

HTTPS + RBAC simulator in this process, a stream backend running local processes
(kubesim/tests/local_backend), loopback. No target: the figures say what `make run` users get from exec,
cp and port-forward.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from kubernetes import client, config
from kubernetes.stream import stream

from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator
from kubesim.tests.local_backend import LocalBackend, running_pod

TRANSPORTS = {
    "websocket": {},
    "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false", "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"},
}


def _env(sim: Simulator, extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path), **extra}


def _sink_server() -> int:
    """Reads each connection to its end, then answers with as many bytes as it was sent."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(connection: socket.socket) -> None:
        with connection:
            total = 0
            while chunk := connection.recv(1 << 20):
                total += len(chunk)
            block = b"\0" * (1 << 20)
            while total:
                connection.sendall(block[: min(total, len(block))])
                total -= min(total, len(block))

    def accept() -> None:
        while True:
            threading.Thread(target=serve, args=(server.accept()[0],), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return int(server.getsockname()[1])


def exec_rates(sim: Simulator, size: int, extra: dict[str, str]) -> tuple[float, float]:
    started = time.perf_counter()
    out = subprocess.run(
        [str(KUBECTL), "exec", "pod", "--", "head", "-c", str(size), "/dev/zero"],
        env=_env(sim, extra), capture_output=True, check=True,
    )  # fmt: skip
    output = len(out.stdout) / (time.perf_counter() - started)
    started = time.perf_counter()
    subprocess.run(
        [str(KUBECTL), "exec", "-i", "pod", "--", "wc", "-c"],
        input=b"\0" * size, env=_env(sim, extra), capture_output=True, check=True,
    )  # fmt: skip
    return output / 1e6, size / (time.perf_counter() - started) / 1e6


def forward_rates(sim: Simulator, size: int, extra: dict[str, str]) -> tuple[float, float]:
    process = subprocess.Popen(
        [str(KUBECTL), "port-forward", "pod/pod", ":9000"],
        env=_env(sim, extra),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    found = re.search(r"127\.0\.0\.1:(\d+)", process.stdout.readline())
    assert found is not None
    try:
        with socket.create_connection(("127.0.0.1", int(found.group(1)))) as connection:
            block, started = b"\0" * (1 << 20), time.perf_counter()
            for _ in range(size // len(block)):
                connection.sendall(block)
            connection.shutdown(socket.SHUT_WR)
            first = connection.recv(1 << 20)
            upload = size / (time.perf_counter() - started)
            received, started = len(first), time.perf_counter()
            while chunk := connection.recv(1 << 20):
                received += len(chunk)
            return upload / 1e6, received / (time.perf_counter() - started) / 1e6
    finally:
        process.terminate()
        process.wait()


def exec_latency(sim: Simulator, count: int) -> float:
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(sim.kubeconfig_path)))
    started = time.perf_counter()
    for _ in range(count):
        stream(
            core.connect_get_namespaced_pod_exec, "pod", "default", command=["true"], stdout=True, stderr=True
        )
    return (time.perf_counter() - started) / count * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--execs", type=int, default=50)
    arguments = parser.parse_args()
    size = arguments.megabytes * 1024 * 1024
    with tempfile.TemporaryDirectory() as scratch, running_simulator(https=True, auth=True) as sim:
        backend = LocalBackend(Path(scratch))
        sim.streams.backend = backend
        running_pod(sim, "pod")
        backend.ports[("default", "pod", 9000)] = _sink_server()
        print(f"{arguments.megabytes} MB each way, HTTPS + RBAC, loopback")
        for name, extra in TRANSPORTS.items():
            out, into = exec_rates(sim, size, extra)
            up, down = forward_rates(sim, size, extra)
            print(f"  {name:9} exec stdout {out:6.1f} MB/s  stdin {into:6.1f} MB/s   "
                  f"port-forward up {up:6.1f} MB/s  down {down:6.1f} MB/s")  # fmt: skip
        print(f"  Python client exec of `true`: {exec_latency(sim, arguments.execs):.1f} ms each")
        backend.stop()


if __name__ == "__main__":
    main()
