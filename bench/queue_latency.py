"""Reconcile queue: enqueue-to-reconcile-start latency (unsaturated) and no-op reconciles/s, real worker.

    .venv/bin/python bench/queue_latency.py [--keys 3000] [--concurrency 2]

Starts one `celery worker -Q reconcile` with the project's settings (default queue timings) on its own
Redis database (KUBE_QUEUE_BENCH_REDIS_DB, default 8; flushed), and drives it with kind `Noop` of the
sample controller, which only notes when it started. Target: p99 latency <= 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
BENCH_DB = int(os.environ.get("KUBE_QUEUE_BENCH_REDIS_DB", "8"))
os.environ["REDIS_URL"] = f"redis://127.0.0.1:6379/{BENCH_DB}"

import django  # noqa: E402

django.setup()

from kube.queue import ReconcileQueue  # noqa: E402
from kube.queue.conf import queue_conf_from_settings  # noqa: E402
from kube.tests.queue_harness import queue_for, queue_idle, redis_client, start_worker, wait_for  # noqa: E402

STARTED = "noop:started"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure_latency(queue: ReconcileQueue, client, samples: int, spacing: float) -> list[float]:
    """Enqueue one new key every `spacing` seconds, so the worker is idle when each arrives."""
    enqueued: dict[str, float] = {}
    for index in range(samples):
        name = f"latency-{index}"
        enqueued[f"bench/{name}"] = time.time()
        queue.enqueue("Noop", "bench", name)
        time.sleep(spacing)
    wait_for(lambda: client.hlen(STARTED) >= samples, 30, "every latency sample to start")
    started = client.hgetall(STARTED)
    return [float(started[member]) - at for member, at in enqueued.items()]


def enqueue_backlog(queue: ReconcileQueue, keys: int) -> float:
    """Enqueue `keys` new keys from one client while no worker runs; return enqueues/s."""
    began = time.perf_counter()
    for index in range(keys):
        queue.enqueue("Noop", "bench", f"backlog-{index}")
    return keys / (time.perf_counter() - began)


def drain_rate(client, keys: int) -> float:
    """Reconciles/s while the worker drains the backlog: first start to last start."""
    wait_for(lambda: client.hlen(STARTED) >= keys and queue_idle(client, "Noop"), 300, "the backlog to drain")
    started = [float(value) for value in client.hvals(STARTED)]
    client.delete(STARTED)
    return (keys - 1) / (max(started) - min(started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400, help="latency samples")
    parser.add_argument("--spacing", type=float, default=0.01, help="seconds between latency samples")
    parser.add_argument("--keys", type=int, default=3000, help="keys in the backlog to drain")
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes")
    args = parser.parse_args()

    client = redis_client(BENCH_DB)
    client.flushdb()
    queue = queue_for(client, queue_conf_from_settings(), BENCH_DB)
    enqueue_rate = enqueue_backlog(queue, args.keys)
    with tempfile.TemporaryDirectory() as logdir:
        worker = start_worker(
            "bench",
            Path(logdir),
            concurrency=args.concurrency,
            db=BENCH_DB,
            timings={},
        )
        try:
            worker.wait_ready()
            reconcile_rate = drain_rate(client, args.keys)
            latencies = measure_latency(queue, client, args.samples, args.spacing)
        finally:
            worker.stop()
            client.flushdb()

    ms = [latency * 1000 for latency in latencies]
    print(f"worker: prefork, concurrency {args.concurrency}; Redis db {BENCH_DB}; {os.cpu_count()} CPUs")
    p99 = percentile(ms, 0.99)
    print(
        f"enqueue-to-reconcile-start latency, unsaturated ({args.samples} keys, "
        f"one per {args.spacing * 1000:.0f} ms): p50 {statistics.median(ms):.1f} ms, "
        f"p99 {p99:.1f} ms, max {max(ms):.1f} ms"
        f" (target p99 <= 100 ms: {'met' if p99 <= 100 else 'MISSED'})"
    )
    print(f"enqueue: {enqueue_rate:,.0f} new keys/s from one client, no worker running (Lua step + publish)")
    print(f"no-op reconciles: {reconcile_rate:,.0f}/s draining a backlog of {args.keys} keys")


if __name__ == "__main__":
    main()
