"""Recovery from faults of every dependency: TFJobs on kubesim, two controller workers, faults at random.

    .venv/bin/python bench/faults.py [--jobs 200] [--faults 8] [--kinds KIND,...] [--gap 4:10]
        [--outage 10] [--seed 1] [--concurrency 2] [--timeout 900]

Everything is the benchmark's own: a private `redis-server` (queue and broker, no persistence), its own
PostgreSQL database (FAULTS_BENCH_DATABASE_URL, default argoml_faults_bench on 127.0.0.1:5432; created,
migrated, emptied), kubesim in a process of its own with a state directory (its kubelet runs every pod for
2 s), and two `celery worker -Q reconcile --controllers` (prefork --concurrency) with the shipped write
limit and queue timings. All --jobs TFJobs (4 workers each) are submitted at once; then --faults faults of
each kind in --kinds, shuffled with --seed, one every --gap seconds (uniform), while the jobs run:

  worker-kill        SIGKILL of one worker's whole process group, started again at once
  redis-restart      the redis-server killed and started again empty 2 s later
  redis-pause        the redis-server stopped (SIGSTOP) for --outage seconds
  pg-terminate       every connection to the database terminated (pg_terminate_backend)
  pg-refuse          the database refusing connections (ALLOW_CONNECTIONS false) for --outage seconds
  apiserver-restart  kubesim stopped (SIGTERM, its objects saved) and started again from them 3 s later;
                     watches resuming from before the restart get 410 Gone and relist (watch expiry)

When each fault is over (the dependency back), a canary TFJob of one 1-second pod is submitted; the
fault's recovery time is how long that canary takes to be Succeeded in the database (through the watch,
the queue, the reconcile, the kubelet, the status and the mirror), behind whatever backlog the write limit
holds and whatever faults come next. Printed apart: the faults after every job of the batch was done,
whose canaries wait behind no backlog; --settle N waits up to N s for each canary before the next gap, so
each recovery is measured alone. At the end every job must be Succeeded in the cluster and in the
database, with exactly 4 pods (one per replica), each created once (one uid per pod name in the mirror)
and mirrored. Printed: the conditions, the jobs lost and pods created twice, per fault kind the faults
injected and the worst and median recovery, and the convergence time after the last fault. Exits non-zero
when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ["DATABASE_URL"] = os.environ.get(
    "FAULTS_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/argoml_faults_bench"
)
os.environ["REDIS_URL"] = "redis://127.0.0.1:1/0"  # nothing here uses it; the workers get the private one

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from benchdb import ensure_database  # noqa: E402
from django.db import DatabaseError, close_old_connections, connection  # noqa: E402

from argoml_site.crds import CUSTOM_RESOURCES, KUBEFLOW_RESOURCES  # noqa: E402
from jobs.models import Replica, TrainingJob  # noqa: E402
from jobs.tests.cluster import job_manifest  # noqa: E402
from kube.client import KubeClient  # noqa: E402
from kube.controller.queue.conf import queue_conf_from_settings  # noqa: E402
from kube.errors import ApiError, Conflict  # noqa: E402
from kube.ratelimit import DEFAULT_WRITE_BURST, DEFAULT_WRITE_QPS  # noqa: E402
from kube.resources import CRD, NAMESPACE, POD, ResourceType  # noqa: E402
from kube.tests.controller_harness import client_for  # noqa: E402
from kube.tests.redis_server import PrivateRedis, free_port  # noqa: E402

KINDS = ("worker-kill", "redis-restart", "redis-pause", "pg-terminate", "pg-refuse", "apiserver-restart")
REPLICAS = 4
TFJOB = ResourceType("argoml.io/v1alpha1", "TFJob", "tfjobs")
CANARY_SCRIPT = {"duration": 1, "exitCode": 0}


# -- the dependencies ------------------------------------------------------------------------------
class Kubesim:
    """`python -m kubesim` with its kubelet, on one port and one state directory, restartable."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.state_dir = workdir / "kubesim-state"
        self.kubeconfig = workdir / "kubeconfig"
        self.log = workdir / "kubesim.log"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "kubesim", "--port", str(self.port), "--kubeconfig",
                   str(self.kubeconfig), "--state-dir", str(self.state_dir), "--insecure",
                   "--no-argo"]  # fmt: skip
        with self.log.open("a") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO,
                                            start_new_session=True)  # fmt: skip
        assert self.process.stdout is not None
        self.process.stdout.readline()  # its address, once it serves

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(60)
        self.process = None


