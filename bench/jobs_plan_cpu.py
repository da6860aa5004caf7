"""CPU of one reconcile's decision for a 103-replica TFJob (Chief 1, PS 2, Worker 100), no cluster involved.

    .venv/bin/python bench/jobs_plan_cpu.py [--workers 100] [--repeat 30]

Times the pure part of `jobs.reconcile._converge`: `autoscaling.may_have_hpa`, `plan.parse_job()`,
`plan.plan()` and `reconcile.with_summary()`, in two situations: the first reconcile (no children yet: every
Service and Pod is created) and a steady one (every child exists and runs: nothing to create, the status is
aggregated). Prints, per situation, the median and best CPU milliseconds (`time.process_time`) over --repeat
runs after one warm-up, then, from one run under cProfile, the calls of `jobs.spec.replica_specs` and every
call into `jobs/spec.py` (the tolerant readers that re-read the raw job). Checks its answers and exits non-
zero when one is wrong: 103 Services and 103 Pods planned first, every Pod's TF_CONFIG lists the 103 replicas,
then nothing to create and the job Running.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")

import django

django.setup()

import json  # noqa: E402

from jobs import autoscaling  # noqa: E402
from jobs.frameworks import TensorFlow  # noqa: E402
from jobs.plan import Observed, Plan, parse_job, plan  # noqa: E402
from jobs.reconcile import with_summary  # noqa: E402
from jobs.status import current_state  # noqa: E402
from jobs.tests.fakes import T0, created, tf_job, with_state  # noqa: E402

SPEC_MODULE = str(Path(__file__).resolve().parents[1] / "jobs" / "spec.py")


def decide(job: dict[str, Any], pods: list[dict[str, Any]], services: list[dict[str, Any]]) -> Plan:
    """What `_converge` computes before it writes anything (no gang scheduler, no HPA)."""
    framework = TensorFlow()
    autoscaling.may_have_hpa(job, framework)
    parsed = parse_job(job, framework)
    observed = Observed.of(parsed.spec.uid, pods, services)
    decided = plan(parsed, observed, job.get("status") or {}, T0)
    with_summary(job, decided.status, parsed.spec.counts)
    return decided


def situations(workers: int) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]]:
    job = tf_job(chief=1, ps=2, workers=workers, name="big")
    first = decide(job, [], [])
    running = {**job, "status": first.status}
    pods = [with_state(created(m), "Running") for m in first.create if m["kind"] == "Pod"]
    services = [created(m) for m in first.create if m["kind"] == "Service"]
    return {"first reconcile": (job, [], []), "steady (all running)": (running, pods, services)}


def check(name: str, decided: Plan, replicas: int) -> list[str]:
    problems = []
    kinds = [m["kind"] for m in decided.create]
    if name == "first reconcile":
        if kinds.count("Service") != replicas or kinds.count("Pod") != replicas:
            problems.append(f"{name}: planned {kinds.count('Service')} services, {kinds.count('Pod')} pods")
        for pod in (m for m in decided.create if m["kind"] == "Pod"):
            container = pod["spec"]["containers"][0]
            env = {e["name"]: e.get("value") for e in container["env"]}
            cluster = json.loads(env["TF_CONFIG"])["cluster"]
            if sum(map(len, cluster.values())) != replicas:
                problems.append(f"{name}: {pod['metadata']['name']}'s TF_CONFIG lists the wrong replicas")
                break
    else:
        if decided.create or decided.delete or current_state(decided.status) != "Running":
            problems.append(f"{name}: expected nothing to do and Running, got {kinds} {decided.delete}")
    return problems


def cpu_ms(run: Callable[[], object], repeat: int) -> list[float]:
    run()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append((time.process_time() - start) * 1000)
    return times


def spec_calls(run: Callable[[], object]) -> tuple[int, int]:
    """Calls of `replica_specs`, and of every function in jobs/spec.py, in one run."""
    profiler = cProfile.Profile()
    profiler.runcall(run)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    replica_specs = total = 0
    for (filename, _, function), (_, calls, *_rest) in stats.items():
        if filename == SPEC_MODULE:
            total += calls
            if function == "replica_specs":
                replica_specs += calls
    return replica_specs, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    replicas = 3 + args.workers
    print(
        f"TFJob: Chief 1, PS 2, Worker {args.workers} ({replicas} replicas); "
        f"{args.repeat} runs after a warm-up; "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )
    problems = []
    for name, (job, pods, services) in situations(args.workers).items():

        def run(job: dict[str, Any] = job, pods: list = pods, services: list = services) -> Plan:
            return decide(job, pods, services)

        problems += check(name, run(), replicas)
        times = cpu_ms(run, args.repeat)
        specs, total = spec_calls(run)
        print(
            f"{name:22} CPU ms per decision: median {statistics.median(times):7.2f}  best {min(times):7.2f}"
            f"   replica_specs calls {specs:6}   calls into jobs/spec.py {total:7}"
        )
    for problem in problems:
        print("WRONG:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
