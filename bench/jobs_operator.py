"""Jobs operator throughput: N TFJobs x 4 workers submitted to kubesim, ours against a minimal Kopf operator.

    .venv/bin/python bench/jobs_operator.py [--jobs 1000] [--namespaces 10] [--concurrency 8] [--rounds 3]
        [--pool threads] [--kopf-max-workers 20] [--kopf-child-threads 8] [--skip-kopf]

Ours: one `celery worker -Q reconcile --controllers` (--pool threads: its reconciles read the informer
cache; prefork: its pool processes read the API; --concurrency threads or processes). Kopf:
bench/baselines/kopf_jobs_operator.py in one process, doing the same work with the same pure plan() and the
same mirror, tuned as Kopf's docs advise (a thread pool of settings.execution.max_workers for its synchronous
handlers; a job's children created concurrently). The two alternate over --rounds rounds (ours first in odd
rounds, Kopf first in even ones), so neither always runs on a warmer or cooler machine; each figure is
printed as the median and range over the rounds.

Both mirror jobs and pods into PostgreSQL (BENCH_DATABASE_URL, default database argoml_jobs_bench on
127.0.0.1:5432; created, migrated, emptied); ours queues on Redis database JOBS_BENCH_REDIS_DB (default 15;
flushed). Each gets a fresh simulator (real-time clock, no kubelet: pods stay Pending), one warm-up job, then
all N jobs at once, timed from the first submission until every pod exists, every job's status is mirrored
into the database and every pod is mirrored into the database. Writes are not rate-limited in either.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ["DATABASE_URL"] = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/argoml_jobs_bench"
)
REDIS_URL = f"redis://127.0.0.1:6379/{int(os.environ.get('JOBS_BENCH_REDIS_DB', '15'))}"
os.environ["REDIS_URL"] = REDIS_URL

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from jobs.models import Replica, TrainingJob  # noqa: E402
from jobs.tests.cluster import install_crds, job_manifest  # noqa: E402
from kubesim.simulator import Simulator  # noqa: E402
from kubesim.testing import running_simulator  # noqa: E402

REPLICAS = 4
WRITES_PER_JOB_MINIMUM = 2 * REPLICAS + 1  # a pod and a service per replica, one status write


@dataclass
class Run:
    name: str
    jobs: int
    seconds: float
    calls: Counter[str]
    peak_rss_mb: float
    operator_cpu: float
    simulator_cpu: float

    @property
    def throughput(self) -> float:
        return self.jobs / self.seconds

    def per_job(self, *verbs: str) -> float:
        """API calls per job whose verb is one of `verbs` (all when none is given)."""
        return sum(n for verb, n in self.calls.items() if not verbs or verb.split()[0] in verbs) / self.jobs

    def report(self) -> None:
        events = sum(n for verb, n in self.calls.items() if "events" in verb) / self.jobs
        writes = self.per_job("create", "update", "patch", "delete") - events
        print(f"== {self.name}")
        print(
            f"   {self.jobs} jobs x {REPLICAS} replicas in {self.seconds:.1f} s: {self.throughput:.1f} jobs/s"
        )
        reads = self.per_job("get", "list")
        print(
            f"   API calls per job: {self.per_job():.1f} (writes {writes:.1f}, reads {reads:.1f}, events"
            f" {events:.1f}); the minimum is {WRITES_PER_JOB_MINIMUM} writes and no reads"
        )
        print("   " + ", ".join(f"{verb}: {n / self.jobs:.2f}" for verb, n in self.calls.most_common()))
        print(f"   peak RSS (every process of the operator): {self.peak_rss_mb:.0f} MB")
        per_job_ms = 1000 * self.operator_cpu / self.jobs
        print(
            f"   CPU: operator {self.operator_cpu:.1f} s ({per_job_ms:.1f} ms per job),"
            f" simulator and benchmark {self.simulator_cpu:.1f} s"
        )


# -- processes -------------------------------------------------------------------------------------
def cpu_seconds(group: int) -> float:
    """User + system CPU time used so far by every process in a process group (children reaped included)."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:
                ticks += sum(int(value) for value in fields[11:15])
        except (OSError, ValueError, IndexError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(group: int) -> float:
    """Sum of the peak resident sets (VmHWM) of every process in a process group."""
    total_kb = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[2]) != group:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total_kb += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total_kb / 1024


