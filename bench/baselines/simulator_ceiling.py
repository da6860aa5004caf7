"""The simulator-ceiling client of bench/jobs_operator.py: the operator's writes for a share of the jobs, in a
tight loop, with nothing else (no reads, no events, no mirror, no queue).

    KUBECONFIG=... SECRET_KEY=... python bench/baselines/simulator_ceiling.py JOBS.json \
        --process K --processes P --threads T

Not a benchmark itself (bench/jobs_operator.py starts P of these). Reads the jobs as the simulator stored them
(a JSON list), keeps every P-th one from the K-th, and computes each one's first plan with the same pure
`jobs.plan.plan` the operator calls, before the clock starts. Then it prints `ready`, waits for a line on
stdin, and with T threads (each taking one job at a time) issues for every job the writes our operator's
first reconcile makes, in its order and with its client (`kube.client`): PUT the status, create the
Services, create the Pods. Prints `done <seconds> <errors> <CPU seconds> <peak RSS kB>` (the time and CPU from
the go line on), the first error's text when there was one, and exits non-zero on any error: a ceiling that
skipped work would flatter nobody.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")

import django

django.setup()

from jobs import conf  # noqa: E402
from jobs.controllers import job_resource  # noqa: E402
from jobs.frameworks import framework_for  # noqa: E402
from jobs.plan import Observed, parse_job, plan  # noqa: E402
from jobs.summary import replica_summary  # noqa: E402
from kube.client import get_client  # noqa: E402
from kube.resources import POD, SERVICE, ResourceType  # noqa: E402

CHILD_TYPES = {"Pod": POD, "Service": SERVICE}


Writes = tuple[ResourceType, dict[str, Any], list[dict[str, Any]]]


def first_writes(job: dict[str, Any]) -> Writes:
    """The job's resource, the job with the status its first reconcile writes, and the children it creates
    (Services first), as the operator plans them (same framework, same cluster domain)."""
    framework = framework_for(job["kind"], cluster_domain=conf.cluster_domain())
    decided = plan(parse_job(job, framework), Observed(), job.get("status") or {}, datetime.now(UTC))
    status = {**decided.status, "replicaSummary": replica_summary(job, decided.status, framework)}
    children = sorted(decided.create, key=lambda manifest: manifest["kind"] != "Service")
    return job_resource(framework), {**job, "status": status}, children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("jobs", type=Path, help="a JSON list of the jobs as stored")
    parser.add_argument("--process", type=int, required=True, help="this process's index, from 0")
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    jobs = json.loads(args.jobs.read_text())[args.process :: args.processes]
    work = [first_writes(job) for job in jobs]
    client = get_client()
    errors: list[str] = []

    def write(writes: Writes) -> None:
        rtype, job, children = writes
        try:
            client.replace(rtype, job, subresource="status")
            for child in children:
                client.create(CHILD_TYPES[child["kind"]], child)
        except Exception as error:  # counted and reported: the benchmark fails on any
            errors.append(f"{job['metadata']['namespace']}/{job['metadata']['name']}: {error}")

    print("ready", flush=True)
    sys.stdin.readline()
    began, cpu = time.monotonic(), time.process_time()
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        list(pool.map(write, work))
    seconds, cpu = time.monotonic() - began, time.process_time() - cpu
    peak_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"done {seconds:.3f} {len(errors)} {cpu:.3f} {peak_rss_kb}", flush=True)
    if errors:
        print(errors[0], flush=True)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
