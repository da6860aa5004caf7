"""Garbage collection at scale: run time, API calls against the minimum, peak RSS of the collector.

    .venv/bin/python bench/gc_collect.py [--pods 100000] [--eligible 10000] [--page-size 500]

The simulator runs in this process and is filled through its store API (no HTTP); the collector runs in a
process of its own (so its peak RSS is its own) with the project's settings, a fresh PostgreSQL database
(GC_BENCH_DATABASE, default argoml_gc_bench on 127.0.0.1:5432; dropped, created and migrated) and Redis
database GC_BENCH_REDIS_DB (default 9) of BENCH_REDIS_HOST (default 127.0.0.1:6379). The write rate limit
is lifted (KUBE_WRITE_QPS) so the figure is the collector's, not the limiter's. Of the pods, `--eligible`
are finished workflow pods past their retention, 30 % finished within it, 40 % pending or running, and the
rest finished long ago without the workflow label.
Targets: peak RSS <= 200 MB; API calls = list pages + deletions (+ the 5 lists of the job passes).
Exits non-zero, with a FAIL line, unless the deleted pods are exactly the eligible ones (the set of
namespace/name compared, not the count; bench/tests/test_bench_gc_answers.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")

REDIS_HOST = os.environ.get("BENCH_REDIS_HOST", "127.0.0.1:6379")
NAMESPACES = 10
HOUR = 3600
DAY = 24 * HOUR


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def workflow_pod(index: int, namespace: str, labelled: bool, phase: str, finished: datetime | None) -> dict:
    """A pod shaped like one Argo runs (wait + main containers), about 2 KB of JSON."""
    workflow = f"sweep-{index // 50}"
    labels = {"app": "training"}
    if labelled:
        labels |= {"workflows.argoproj.io/workflow": workflow, "workflows.argoproj.io/completed": "false"}
    container_state: dict[str, Any] = {"running": {"startedAt": stamp(datetime.now(UTC))}}
    if finished is not None:
        exit_code = 0 if phase == "Succeeded" else 1
        container_state = {"terminated": {"exitCode": exit_code, "reason": "Completed",
                                          "startedAt": stamp(finished - timedelta(minutes=5)),
                                          "finishedAt": stamp(finished)}}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{workflow}-{index}",
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                "workflows.argoproj.io/node-name": f"{workflow}[0].train(index:{index})",
                "workflows.argoproj.io/node-id": f"{workflow}-{index}",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "argo",
            "containers": [
                {
                    "name": "wait",
                    "image": "quay.io/argoproj/argoexec:v3.5.5",
                    "command": ["argoexec", "wait"],
                },
                {
                    "name": "main",
                    "image": "registry.example/train:1.4",
                    "command": ["python", "train.py"],
                    "args": ["--lr", "0.01", "--epochs", "20"],
                    "resources": {"limits": {"cpu": "2"}},
                },
            ],
        },
        "status": {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": name,
                    "ready": finished is None,
                    "restartCount": 0,
                    "image": "x",
                    "state": container_state,
                }
                for name in ("wait", "main")
            ],
        },
    }


def populate(store: Any, pods: int, eligible: int, now: datetime) -> tuple[dict[str, int], set[str]]:
    """Create every pod through the store (create, then its status); returns the counts by category and
    the keys (namespace/name) of the pods the collector must delete: the eligible ones, no other."""
    young = round(0.3 * pods)
    running = round(0.4 * pods)
    unlabelled = pods - eligible - young - running
    if unlabelled < 0:
        raise SystemExit(f"--eligible {eligible} is more than 30 % of --pods {pods}.")
    plan = (
        [("eligible", True, "Succeeded", now - timedelta(hours=25))] * (eligible // 2)
        + [("eligible", True, "Failed", now - timedelta(days=8))] * (eligible - eligible // 2)
        + [("young", True, "Succeeded", now - timedelta(hours=1))] * (young // 2)
        + [("young", True, "Failed", now - timedelta(days=2))] * (young - young // 2)
        + [("running", True, "Running", None)] * running
        + [("unlabelled", False, "Succeeded", now - timedelta(days=30))] * unlabelled
    )
    for index in range(NAMESPACES):
        store.ensure_namespace(f"bench-{index}")
    expected: set[str] = set()
    for index, (category, labelled, phase, finished) in enumerate(plan):
        manifest = workflow_pod(index, f"bench-{index % NAMESPACES}", labelled, phase, finished)
        status = manifest.pop("status")
        created = store.create(manifest)
        created["status"] = status
        store.update_status(created)
        if category == "eligible":
            expected.add(pod_key(created))
    counts = {"eligible": eligible, "young": young, "running": running, "unlabelled": unlabelled}
    return counts, expected


def pod_key(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def deletion_mismatch(created: set[str], left: set[str], expected: set[str]) -> str | None:
    """None when exactly the expected pods are gone; else a line naming what went wrong, with examples."""
    deleted = created - left
    wrong, missed = sorted(deleted - expected), sorted(expected - deleted)
    if not wrong and not missed:
        return None
    return (
        f"FAIL: the deleted pods differ from the expected set: {len(wrong):,} deleted that should stay "
        f"{wrong[:3]}, {len(missed):,} eligible not deleted {missed[:3]}"
    )


def fresh_database(name: str) -> str:
    """Drop and create the bench database; its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def rss_mb() -> float:
    """Peak RSS of this process image (VmHWM). Not ru_maxrss: Linux keeps that across exec, so a child
    forked from the simulator's big process would report the parent's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def run_collector() -> None:
    """In the collector's process: one real collection; prints its figures as one JSON line."""
    import django

    django.setup()
    from garbage.collector import collect

    before = rss_mb()
    started = time.perf_counter()
    run = collect()
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "rss_before_mb": before, "rss_peak_mb": rss_mb(),
                      "status": run.status, "scanned": run.scanned, "deleted": run.deleted,
                      "skipped": run.skipped, "errors": run.errors}))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--eligible", type=int, default=10_000)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--collect", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.collect:
        run_collector()
        return

    from jobs.crd import MXJOB, PYTORCHJOB, TFJOB
    from kubesim.testing import running_simulator

    with running_simulator() as sim:
        began = time.perf_counter()
        for crd in (TFJOB, MXJOB, PYTORCHJOB):
            sim.store.create(crd.manifest())
        counts, expected = populate(sim.store, arguments.pods, arguments.eligible, sim.clock.now())
        created = {pod_key(pod) for pod in sim.store.list("pods")["items"]}
        setup_seconds = time.perf_counter() - began

        env = {
            **os.environ,
            "KUBECONFIG": str(sim.kubeconfig_path),
            "DATABASE_URL": fresh_database(os.environ.get("GC_BENCH_DATABASE", "argoml_gc_bench")),
            "REDIS_URL": f"redis://{REDIS_HOST}/{os.environ.get('GC_BENCH_REDIS_DB', '9')}",
            "KUBE_WRITE_QPS": "1000000",
            "KUBE_WRITE_BURST": "1000000",
            "GC_PAGE_SIZE": str(arguments.page_size),
            "LOG_LEVEL": "WARNING",
        }
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
        sim.counters.reset()
        output = subprocess.run([sys.executable, __file__, "--collect"], cwd=REPO, env=env, check=True,
                                capture_output=True, text=True).stdout  # fmt: skip
        figures = json.loads(output.strip().splitlines()[-1])

        left_keys = {pod_key(pod) for pod in sim.store.list("pods")["items"]}
        left = len(left_keys)
        listed = counts["eligible"] + counts["young"]
        pages = math.ceil(listed / arguments.page_size)
        minimum = pages + counts["eligible"]
        lists = sim.counters.count(verb="list")
        deletes = sim.counters.count(verb="delete")
        total = sim.counters.total()

    print(f"pods: {arguments.pods:,} ({counts}); page size {arguments.page_size}; setup {setup_seconds:.1f}s")
    print(f"run: {figures['status']}, scanned {figures['scanned']:,}, deleted {figures['deleted']:,}, "
          f"kept {figures['skipped']:,}, errors {figures['errors']}; pods left {left:,} "
          f"(expected {arguments.pods - counts['eligible']:,})")  # fmt: skip
    print(f"run time: {figures['seconds']:.1f}s ({figures['deleted'] / figures['seconds']:,.0f} deletions/s)")
    print(
        f"API calls: {total:,} = {lists} lists + {deletes:,} deletes + {total - lists - deletes} other; "
        f"minimum {minimum:,} ({pages} pages + {counts['eligible']:,} deletions) + 5 lists of the job passes"
    )
    print(f"peak RSS of the collector: {figures['rss_peak_mb']:.0f} MB "
          f"(after Django start-up: {figures['rss_before_mb']:.0f} MB); target <= 200 MB")  # fmt: skip
    mismatch = deletion_mismatch(created, left_keys, expected)
    if mismatch:
        raise SystemExit(mismatch)
    print(f"deleted pods: exactly the {len(expected):,} eligible ones")


if __name__ == "__main__":
    main()