class Database:
    """The benchmark's own database, made to drop or refuse connections through an admin connection."""

    def __init__(self) -> None:
        settings = connection.settings_dict
        self.name = settings["NAME"]
        self.params = {"host": settings["HOST"] or "127.0.0.1", "port": settings["PORT"] or 5432,
                       "user": settings["USER"], "dbname": "postgres", "autocommit": True}  # fmt: skip

    def terminate(self) -> int:
        with psycopg.connect(**self.params) as admin:
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [self.name]
            ).fetchall()
        return len(rows)

    def refuse(self, refusing: bool) -> None:
        with psycopg.connect(**self.params) as admin:
            admin.execute(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS {"false" if refusing else "true"}')
        if refusing:
            self.terminate()


class Workers:
    """The two controller workers, each in its own process group."""

    def __init__(self, env: dict[str, str], logdir: Path, concurrency: int) -> None:
        self.env, self.logdir, self.concurrency = env, logdir, concurrency
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> None:
        log = self.logdir / f"{name}.log"
        command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "--controllers", "-Q",
                   "reconcile", "-n", f"{name}@%h", "-c", str(self.concurrency), "--without-gossip",
                   "--without-mingle", "--without-heartbeat", "-l", "INFO",
                   "--logfile", str(log)]  # fmt: skip
        with log.open("ab") as output:
            self.processes[name] = subprocess.Popen(command, cwd=REPO, env=self.env, stdout=output,
                                                    stderr=output, start_new_session=True)  # fmt: skip

    def kill(self, name: str) -> None:
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for name, process in self.processes.items():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill(name)


# -- the run ---------------------------------------------------------------------------------------
@dataclass
class Fault:
    kind: str
    began: float
    back: float = 0.0
    canary: str = ""
    recovered: float | None = None  # seconds from `back` to the canary Succeeded in the database


@dataclass
class Watch:
    """Polls the database for the canaries' success and for the batch's end, on a thread (tolerating the
    database's faults)."""

    jobs: int
    faults: list[Fault] = field(default_factory=list)
    batch_done: float | None = None  # when every job of the batch was Succeeded in the database
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.wait(0.25):
            waiting = {f.canary: f for f in self.faults if f.canary and f.recovered is None}
            try:
                close_old_connections()
                done = set(
                    TrainingJob.objects.filter(
                        namespace="canary", name__in=list(waiting), phase="Succeeded"
                    ).values_list("name", flat=True)
                )
                if self.batch_done is None:
                    succeeded = TrainingJob.objects.exclude(namespace="canary").filter(phase="Succeeded")
                    if succeeded.count() >= self.jobs:
                        self.batch_done = time.monotonic()
            except DatabaseError:
                connection.close()
                continue
            now = time.monotonic()
            for name in done:
                waiting[name].recovered = now - waiting[name].back

    def stop(self) -> None:
        self._stop.set()


def submit(client: KubeClient, manifest: dict) -> None:
    for _attempt in range(120):  # the API server may be restarting
        try:
            client.create(TFJOB, manifest)
            return
        except Conflict:
            return
        except ApiError:
            time.sleep(0.5)
    raise SystemExit(f"could not submit {manifest['metadata']['name']}")


def install(client: KubeClient, namespaces: list[str]) -> None:
    for resource in CUSTOM_RESOURCES + KUBEFLOW_RESOURCES:
        with contextlib.suppress(Conflict):
            client.create(CRD, resource.manifest())
    for name in namespaces:
        with contextlib.suppress(Conflict):
            client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def inject(kind: str, args: argparse.Namespace, redis: PrivateRedis, database: Database, sim: Kubesim,
           workers: Workers, victim: str) -> None:  # fmt: skip
    if kind == "worker-kill":
        workers.kill(victim)
        workers.start(victim)
    elif kind == "redis-restart":
        redis.restart_empty(down_for=2.0)
    elif kind == "redis-pause":
        redis.pause()
        time.sleep(args.outage)
        redis.resume()
    elif kind == "pg-terminate":
        database.terminate()
    elif kind == "pg-refuse":
        database.refuse(True)
        try:
            time.sleep(args.outage)
        finally:
            database.refuse(False)
    elif kind == "apiserver-restart":
        sim.stop()
        time.sleep(3.0)
        sim.start()


