"""Controller runtime: watch ingest, relist, event-to-reconcile latency, memory of the informer caches.

    .venv/bin/python bench/kube_informer.py [--objects 5000] [--pods 20000] [--samples 200]

kubesim runs as its own process (`python -m kubesim`), so server and informer do not share a GIL.
  ingest   a watch replays `objects` ADDED events from the server's log into an informer's cache, once with
           no handler work and once through the runtime's routing to the key sink (enqueue stubbed).
  relist   a paged list (limit=500) of `objects` ConfigMaps into a fresh cache.
  latency  a real `celery worker --controllers` (the sample controller of kube/tests) leads; one ConfigMap
           is created every 50 ms; latency = reconcile start - just before the create request.
  memory   a separate process caches `objects` ConfigMaps and `pods` Pods through a ControllerRuntime and
           reports its peak RSS.
Targets (2 cores): ingest >= 2,000 events/s, relist <= 3 s, latency p99 <= 100 ms, peak RSS <= 400 MB.
Redis database KUBE_CONTROLLER_BENCH_REDIS_DB (default 10) is flushed and used; no other.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ["KUBE_CONTROLLER_TEST_REDIS_DB"] = os.environ.get("KUBE_CONTROLLER_BENCH_REDIS_DB", "10")

import django  # noqa: E402

django.setup()

from kube.client import KubeClient  # noqa: E402
from kube.controller.informer import Informer  # noqa: E402
from kube.controller.queue import ObjectKey  # noqa: E402
from kube.controller.registry import Controller, Owns  # noqa: E402
from kube.controller.runtime import ControllerRuntime, WatchSpec  # noqa: E402
from kube.resources import CONFIGMAP, POD  # noqa: E402
from kube.tests import controller_harness as harness  # noqa: E402
from kube.tests.queue_harness import wait_for  # noqa: E402

NAMESPACE = "default"  # the sample controller's namespace in the tests' harness
JOB_LABEL = "argoml.io/job-name"
BENCH_LABEL = "app.kubernetes.io/part-of=bench"
SAMPLE_ENABLED = {"sample.argoml.io/enabled": "true"}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def start_kubesim(workdir: Path) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = workdir / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesim",
            "--kubeconfig",
            str(kubeconfig),
            "--event-log-size",
            "200000",
            "--no-kubelet",
            "--no-argo",
            "--insecure",  # plain HTTP: the figures are the apiserver's, not TLS's
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.readline()  # "listening on ..."
    return process, kubeconfig


def configmap(index: int, labels: dict[str, str] | None = None) -> dict:
    """About 1 KB, like a small custom resource."""
    metadata = {"name": f"obj-{index:05d}", "namespace": NAMESPACE, "labels": labels or {}}
    metadata["labels"].update({"app.kubernetes.io/part-of": "bench", "index": str(index)})
    data = {f"key-{field}": f"value-{index}-{field}-" + "x" * 60 for field in range(12)}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def pod(index: int) -> dict:
    """A training pod as our job controller would make it, with a running status (about 3 KB)."""
    job = f"job-{index // 4:05d}"
    name = f"{job}-worker-{index % 4}"
    env = [{"name": f"ENV_{n}", "value": f"value-{n}-{index}"} for n in range(6)]
    env.append(
        {
            "name": "TF_CONFIG",
            "value": json.dumps({"cluster": {"worker": [f"{job}-worker-{i}:2222" for i in range(4)]}}),
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {JOB_LABEL: job, "argoml.io/replica-type": "worker",
                       "argoml.io/replica-index": str(index % 4)},
            "annotations": {"argoml.io/spec-hash": f"{index:040x}"},
            "ownerReferences": [{"apiVersion": "argoml.io/v1alpha1", "kind": "TFJob", "name": job,
                                 "uid": f"00000000-0000-0000-0000-{index // 4:012d}", "controller": True}],
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "default",
            "nodeName": "bench-node",
            "containers": [{
                "name": "tensorflow",
                "image": "registry.example.com/ml/tensorflow:2.15.0-gpu",
                "command": ["python", "/opt/train.py"],
                "args": ["--epochs=10", "--batch-size=64", f"--model-dir=/models/{job}"],
                "env": env,
                "ports": [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "4", "memory": "8Gi"},
                              "requests": {"cpu": "2", "memory": "4Gi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data"},
                                 {"name": "models", "mountPath": "/models"}],
            }],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}},
                        {"name": "models", "persistentVolumeClaim": {"claimName": "models"}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}",
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [{"name": "tensorflow", "ready": True, "restartCount": 0,
                                   "image": "registry.example.com/ml/tensorflow:2.15.0-gpu",
                                   "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}}],
        },
    }  # fmt: skip


def create_all(client: KubeClient, rtype, bodies: Iterable[dict], threads: int = 4) -> None:
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(lambda body: client.create(rtype, body), bodies):
            pass


def current_rv(client: KubeClient) -> str:
    return client.list(CONFIGMAP, NAMESPACE, limit=1)["metadata"]["resourceVersion"]


def timed_watch(informer: Informer, count: int) -> float:
    """Replay the watch from `informer.resource_version` until the cache holds `count` objects."""
    thread = threading.Thread(target=informer.watch_once, daemon=True)
    began = time.perf_counter()
    thread.start()
    while len(informer) < count:
        time.sleep(0.001)
    elapsed = time.perf_counter() - began
    informer.stop()
    thread.join(10)
    return elapsed


def bench_ingest(client: KubeClient, since_rv: str, count: int) -> None:
    def bare() -> Informer:
        return Informer(client, CONFIGMAP, lambda *_: None, namespace=NAMESPACE, resource_version=since_rv)

    timed_watch(bare(), count)  # warms the server's encoders and the connection pool up
    elapsed = timed_watch(bare(), count)
    print(
        f"ingest (cache only):          {count / elapsed:8.0f} events/s ({count} events in {elapsed:.2f} s)"
    )

    keys: list[ObjectKey] = []
    controller = Controller(CONFIGMAP, owns=(Owns(POD, label_selector=JOB_LABEL),), namespace=NAMESPACE)
    routed = ControllerRuntime(client, [controller], enqueue=lambda *key: keys.append(ObjectKey(*key)))
    informer = routed.informers[WatchSpec.own(controller)]
    informer.resource_version = since_rv
    sink = threading.Thread(target=routed.sink.run, daemon=True)
    sink.start()
    elapsed = timed_watch(informer, count)
    routed.sink.stop()
    print(f"ingest (routed to the sink): {count / elapsed:8.0f} events/s (target >= 2,000)")


def bench_relist(client: KubeClient, count: int) -> None:
    times = []
    for _ in range(3):
        informer = Informer(client, CONFIGMAP, lambda *_: None, namespace=NAMESPACE, page_size=500)
        began = time.perf_counter()
        informer.relist()
        times.append(time.perf_counter() - began)
        assert len(informer) == count, len(informer)
    best, mean = min(times), sum(times) / len(times)
    print(f"relist of {count} (limit=500): best {best:.2f} s, mean {mean:.2f} s (target <= 3 s)")


def bench_latency(client: KubeClient, kubeconfig: Path, workdir: Path, samples: int) -> None:
    redis = harness.redis_client()
    redis.flushdb()
    worker = harness.start_controller_worker("bench", workdir, kubeconfig, concurrency=2)
    try:
        worker.wait_ready()
        wait_for(lambda: _leading(worker), 15, "the worker to lead")
        created: dict[str, float] = {}
        for index in range(samples):
            name = f"latency-{index:04d}"
            created[name] = time.time()
            client.create(CONFIGMAP, harness.configmap(name, {"i": str(index)}, **SAMPLE_ENABLED))
            time.sleep(0.05)

        def started() -> dict[str, float]:
            first: dict[str, float] = {}
            for item in redis.lrange("sample:runs", 0, -1):
                record = json.loads(item)
                first.setdefault(record["name"], record["start"])
            return first

        wait_for(lambda: set(created) <= set(started()), 30, "every sample to be reconciled")
        starts = started()
        latencies = [starts[name] - at for name, at in created.items()]
        print(
            f"event → reconcile start:        p50 {percentile(latencies, 0.5) * 1000:.1f} ms, "
            f"p99 {percentile(latencies, 0.99) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms "
            f"({samples} samples, one every 50 ms; target p99 <= 100 ms)"
        )
    finally:
        worker.stop()
        redis.flushdb()


def _leading(worker) -> bool:
    return "controllers started" in worker.logfile.read_text(errors="replace")


def measure_memory(kubeconfig: Path) -> None:
    """In a process of its own: cache every ConfigMap and every job pod, then print the peak RSS."""
    client = harness.client_for(kubeconfig, request_timeout=120)
    controller = Controller(
        CONFIGMAP,
        owns=(Owns(POD, label_selector=JOB_LABEL),),
        label_selector=BENCH_LABEL,
        namespace=NAMESPACE,
    )
    runtime = ControllerRuntime(client, [controller], enqueue=lambda *_: None)
    began = time.perf_counter()
    runtime.start()
    assert runtime.wait_synced(300)
    synced_in = time.perf_counter() - began
    counts = {spec.rtype.kind: len(informer) for spec, informer in runtime.informers.items()}
    runtime.stop()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"counts": counts, "peak_rss_mb": peak_mb, "synced_in": synced_in}))


def bench_memory(kubeconfig: Path) -> None:
    output = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(kubeconfig)],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    result = json.loads(output.strip().splitlines()[-1])
    counts = ", ".join(f"{count} {kind}s" for kind, count in result["counts"].items())
    print(
        f"peak RSS, {counts} cached: {result['peak_rss_mb']:.0f} MB "
        f"(initial sync {result['synced_in']:.1f} s; target <= 400 MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--memory-child", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.memory_child:
        measure_memory(arguments.memory_child)
        return

    with tempfile.TemporaryDirectory(prefix="bench-informer-") as scratch:
        workdir = Path(scratch)
        kubesim, kubeconfig = start_kubesim(workdir)
        try:
            client = harness.client_for(kubeconfig, request_timeout=120)
            note(f"creating {arguments.objects} ConfigMaps")
            since = current_rv(client)
            create_all(client, CONFIGMAP, (configmap(index) for index in range(arguments.objects)))
            bench_ingest(client, since, arguments.objects)
            bench_relist(client, arguments.objects)
            bench_latency(client, kubeconfig, workdir, arguments.samples)
            note(f"creating {arguments.pods} Pods")
            create_all(client, POD, (pod(index) for index in range(arguments.pods)))
            bench_memory(kubeconfig)
        finally:
            kubesim.terminate()
            kubesim.wait(30)


def note(what: str) -> None:
    print(f"… {what}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
