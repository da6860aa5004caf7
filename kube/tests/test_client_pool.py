"""A controller worker's client keeps one connection per concurrent call open, instead of closing the extra
ones after a single request (the official client's default pool is only 5 per CPU), and asks the server's
connection pool directly without losing a path prefix."""

from __future__ import annotations

import http.server
import logging
import threading

from django.test.utils import override_settings
from kubernetes import client as k8s

from kube.client import KubeClient, get_client, reset_client
from kube.ratelimit import TokenBucket
from kube.resources import CONFIGMAP
from kubesim.testing import running_simulator

CONCURRENT_CALLS = 24  # 8 reconcile threads' worth of parallel calls, plus a few watches


def test_many_calls_at_once_reuse_their_connections(caplog):
    with (
        running_simulator() as sim,
        override_settings(KUBECONFIG=str(sim.kubeconfig_path), KUBE_IN_CLUSTER=False),
    ):
        reset_client()
        client = get_client()
        barrier = threading.Barrier(CONCURRENT_CALLS)

        def call() -> None:
            barrier.wait()
            client.list(CONFIGMAP, "default")

        with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"):
            threads = [threading.Thread(target=call) for _ in range(CONCURRENT_CALLS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
        reset_client()

    assert not [record for record in caplog.records if "Connection pool is full" in record.getMessage()]


def test_a_server_behind_a_path_prefix_gets_every_call_under_it():
    """The client asks the server's connection pool directly; an API server proxied under a path (a Rancher
    or Teleport URL) must still see that path in front of every call."""
    seen: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"kind": "ConfigMapList", "items": [], "metadata": {}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        configuration = k8s.Configuration(host=f"http://127.0.0.1:{server.server_port}/k8s/clusters/c-1/")
        client = KubeClient(
            k8s.ApiClient(configuration), write_limiter=TokenBucket(qps=10.0, burst=10), request_timeout=5
        )
        client.list(CONFIGMAP, "default")
    finally:
        server.shutdown()
        server.server_close()
    assert [path.split("?")[0] for path in seen] == ["/k8s/clusters/c-1/api/v1/namespaces/default/configmaps"]