@contextmanager
def process(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("ab") as output:
        child = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield child
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()


def wait_for(condition: Callable[[], bool], timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise SystemExit(f"timed out after {timeout} s waiting for {what}\n{tail}")


# -- the workload ----------------------------------------------------------------------------------
def prepare(sim: Simulator, namespaces: list[str]) -> None:
    install_crds(sim)
    for namespace in [*namespaces, "warmup"]:
        sim.store.ensure_namespace(namespace)


def manifests(jobs: int, namespaces: list[str]) -> list[dict]:
    return [
        job_manifest(
            "TFJob", {"Worker": REPLICAS}, name=f"job-{index}", namespace=namespaces[index % len(namespaces)]
        )
        for index in range(jobs)
    ]


def created_pods(sim: Simulator) -> int:
    return sim.counters.count(verb="create", resource="pods", code=201)


def measure(
    name: str,
    sim: Simulator,
    jobs: list[dict],
    done: Callable[[], bool],
    group: int,
    timeout: float,
    log: Path,
) -> Run:
    sim.counters.reset()
    operator_cpu, own_cpu = cpu_seconds(group), time.process_time()
    began = time.monotonic()
    for manifest in jobs:
        sim.store.create(manifest)
    wait_for(done, timeout, f"{name} to create every pod and status", log)
    seconds = time.monotonic() - began
    operator_cpu, own_cpu = cpu_seconds(group) - operator_cpu, time.process_time() - own_cpu
    calls = Counter({verb: n for verb, n in sim.counters.by_verb().items() if n})
    return Run(name, len(jobs), seconds, calls, peak_rss_mb(group), operator_cpu, own_cpu)


def ensure_database() -> None:
    """Create the benchmark's PostgreSQL database when missing, and migrate it."""
    if connection.vendor == "postgresql":
        import psycopg

        db = connection.settings_dict
        params = {"host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432, "user": db["USER"]}
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
                admin.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)


def empty_tables() -> None:
    Replica.objects.all().delete()
    TrainingJob.objects.all().delete()


def mirrored_jobs(namespaces: list[str]) -> Callable[[], int]:
    """How many of the jobs have their status mirrored (a row with a state)."""
    rows = TrainingJob.objects.filter(namespace__in=namespaces, deleted_at=None).exclude(phase="")
    return rows.count


def mirrored_pods(namespaces: list[str]) -> Callable[[], int]:
    """How many of the jobs' pods have a mirror row."""
    return Replica.objects.filter(namespace__in=namespaces, deleted_at=None).count


def run(name: str, command: list[str], env: dict[str, str], jobs: int, namespaces: list[str], log: Path,
        timeout: float) -> Run:  # fmt: skip
    """Start the operator on a fresh simulator, let it handle a warm-up job, then time the workload."""
    empty_tables()
    with running_simulator() as sim:
        prepare(sim, namespaces)
        with process(command, {**env, "KUBECONFIG": str(sim.kubeconfig_path)}, log) as operator:
            sim.store.create(job_manifest("TFJob", {"Worker": REPLICAS}, name="warmup", namespace="warmup"))
            wait_for(lambda: mirrored_jobs(["warmup"])() == 1, 120, f"{name}: the warm-up job", log)
            mirrored, pods = mirrored_jobs(namespaces), mirrored_pods(namespaces)

            def done() -> bool:
                children = jobs * REPLICAS
                return created_pods(sim) >= children and mirrored() >= jobs and pods() >= children

            result = measure(name, sim, manifests(jobs, namespaces), done, operator.pid, timeout, log)
    connection.close()
    return result


def run_ours(
    jobs: int, namespaces: list[str], pool: str, concurrency: int, scratch: Path, timeout: float
) -> Run:
    redis.Redis.from_url(REDIS_URL).flushdb()
    env = {**os.environ, "KUBE_WRITE_QPS": "100000", "KUBE_WRITE_BURST": "100000", "LOG_LEVEL": "WARNING"}
    log = scratch / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "--controllers",
               "-Q", "reconcile", "-P", pool, "-c", str(concurrency), "--without-gossip", "--without-mingle",
               "--without-heartbeat", "-l", "WARNING", "--logfile", str(log)]  # fmt: skip
    name = f"ours (a Celery worker, {pool} {concurrency})"
    return run(name, command, env, jobs, namespaces, log, timeout)


def run_kopf(
    jobs: int, namespaces: list[str], scratch: Path, timeout: float, threads: tuple[int, int]
) -> Run:
    kopf = Path(sys.executable).parent / "kopf"
    command = [str(kopf), "run", "--standalone", "--all-namespaces", "--quiet",
               str(REPO / "bench" / "baselines" / "kopf_jobs_operator.py")]  # fmt: skip
    max_workers, child_threads = threads
    env = {**os.environ, "KOPF_MAX_WORKERS": str(max_workers), "KOPF_CHILD_THREADS": str(child_threads)}
    name = f"Kopf (one process, {max_workers} handler threads, {child_threads} child threads)"
    return run(name, command, env, jobs, namespaces, scratch / "kopf.log", timeout)


def summary(runs: list[Run]) -> None:
    """The median and range of each operator's figures over the rounds."""

    def spread(values: list[float], unit: str, digits: int = 1) -> str:
        return f"median {statistics.median(values):.{digits}f}{unit} (range {min(values):.{digits}f}" \
               f"-{max(values):.{digits}f}{unit})"  # fmt: skip

    print(f"== {runs[0].name}: {len(runs)} rounds")
    print(f"   throughput {spread([r.throughput for r in runs], ' jobs/s')}")
    print(f"   time {spread([r.seconds for r in runs], ' s')}")
    print(f"   API calls per job {spread([r.per_job() for r in runs], '')}")
    print(f"   operator CPU per job {spread([1000 * r.operator_cpu / r.jobs for r in runs], ' ms')}")
    print(f"   peak RSS {spread([r.peak_rss_mb for r in runs], ' MB', 0)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--namespaces", type=int, default=10, help="jobs are spread over this many namespaces"
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="our worker's pool threads (default 8) or processes (2)"
    )
    parser.add_argument("--pool", choices=["threads", "prefork"], default="threads", help="our worker's pool")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed for each run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating which operator goes first")
    parser.add_argument("--kopf-max-workers", type=int, default=20, help="settings.execution.max_workers")
    parser.add_argument("--kopf-child-threads", type=int, default=8, help="threads creating children")
    parser.add_argument("--skip-kopf", action="store_true")
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = 8 if args.pool == "threads" else 2
    for flag in ("jobs", "namespaces", "concurrency", "rounds", "kopf_max_workers", "kopf_child_threads"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')}: {getattr(args, flag)} must be at least 1")
    namespaces = [f"team-{index}" for index in range(args.namespaces)]
    kopf_threads = (args.kopf_max_workers, args.kopf_child_threads)
    print(
        f"settings: {args.jobs} jobs x {REPLICAS} replicas over {args.namespaces} namespaces;"
        f" {args.rounds} rounds;"
        f" ours: 1 Celery worker, {args.pool} pool of {args.concurrency}; Kopf: 1 process,"
        f" settings.execution.max_workers {args.kopf_max_workers}, {args.kopf_child_threads} child threads;"
        " write rate limits: none (KUBE_WRITE_QPS=100000 for ours, none in Kopf)"
    )
    ours: list[Run] = []
    kopf: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as scratch:
        ensure_database()
        for round_ in range(args.rounds):
            order = ["ours", "kopf"] if round_ % 2 == 0 else ["kopf", "ours"]
            if args.skip_kopf:
                order = ["ours"]
            print(f"-- round {round_ + 1}: {' then '.join(order)}")
            for which in order:
                if which == "ours":
                    pool = (args.pool, args.concurrency)
                    ours.append(run_ours(args.jobs, namespaces, *pool, Path(scratch), args.timeout))
                    ours[-1].report()
                else:
                    kopf.append(run_kopf(args.jobs, namespaces, Path(scratch), args.timeout, kopf_threads))
                    kopf[-1].report()
    summary(ours)
    if kopf:
        summary(kopf)
        ratio = statistics.median(r.throughput for r in ours) / statistics.median(r.throughput for r in kopf)
        print(f"== ours / Kopf median throughput: {ratio:.2f}x")


if __name__ == "__main__":
    main()
