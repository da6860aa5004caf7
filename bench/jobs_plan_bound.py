"""`plan()` of a new job of every kind at its replica bound: CPU time and heap peak, no cluster involved.

    .venv/bin/python bench/jobs_plan_bound.py [--replicas 1000] [--repeat 5]

A job of `--replicas` pods (default `limits.current().replicas_per_job`, the largest a door accepts) is
parsed and planned as its first reconcile would (every Service and Pod created). Prints, per kind, the
median CPU milliseconds (`time.process_time`) over --repeat runs after one warm-up, tracemalloc's peak of
one run, and the size of the manifests planned (each pod's TF_CONFIG, MX_CONFIG or WORKER_ADDRS names every
replica, so that size grows with the square of the count: the planner's own cost must grow no faster).
Exits non-zero when a plan creates no Pod, or more Pods or Services than replicas (an MPIJob's launcher
comes once its workers run, and only the launcher has a Service).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")

import django

django.setup()

import limits  # noqa: E402
from jobs.frameworks import framework_class  # noqa: E402
from jobs.plan import Observed, parse_job, plan  # noqa: E402
from jobs.tests.fakes import T0, make_job  # noqa: E402

#: Each kind's replica types, the last one taking what the others leave of the count (the shapes of
#: docs/benchmarks.md's table: a TFJob's 99 parameter servers, an MXJob's 99 servers).
SHAPES = {
    "TFJob": {"Chief": 1, "PS": 99, "Worker": 0},
    "MXJob": {"Scheduler": 1, "Server": 99, "Worker": 0},
    "XGBoostJob": {"Master": 1, "Worker": 0},
    "PyTorchJob": {"Master": 1, "Worker": 0},
    "JAXJob": {"Worker": 0},
    "PaddleJob": {"Worker": 0},
    "MPIJob": {"Launcher": 1, "Worker": 0},
}


def job_of(kind: str, replicas: int) -> dict:
    counts = dict(SHAPES[kind])
    last = next(reversed(counts))
    counts[last] = replicas - sum(counts.values())
    return make_job(kind, counts, name="big")


def first_plan(job: dict) -> list[dict]:
    framework = framework_class(job["kind"])()
    return list(plan(parse_job(job, framework), Observed(), {}, T0).create)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=limits.current().replicas_per_job)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{args.replicas} replicas per job, first reconcile; CPU ms median of {args.repeat} after a warm-up; "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )
    wrong = 0
    for kind in SHAPES:
        job = job_of(kind, args.replicas)
        created = first_plan(job)
        times = []
        for _ in range(args.repeat):
            started = time.process_time()
            first_plan(job)
            times.append((time.process_time() - started) * 1000)
        tracemalloc.start()
        first_plan(job)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        pods = sum(1 for manifest in created if manifest["kind"] == "Pod")
        services = sum(1 for manifest in created if manifest["kind"] == "Service")
        size = len(json.dumps(created))
        print(
            f"{kind:11} CPU {statistics.median(times):7.1f} ms   peak {peak / 2**20:6.1f} MiB   "
            f"{pods} pods, {services} services, {size / 1e6:5.1f} MB of manifests"
        )
        if not 0 < pods <= args.replicas or services > args.replicas:
            print(f"WRONG: {kind} planned {pods} pods and {services} services for {args.replicas} replicas")
            wrong += 1
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