def state(client: KubeClient, namespaces: list[str]) -> tuple[dict[tuple[str, str], str], Counter]:
    """Each job's latest true condition, and the number of pods of each job, as the cluster says."""
    jobs: dict[tuple[str, str], str] = {}
    pods: Counter[tuple[str, str]] = Counter()
    for namespace in namespaces:
        for job in client.list(TFJOB, namespace)["items"]:
            true = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
            latest = max(reversed(true), key=lambda c: c.get("lastTransitionTime") or "", default=None)
            jobs[(namespace, job["metadata"]["name"])] = latest["type"] if latest else ""
        for pod in client.list(POD, namespace)["items"]:
            pods[(namespace, (pod["metadata"].get("labels") or {}).get("argoml.io/job-name") or "")] += 1
    return jobs, pods


def converged(client: KubeClient, namespaces: list[str]) -> bool:
    try:
        jobs, _ = state(client, namespaces)
        close_old_connections()
        mirrored = TrainingJob.objects.filter(
            namespace__in=namespaces, deleted_at=None, phase="Succeeded"
        ).count()
        pods = Replica.objects.filter(namespace__in=namespaces, deleted_at=None).count()
    except (ApiError, DatabaseError, OSError):
        connection.close()
        return False
    expected_pods = sum(REPLICAS if ns != "canary" else 1 for ns, _ in jobs)
    return (
        bool(jobs)
        and all(s == "Succeeded" for s in jobs.values())
        and mirrored == len(jobs)
        and (pods == expected_pods)
    )


def problems(client: KubeClient, namespaces: list[str], expected_jobs: int) -> tuple[list[str], int, int]:
    """What is wrong at the end; and the jobs lost and the pods created more than once."""
    wrong: list[str] = []
    jobs, pods = state(client, namespaces)
    rows = TrainingJob.objects.filter(namespace__in=namespaces, deleted_at=None)
    mirrored = {(ns, name): phase for ns, name, phase in rows.values_list("namespace", "name", "phase")}
    lost = sum(1 for key, s in jobs.items() if s != "Succeeded" or mirrored.get(key) != "Succeeded")
    lost += expected_jobs - len(jobs)
    if lost:
        wrong.append(f"{lost} jobs not Succeeded in the cluster and the database")
    for (ns, job), count in pods.items():
        if count != (1 if ns == "canary" else REPLICAS):
            wrong.append(f"{ns}/{job}: {count} pods")
    uids = Counter(
        Replica.objects.filter(namespace__in=namespaces).values_list("namespace", "name").order_by()
    )  # one row per uid: a pod created twice has two
    duplicated = sum(1 for count in uids.values() if count > 1)
    if duplicated:
        wrong.append(f"{duplicated} pods created more than once")
    live = Replica.objects.filter(namespace__in=namespaces, deleted_at=None).count()
    if live != sum(pods.values()):
        wrong.append(f"{live} pods mirrored, {sum(pods.values())} in the cluster")
    return wrong, lost, duplicated


