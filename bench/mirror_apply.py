"""The mirror's write path: CPU per watch event through `apply_events`, as the operator's writer thread
batches them.

    .venv/bin/python bench/mirror_apply.py [--jobs 1000] [--batch 200] [--repeat 3]

The events of --jobs TFJobs x 4 worker pods, in the order an operator's informers hand them to the mirror
writer when jobs arrive at 50/s: each job ADDED, its status written twice (MODIFIED: Created at once,
every pod counted a second later), its pods ADDED, each pod MODIFIED once (scheduled, two seconds
later); cut into batches of --batch events and written with `apply_events` (a batch is what arrived
while the previous one was written, up to the writer's DEFAULT_MAX_BATCH of 200). Prints, per mirror and
per job: events, seconds, events/s and the benchmark process's CPU per event (process time: Python,
psycopg and Django; PostgreSQL's own CPU is not in it). Best of --repeat, each on emptied tables. Checks
its answers: every job's row ends with the last status and every pod's row with its last phase.

Runs on PostgreSQL (BENCH_DATABASE_URL, default database argoml_mirror_bench on 127.0.0.1:5432; created
when missing, migrated, emptied).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ["DATABASE_URL"] = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/argoml_mirror_bench"
)

import django  # noqa: E402

django.setup()

from benchdb import ensure_database  # noqa: E402
from django.db import connection  # noqa: E402

from jobs.models import Replica, TrainingJob  # noqa: E402
from jobs.tests.cluster import job_manifest  # noqa: E402
from kube.controller.mirror.apply import Event, apply_events  # noqa: E402

REPLICAS = 4
#: The pace jobs arrive at (the operator benchmark's): a job's events are spread over two seconds, so
#: a batch holds the events of many jobs and rarely two events of one object.
JOBS_PER_SECOND = 50


Timed = tuple[float, str, dict[str, Any]]


def job_events(index: int) -> tuple[list[Timed], list[Timed]]:
    """One job's events for the job mirror and for the pod mirror, each with the second it arrives."""
    job = job_manifest("TFJob", {"Worker": REPLICAS}, name=f"job-{index}", namespace=f"team-{index % 10}")
    job["metadata"].update(uid=f"job-uid-{index}", resourceVersion=str(index * 10), generation=1,
                           creationTimestamp="2026-11-28T00:00:00Z")  # fmt: skip
    created = copy.deepcopy(job)
    created["metadata"]["resourceVersion"] = str(index * 10 + 1)
    created["status"] = {
        "conditions": [condition("Created", "2026-11-28T00:00:01Z")],
        "replicaStatuses": {"Worker": {}},
    }
    counted = copy.deepcopy(created)
    counted["metadata"]["resourceVersion"] = str(index * 10 + 6)
    counted["status"]["replicaStatuses"] = {"Worker": {"active": REPLICAS}}
    pods = [pod(job, replica) for replica in range(REPLICAS)]
    scheduled = []
    for replica, added in enumerate(pods):
        moved = copy.deepcopy(added)
        moved["metadata"]["resourceVersion"] = str(index * 10 + 7 + replica % 3)
        moved["spec"]["nodeName"] = "node-1"
        moved["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
        scheduled.append(moved)
    start = index / JOBS_PER_SECOND
    jobs = [(start, "ADDED", job), (start + 0.05, "MODIFIED", created), (start + 1.0, "MODIFIED", counted)]
    return jobs, [(start + 0.1, "ADDED", p) for p in pods] + [(start + 2.0, "MODIFIED", p) for p in scheduled]


def condition(kind: str, at: str) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": f"TFJob{kind}", "message": f"TFJob is {kind.lower()}.",
            "lastUpdateTime": at, "lastTransitionTime": at}  # fmt: skip


def pod(job: dict[str, Any], replica: int) -> dict[str, Any]:
    meta = job["metadata"]
    name = f"{meta['name']}-worker-{replica}"
    template = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "uid": f"{meta['uid']}-pod-{replica}",
            "resourceVersion": str(int(meta["resourceVersion"]) + 2 + replica % 3),
            "creationTimestamp": "2026-11-28T00:00:01Z",
            "labels": {
                "argoml.io/job-name": meta["name"],
                "argoml.io/replica-type": "worker",
                "argoml.io/replica-index": str(replica),
                "training.kubeflow.org/job-name": meta["name"],
            },
            "ownerReferences": [
                {
                    "apiVersion": job["apiVersion"],
                    "kind": job["kind"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(template["spec"]),
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def batches(events: list[Event], size: int) -> Iterator[list[Event]]:
    for start in range(0, len(events), size):
        yield events[start : start + size]


def run(jobs: int, size: int) -> dict[str, tuple[int, float, float]]:
    """One pass on emptied tables; per mirror: (events, seconds, CPU seconds)."""
    Replica.objects.all().delete()
    TrainingJob.objects.all().delete()
    timed_jobs: list[Timed] = []
    timed_pods: list[Timed] = []
    for index in range(jobs):
        of_job, of_pods = job_events(index)
        timed_jobs += of_job
        timed_pods += of_pods
    job_stream = [(kind, obj) for _, kind, obj in sorted(timed_jobs, key=lambda event: event[0])]
    pod_stream = [(kind, obj) for _, kind, obj in sorted(timed_pods, key=lambda event: event[0])]
    figures = {}
    for name, model, stream in (("jobs", TrainingJob, job_stream), ("pods", Replica, pod_stream)):
        cpu, began = time.process_time(), time.perf_counter()
        for batch in batches(stream, size):
            for outcome in apply_events(model, batch):
                if isinstance(outcome, Exception):
                    raise SystemExit(f"{name}: an event failed: {outcome}")
        figures[name] = (len(stream), time.perf_counter() - began, time.process_time() - cpu)
    check(jobs)
    return figures


def check(jobs: int) -> None:
    """Every job's row has every pod counted; every pod's row is scheduled."""
    counted = TrainingJob.objects.filter(status__replicaStatuses__Worker__active=REPLICAS).count()
    scheduled = Replica.objects.exclude(node="").count()
    if counted != jobs or scheduled != jobs * REPLICAS:
        raise SystemExit(f"wrong: {counted} of {jobs} jobs counted, {scheduled} of {jobs * REPLICAS} pods"
                         " scheduled")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50, help="events per apply_events call")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for flag in ("jobs", "batch", "repeat"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag}: {getattr(args, flag)} must be at least 1")
    ensure_database()
    print(
        f"settings: {args.jobs} TFJobs x {REPLICAS} pods; batches of {args.batch} events; best of"
        f" {args.repeat}; PostgreSQL {connection.pg_version // 10000} on {connection.settings_dict['HOST']};"
        f" {os.cpu_count()} cores; load average {'/'.join(f'{v:.1f}' for v in os.getloadavg())}"
    )
    passes = [run(args.jobs, args.batch) for _ in range(args.repeat)]
    for name in ("jobs", "pods"):
        events, seconds, cpu = min((p[name] for p in passes), key=lambda figure: figure[2])
        print(
            f"  {name}: {events} events in {seconds:.2f} s ({events / seconds:,.0f}/s),"
            f" CPU {1000 * cpu / events:.3f} ms per event"
        )
    total_cpu = min(sum(p[n][2] for n in p) for p in passes)
    per_job = 1000 * total_cpu / args.jobs
    print(f"  per job (3 job events + 8 pod events): CPU {per_job:.2f} ms; answers checked")


if __name__ == "__main__":
    main()
