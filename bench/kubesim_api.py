"""kubesim over loopback: requests/s for create/get/list/watch with 10k stored objects, watch events/s.

    .venv/bin/python bench/kubesim_api.py [--objects 10000] [--threads 2]

Starts `python -m kubesim` as its own process (so client and server do not share a GIL) and drives it with
keep-alive HTTP connections. Also checks that a request does not get slower as history grows: GET latency
with 1k objects, with 10k objects, and after 10k more updates. Targets: >= 500 simple requests/s,
>= 5,000 watch events/s (2 cores).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

NAMESPACE = "bench"


class Connection:
    """One keep-alive HTTP/1.1 connection with JSON helpers."""

    def __init__(self, host: str, port: int) -> None:
        self._http = http.client.HTTPConnection(host, port, timeout=60)

    def call(
        self, method: str, path: str, body: object = None, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if payload is not None else {}
        self._http.request(method, path, body=payload, headers=headers)
        response = self._http.getresponse()
        return response.status, response.read()


def start_simulator(event_log_size: int) -> tuple[subprocess.Popen[str], str, int]:
    kubeconfig = Path(tempfile.mkdtemp(prefix="kubesim-bench-")) / "kubeconfig"
    command = [
        sys.executable,
        "-m",
        "kubesim",
        "--port",
        "0",
        "--kubeconfig",
        str(kubeconfig),
        "--event-log-size",
        str(event_log_size),
        # The apiserver alone: the simulated kubelet and Argo would add their own writes to the figures.
        "--no-kubelet",
        "--no-argo",
        "--insecure",  # plain HTTP: the figures are the apiserver's, not TLS's
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1]
    )
    line = process.stdout.readline() if process.stdout else ""
    url = line.strip().rsplit(" ", 1)[-1]
    host, port = url.removeprefix("http://").split(":")
    return process, host, int(port)


def run_parallel(
    threads: int, total: int, host: str, port: int, work: Callable[[Connection, int], None]
) -> float:
    """Run `work(connection, index)` for index in range(total) over `threads` connections; returns ops/s."""

    def worker(offset: int) -> None:
        connection = Connection(host, port)
        for index in range(offset, total, threads):
            work(connection, index)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return total / (time.perf_counter() - started)


def expect(status: int, wanted: int, what: str) -> None:
    if status != wanted:
        raise SystemExit(f"{what}: expected HTTP {wanted}, got {status}")


def get_latency_ms(host: str, port: int, names: int, samples: int = 1000) -> float:
    connection = Connection(host, port)
    started = time.perf_counter()
    for _ in range(samples):
        status, _ = connection.call(
            "GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/cm-{random.randrange(names)}"
        )
        expect(status, 200, "get")
    return (time.perf_counter() - started) / samples * 1000


def watch_events(host: str, port: int, resource_version: str, wanted: int) -> float:
    """Read `wanted` events of a watch that replays from `resource_version`; returns events/s."""
    connection = http.client.HTTPConnection(host, port, timeout=60)
    started = time.perf_counter()
    connection.request(
        "GET",
        f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&resourceVersion={resource_version}&timeoutSeconds=60",
    )
    response = connection.getresponse()
    seen = 0
    while seen < wanted:
        line = response.readline()
        if not line:
            break
        seen += 1
    elapsed = time.perf_counter() - started
    connection.close()
    return seen / elapsed


def live_fanout(host: str, port: int, watchers: int, writes: int) -> float:
    """`watchers` open watches while `writes` patches happen; returns delivered events/s across watchers."""
    connection = Connection(host, port)
    _, body = connection.call("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?limit=1")
    start_rv = json.loads(body)["metadata"]["resourceVersion"]
    delivered = [0] * watchers
    ready = threading.Barrier(watchers + 1)

    def watch(slot: int) -> None:
        stream = http.client.HTTPConnection(host, port, timeout=60)
        stream.request(
            "GET",
            f"/api/v1/namespaces/{NAMESPACE}/configmaps?watch=1&resourceVersion={start_rv}&timeoutSeconds=60",
        )
        response = stream.getresponse()
        ready.wait()
        while delivered[slot] < writes and response.readline():
            delivered[slot] += 1
        stream.close()

    threads = [threading.Thread(target=watch, args=(n,)) for n in range(watchers)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for index in range(writes):
        status, _ = connection.call(
            "PATCH",
            f"/api/v1/namespaces/{NAMESPACE}/configmaps/cm-{index}",
            {"data": {"fanout": str(index)}},
            "application/merge-patch+json",
        )
        expect(status, 200, "patch")
    for thread in threads:
        thread.join()
    return sum(delivered) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=2)
    arguments = parser.parse_args()
    objects, threads = arguments.objects, arguments.threads
    process, host, port = start_simulator(event_log_size=objects * 3)
    try:
        setup = Connection(host, port)
        expect(
            setup.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})[0], 201, "namespace"
        )
        _, body = setup.call("GET", "/api/v1/namespaces/default/configmaps")
        before_rv = json.loads(body)["metadata"]["resourceVersion"]

        def create(connection: Connection, index: int) -> None:
            body = {
                "metadata": {"name": f"cm-{index}", "labels": {"shard": str(index % 100)}},
                "data": {"value": str(index)},
            }
            expect(
                connection.call("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", body)[0], 201, "create"
            )

        first_thousand = min(1000, objects)
        create_rate = run_parallel(threads, first_thousand, host, port, create)
        latency_1k = get_latency_ms(host, port, first_thousand)
        run_parallel(
            threads, objects - first_thousand, host, port, lambda c, i: create(c, i + first_thousand)
        )
        latency_10k = get_latency_ms(host, port, objects)

        def get(connection: Connection, _index: int) -> None:
            expect(
                connection.call(
                    "GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/cm-{random.randrange(objects)}"
                )[0],
                200,
                "get",
            )

        def list_page(connection: Connection, _index: int) -> None:
            expect(
                connection.call("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?limit=50")[0], 200, "list"
            )

        def list_selected(connection: Connection, index: int) -> None:
            expect(
                connection.call(
                    "GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps?labelSelector=shard%3D{index % 100}"
                )[0],
                200,
                "list",
            )

        def update(connection: Connection, index: int) -> None:
            body = {"data": {"value": f"updated-{index}"}}
            expect(
                connection.call(
                    "PATCH",
                    f"/api/v1/namespaces/{NAMESPACE}/configmaps/cm-{index % objects}",
                    body,
                    "application/merge-patch+json",
                )[0],
                200,
                "patch",
            )

        get_rate = run_parallel(threads, 3000, host, port, get)
        page_rate = run_parallel(threads, 1000, host, port, list_page)
        selected_rate = run_parallel(threads, 100, host, port, list_selected)
        started = time.perf_counter()
        full_status, full_body = setup.call("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps")
        full_seconds = time.perf_counter() - started
        expect(full_status, 200, "full list")
        replay_rate = watch_events(host, port, before_rv, objects)
        patch_rate = run_parallel(threads, objects, host, port, update)
        latency_history = get_latency_ms(host, port, objects)
        fanout_rate = live_fanout(host, port, watchers=10, writes=500)
    finally:
        process.terminate()
        process.wait(timeout=10)

    print(f"kubesim on loopback, {objects} stored ConfigMaps, {threads} client threads (keep-alive)")
    print(f"  create                         {create_rate:8.0f} req/s")
    print(f"  get                            {get_rate:8.0f} req/s")
    print(f"  patch (merge)                  {patch_rate:8.0f} req/s")
    print(f"  list, limit=50                 {page_rate:8.0f} req/s")
    print(f"  list, labelSelector (1/100)    {selected_rate:8.0f} req/s   (scans {objects} objects)")
    print(f"  list, all {objects} items       {full_seconds * 1000:8.0f} ms  ({len(full_body) / 1e6:.1f} MB)")
    print(f"  watch replay from the log      {replay_rate:8.0f} events/s")
    print(f"  watch live, 10 watchers        {fanout_rate:8.0f} events/s delivered")
    print(
        f"  get latency: 1k objects {latency_1k:.2f} ms, {objects} objects "
        f"{latency_10k:.2f} ms, after {objects} more updates {latency_history:.2f} ms"
    )
    print("targets: >= 500 simple requests/s, >= 5,000 watch events/s")


if __name__ == "__main__":
    main()