def load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--faults", type=int, default=8, help="faults of each kind")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    parser.add_argument("--gap", default="4:10", help="seconds between faults, MIN:MAX (uniform)")
    parser.add_argument("--outage", type=float, default=10.0, help="seconds of redis-pause and pg-refuse")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes of each worker")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed to converge")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="wait up to this many seconds for each fault's canary before the next gap (0: do not wait)",
    )
    args = parser.parse_args()
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"--kinds: {', '.join(sorted(unknown))} unknown; choose among {', '.join(KINDS)}")
    low, _, high = args.gap.partition(":")
    gap = (float(low), float(high or low))
    randomness = random.Random(args.seed)  # a benchmark's schedule, not a secret
    schedule = [kind for kind in kinds for _ in range(args.faults)]
    randomness.shuffle(schedule)
    conf = queue_conf_from_settings()
    print(f"conditions: {args.jobs} TFJobs x {REPLICAS} pods (2 s each) over {args.namespaces} namespaces;"
          f" 2 controller workers x prefork {args.concurrency}; write limit {DEFAULT_WRITE_QPS:g} QPS"
          f" (burst {DEFAULT_WRITE_BURST}) per process; queue lease {conf.lease:g} s, sweep"
          f" {conf.sweep_interval:g} s; {len(schedule)} faults ({args.faults} of each of {', '.join(kinds)}),"
          f" one every {gap[0]:g}-{gap[1]:g} s{' after the last canary' if args.settle else ''},"
          f" outages of {args.outage:g} s, seed {args.seed};"
          f" load average {load_average()}, {os.cpu_count()} CPUs")  # fmt: skip

    ensure_database()
    Replica.objects.all().delete()
    TrainingJob.objects.all().delete()
    namespaces = [f"team-{index}" for index in range(args.namespaces)]
    database = Database()
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as scratch:
        workdir = Path(scratch)
        redis = PrivateRedis(workdir)
        redis.start()
        sim = Kubesim(workdir)
        sim.start()
        env = {**os.environ, "REDIS_URL": redis.url(), "KUBECONFIG": str(sim.kubeconfig), "LOG_LEVEL": "INFO"}
        for name in ("KUBE_WRITE_QPS", "KUBE_WRITE_BURST"):
            env.pop(name, None)  # the shipped limit
        workers = Workers(env, workdir, args.concurrency)
        watch = Watch(args.jobs)
        watcher = threading.Thread(target=watch.run, daemon=True)
        try:
            client = client_for(sim.kubeconfig, request_timeout=10)
            install(client, [*namespaces, "canary"])
            for name in ("fault-a", "fault-b"):
                workers.start(name)
            began = time.monotonic()
            for index in range(args.jobs):
                submit(client, job_manifest("TFJob", {"Worker": REPLICAS}, name=f"job-{index}",
                                            namespace=namespaces[index % len(namespaces)],
                                            run_policy={"cleanPodPolicy": "None"}))  # fmt: skip
            watcher.start()
            for number, kind in enumerate(schedule):
                time.sleep(randomness.uniform(*gap))
                fault = Fault(kind, time.monotonic())
                inject(kind, args, redis, database, sim, workers, ("fault-a", "fault-b")[number % 2])
                fault.back = time.monotonic()
                fault.canary = f"canary-{number}"
                client = client_for(sim.kubeconfig, request_timeout=10)
                submit(client, job_manifest("TFJob", {"Worker": 1}, name=fault.canary, namespace="canary",
                                            scripts={"Worker": CANARY_SCRIPT},
                                            run_policy={"cleanPodPolicy": "None"}))  # fmt: skip
                watch.faults.append(fault)
                print(f"  {fault.back - began:6.1f} s  {kind} ({fault.back - fault.began:.1f} s)", flush=True)
                if args.settle:  # the next fault only once this one's canary is through
                    settled = time.monotonic() + args.settle
                    while fault.recovered is None and time.monotonic() < settled:
                        time.sleep(0.25)
            last_back = watch.faults[-1].back if watch.faults else began
            deadline = time.monotonic() + args.timeout
            everything = [*namespaces, "canary"]
            while not converged(client, everything):
                if time.monotonic() > deadline:
                    break
                time.sleep(1.0)
            after_last = time.monotonic() - last_back
            total = time.monotonic() - began
            time.sleep(1.0)  # the watch notes the last canaries
            wrong, lost, duplicated = problems(client, everything, args.jobs + len(schedule))
        finally:
            watch.stop()
            workers.stop_all()
            sim.stop()
            redis.stop()
            database.refuse(False)
        report(watch, kinds, lost, duplicated, after_last, total, began)
        if wrong:
            print("WRONG:\n  " + "\n  ".join(wrong[:30]))
            sys.exit(1)


def report(watch: Watch, kinds: list[str], lost: int, duplicated: int, after_last: float, total: float,
           began: float) -> None:  # fmt: skip
    """Per kind: every fault's recovery, and apart those after the batch was done (a canary then waits
    behind no backlog, so its time is the recovery itself)."""
    by_kind: dict[str, list[Fault]] = defaultdict(list)
    for fault in watch.faults:
        by_kind[fault.kind].append(fault)
    done = watch.batch_done
    print(f"the batch of {watch.jobs} jobs was Succeeded in the database "
          + (f"{done - began:.1f} s after its submission" if done else "never"))  # fmt: skip
    print(f"converged {after_last:.1f} s after the last fault was over ({total:.1f} s in all);"
          f" jobs lost {lost}, pods created twice {duplicated}")  # fmt: skip
    print("| fault | injected | canaries Succeeded | recovery: worst / median | after the batch: n, worst |")
    print("|---|---|---|---|---|")

    def seconds(values: list[float]) -> str:
        return f"{max(values):.1f} / {statistics.median(values):.1f} s" if values else "-"

    for kind in kinds:
        times = [fault.recovered for fault in by_kind[kind] if fault.recovered is not None]
        later = [f.recovered for f in by_kind[kind] if f.recovered is not None and done and f.back > done]
        worst_later = f"{len(later)}, {max(later):.1f} s" if later else "0, -"
        print(f"| {kind} | {len(by_kind[kind])} | {len(times)} | {seconds(times)} | {worst_later} |")


if __name__ == "__main__":
    main()
