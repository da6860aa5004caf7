"""Jobs operator throughput: N TFJobs x 4 workers on kubesim; ours, a Kopf baseline, the simulator ceiling.

    .venv/bin/python bench/jobs_operator.py [--jobs 100] [--namespaces 10] [--pool threads] [--concurrency 8]
        [--rounds 3]
        [--kopf-max-workers 20] [--kopf-child-threads 8] [--skip-kopf] [--ceiling-threads T]
        [--shipped-limit [--shipped-limit-jobs 200]]

Ours: one `celery worker -Q reconcile --controllers` (--pool threads: its reconciles read the informer
cache; prefork: its pool processes read the API; --concurrency threads or processes). Kopf:
bench/baselines/kopf_jobs_operator.py in one process, doing the same work with the same pure plan() and the
same mirror, tuned as Kopf's docs advise (a thread pool of settings.execution.max_workers for its synchronous
handlers; a job's children created concurrently). Each round runs ours, Kopf and the ceiling, in that order
in odd rounds and the reverse in even ones, so no contender always runs on a warmer or cooler machine; each
figure is printed as the median and range over --rounds rounds.

The simulator's ceiling, once per round: the same N jobs stored, then --concurrency client processes
(bench/baselines/simulator_ceiling.py) of --ceiling-threads threads each (default: as many API calls as one
of our pool processes has in flight, min(JOBS_RECONCILE_PARALLEL_CALLS, replicas)) issue exactly the writes
our first reconcile makes (the status PUT, 4 Services, 4 Pods per job) and nothing else: no reads, no
events, no queue, no mirror; the plans are computed before the clock starts. Ours is printed as a fraction
of it: how close the operator comes to what this simulator on this machine can take.

--shipped-limit adds one run of ours with the write limit a default install ships (KUBE_WRITE_QPS and
KUBE_WRITE_BURST of kube/ratelimit.py, which the chart's values.yaml equals; each process has its own
bucket) over --shipped-limit-jobs jobs; the other runs lift the limit (KUBE_WRITE_QPS=100000).

Both mirror jobs and pods into PostgreSQL (BENCH_DATABASE_URL, default database argoml_jobs_bench on
127.0.0.1:5432; created, migrated, emptied); ours queues on Redis database JOBS_BENCH_REDIS_DB (default 15;
flushed) of BENCH_REDIS_HOST (default 127.0.0.1:6379). Each run gets a fresh simulator (real-time clock, no
kubelet: pods stay Pending, so every job ends the run Created), one warm-up job, then all N jobs at once,
timed from the first submission until every pod exists, every job's last status is mirrored into the
database (ours: the second status write, which counts the pods; the Kopf baseline writes one), and every
pod is mirrored into the database. Every run's answers are then checked (each job's status in the
cluster and its mirrored state agree, exactly 4 Pods and 4 Services per job, the mirrored pods are the
cluster's); the script exits non-zero when one is wrong.
"""

from __future__ import annotations

import argparse
import json
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
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ["DATABASE_URL"] = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/argoml_jobs_bench"
)
REDIS_URL = (
    f"redis://{os.environ.get('BENCH_REDIS_HOST', '127.0.0.1:6379')}"
    f"/{int(os.environ.get('JOBS_BENCH_REDIS_DB', '15'))}"
)
os.environ["REDIS_URL"] = REDIS_URL

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from benchdb import ensure_database  # noqa: E402
from django.db import connection  # noqa: E402

from jobs.models import Replica, TrainingJob  # noqa: E402
from jobs.tests.cluster import install_crds, job_manifest  # noqa: E402
from kube import ratelimit  # noqa: E402
from kube.controller import children  # noqa: E402
from kubesim.simulator import Simulator  # noqa: E402
from kubesim.testing import running_simulator  # noqa: E402

REPLICAS = 4
EVERY_POD = "every pod created"
WRITES_PER_JOB_MINIMUM = 2 * REPLICAS + 1  # a pod and a service per replica, one status write
UNLIMITED_WRITES = "100000"
KUBESIM_MODE = "kubesim in the benchmark's process, HTTP on loopback, real-time clock, no kubelet"


def shipped_write_limit() -> tuple[str, str]:
    """KUBE_WRITE_QPS and KUBE_WRITE_BURST as every process and a default Helm install ship them
    (kube/ratelimit.py; deploy/tests/test_chart.py holds the chart's values.yaml to them)."""
    return f"{ratelimit.DEFAULT_WRITE_QPS:g}", str(ratelimit.DEFAULT_WRITE_BURST)


def load_average() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


@dataclass
class Run:
    name: str
    conditions: str
    jobs: int
    seconds: float
    calls: Counter[str]
    peak_rss_mb: float
    operator_cpu: float
    simulator_cpu: float
    load_before: str
    load_after: str
    #: when the last pod was created (the cluster's work done); the rest of `seconds` waited for the mirror
    children_seconds: float = 0.0
    #: when each part of the finish line was first reached (seconds from the first submission)
    milestones: dict[str, float] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)

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
            f"   conditions: {self.conditions}; {machine()}; load average {self.load_before} at the start,"
            f" {self.load_after} at the end"
        )
        print(
            f"   {self.jobs} jobs x {REPLICAS} replicas in {self.seconds:.1f} s: {self.throughput:.1f}"
            f" jobs/s; every pod created after {self.children_seconds:.1f} s"
            f" ({self.jobs / self.children_seconds:.1f} jobs/s)"
            + (", then statuses and mirror" if self.children_seconds < self.seconds else "")
        )
        if self.milestones:
            reached = ", ".join(f"{what} {at:.1f} s" for what, at in self.milestones.items())
            print(f"   reached after: {reached}")
        reads = self.per_job("get", "list")
        print(
            f"   API calls per job: {self.per_job():.1f} (writes {writes:.1f}, reads {reads:.1f}, events"
            f" {events:.1f}); the minimum is {WRITES_PER_JOB_MINIMUM} writes and no reads"
        )
        print("   " + ", ".join(f"{verb}: {n / self.jobs:.2f}" for verb, n in self.calls.most_common()))
        print(f"   peak RSS (every process of the client): {self.peak_rss_mb:.0f} MB")
        per_job_ms = 1000 * self.operator_cpu / self.jobs
        print(
            f"   CPU: client {self.operator_cpu:.1f} s ({per_job_ms:.1f} ms per job),"
            f" simulator and benchmark {self.simulator_cpu:.1f} s"
        )
        print(f"   answers: {'all checked, all right' if not self.wrong else f'{len(self.wrong)} WRONG'}")
        for problem in self.wrong[:10]:
            print(f"     {problem}")


def machine() -> str:
    return f"{os.cpu_count()} cores; {KUBESIM_MODE}"


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
        stop(child)


def stop(child: subprocess.Popen) -> None:
    """SIGTERM the child's process group, SIGKILL it after 20 s."""
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
    """Jobs as the mutating webhook stores them (with their runPolicy: without one the operator writes it
    first, one more write per job than a deployment makes)."""
    return [
        job_manifest(
            "TFJob",
            {"Worker": REPLICAS},
            name=f"job-{index}",
            namespace=namespaces[index % len(namespaces)],
            run_policy={"cleanPodPolicy": "Running"},
        )
        for index in range(jobs)
    ]


def created_pods(sim: Simulator) -> int:
    return sim.counters.count(verb="create", resource="pods", code=201)


def measure(
    name: str,
    conditions: str,
    sim: Simulator,
    jobs: list[dict],
    done: dict[str, Callable[[], bool]],
    group: int,
    timeout: float,
    log: Path,
) -> Run:
    sim.counters.reset()
    load_before = load_average()
    operator_cpu, own_cpu = cpu_seconds(group), time.process_time()
    began = time.monotonic()
    reached: dict[str, float] = {}

    def done_noting_when() -> bool:
        """Every part of the finish line reached; each noted the first time it is."""
        for what, check in done.items():
            if what not in reached and check():
                reached[what] = time.monotonic() - began
        return len(reached) == len(done)

    for manifest in jobs:
        sim.store.create(manifest)
    wait_for(done_noting_when, timeout, f"{name} to create every pod and status", log)
    seconds = time.monotonic() - began
    operator_cpu, own_cpu = cpu_seconds(group) - operator_cpu, time.process_time() - own_cpu
    calls = Counter({verb: n for verb, n in sim.counters.by_verb().items() if n})
    return Run(
        name,
        conditions,
        len(jobs),
        seconds,
        calls,
        peak_rss_mb(group),
        operator_cpu,
        own_cpu,
        load_before,
        load_average(),
        reached[EVERY_POD],
        dict(sorted(reached.items(), key=lambda item: item[1])),
    )


def empty_tables() -> None:
    Replica.objects.all().delete()
    TrainingJob.objects.all().delete()


def mirrored_jobs(namespaces: list[str], *, counted: bool) -> Callable[[], int]:
    """How many of the jobs have their status mirrored: with `counted`, a status that counts every pod of
    theirs (ours writes it in a second status write, once the cache shows the pods; ending at the first
    state would leave most of those writes after the finish line once the mirror keeps up); without, any
    state (the Kopf baseline writes its one status with the children, as our first reconcile does)."""
    rows = TrainingJob.objects.filter(namespace__in=namespaces, deleted_at=None).exclude(phase="")
    return (rows.filter(status__replicaStatuses__Worker__active=REPLICAS) if counted else rows).count


def mirrored_pods(namespaces: list[str]) -> Callable[[], int]:
    """How many of the jobs' pods have a mirror row."""
    return Replica.objects.filter(namespace__in=namespaces, deleted_at=None).count


# -- checking the answers --------------------------------------------------------------------------
def latest_condition(job: dict) -> str:
    """The type of the condition that most recently became True (what the mirror records as the state)."""
    true = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    # Ties on the (one-second) transition time go to the later condition in the list, as Kubeflow orders them.
    latest = max(reversed(true), key=lambda c: c.get("lastTransitionTime") or "", default=None)
    return latest["type"] if latest else ""


def cluster_problems(sim: Simulator, jobs: int, namespaces: list[str]) -> list[str]:
    """What is wrong in the cluster after a run: a job without a status, or not exactly REPLICAS Pods and
    Services per job (a second create of one is a 409, so more than one 201 per child is a bug too)."""
    problems = []
    names = {(n, f"job-{i}") for i, n in ((i, namespaces[i % len(namespaces)]) for i in range(jobs))}
    stored = [
        j for j in sim.store.list("tfjobs.argoml.io")["items"] if j["metadata"]["namespace"] != "warmup"
    ]
    if {(j["metadata"]["namespace"], j["metadata"]["name"]) for j in stored} != names:
        problems.append(f"{len(stored)} jobs in the cluster, {jobs} submitted")
    problems += [
        f"{j['metadata']['namespace']}/{j['metadata']['name']}: no state in its status"
        for j in stored
        if not latest_condition(j)
    ]
    for plural in ("pods", "services"):
        owners = Counter(
            (child["metadata"]["namespace"], child["metadata"]["labels"].get("argoml.io/job-name"))
            for child in sim.store.list(plural)["items"]
            if child["metadata"]["namespace"] in namespaces
        )
        problems += [
            f"{ns}/{name}: {n} {plural}, expected {REPLICAS}"
            for (ns, name), n in owners.items()
            if n != REPLICAS
        ]
        if set(owners) != names:
            problems.append(f"{len(set(owners) ^ names)} jobs with no {plural} or {plural} of no job")
        created = sim.counters.count(verb="create", resource=plural, code=201)
        if created != jobs * REPLICAS:
            problems.append(f"{created} {plural} created (HTTP 201), expected {jobs * REPLICAS}")
    return problems


def mirror_problems(sim: Simulator, namespaces: list[str]) -> list[str]:
    """Where the database disagrees with the cluster: a job's state, or which pods exist."""
    problems = []
    in_cluster = {
        (j["metadata"]["namespace"], j["metadata"]["name"]): latest_condition(j)
        for j in sim.store.list("tfjobs.argoml.io")["items"]
        if j["metadata"]["namespace"] in namespaces
    }
    rows = TrainingJob.objects.filter(namespace__in=namespaces, deleted_at=None)
    mirrored = {(ns, name): phase for ns, name, phase in rows.values_list("namespace", "name", "phase")}
    for (ns, name), state in in_cluster.items():
        if mirrored.get((ns, name)) != state:
            problems.append(
                f"{ns}/{name}: mirrored state {mirrored.get((ns, name))!r}, the cluster's {state!r}"
            )
    pods = {
        (p["metadata"]["namespace"], p["metadata"]["name"])
        for p in sim.store.list("pods")["items"]
        if p["metadata"]["namespace"] in namespaces
    }
    replicas = Replica.objects.filter(namespace__in=namespaces, deleted_at=None)
    rows_pods = set(replicas.values_list("namespace", "name"))
    if rows_pods != pods:
        problems.append(
            f"mirrored pods differ from the cluster's: {len(rows_pods - pods)} extra,"
            f" {len(pods - rows_pods)} missing"
        )
    return problems


def settled(check: Callable[[], list[str]], seconds: float = 10.0) -> list[str]:
    """`check()`'s problems once they are gone or `seconds` passed: a status written just before the finish
    line may still be on its way to the mirror (the finish line counts rows, not their content)."""
    deadline = time.monotonic() + seconds
    while (problems := check()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return problems


# -- the runs --------------------------------------------------------------------------------------
def run(
    name: str,
    conditions: str,
    command: list[str],
    env: dict[str, str],
    jobs: int,
    namespaces: list[str],
    log: Path,
    timeout: float,
    *,
    counted: bool,
) -> Run:
    """Start the operator on a fresh simulator, let it handle a warm-up job, then time the workload until
    its last write of it is mirrored (`counted`: statuses that count the pods, see mirrored_jobs)."""
    empty_tables()
    with running_simulator() as sim:
        prepare(sim, namespaces)
        with process(command, {**env, "KUBECONFIG": str(sim.kubeconfig_path)}, log) as operator:
            sim.store.create(job_manifest("TFJob", {"Worker": REPLICAS}, name="warmup", namespace="warmup"))
            warmed = mirrored_jobs(["warmup"], counted=counted)
            wait_for(lambda: warmed() == 1, 120, f"{name}: the warm-up job", log)
            mirrored, pods = mirrored_jobs(namespaces, counted=counted), mirrored_pods(namespaces)

            children = jobs * REPLICAS
            done = {
                EVERY_POD: lambda: created_pods(sim) >= children,
                "every job's status in the database": lambda: mirrored() >= jobs,
                "every pod in the database": lambda: pods() >= children,
            }
            result = measure(
                name, conditions, sim, manifests(jobs, namespaces), done, operator.pid, timeout, log
            )
            result.wrong = cluster_problems(sim, jobs, namespaces)
            result.wrong += settled(lambda: mirror_problems(sim, namespaces))
    connection.close()
    return result


def run_ours(
    jobs: int,
    namespaces: list[str],
    pool: str,
    concurrency: int,
    scratch: Path,
    timeout: float,
    write_limit: tuple[str, str] = (UNLIMITED_WRITES, UNLIMITED_WRITES),
) -> Run:
    redis.Redis.from_url(REDIS_URL).flushdb()
    qps, burst = write_limit
    env = {**os.environ, "KUBE_WRITE_QPS": qps, "KUBE_WRITE_BURST": burst, "LOG_LEVEL": "WARNING"}
    log = scratch / "worker.log"
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "argoml_site",
        "worker",
        "--controllers",
        "-Q",
        "reconcile",
        "-P",
        pool,
        "-c",
        str(concurrency),
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "WARNING",
        "--logfile",
        str(log),
    ]
    limit = (
        "none" if qps == UNLIMITED_WRITES else f"KUBE_WRITE_QPS={qps}, KUBE_WRITE_BURST={burst} per process"
    )
    name = f"ours (a Celery worker, {pool} {concurrency})" + ("" if limit == "none" else ", shipped limit")
    conditions = (
        f"{jobs} jobs x {REPLICAS} workers over {len(namespaces)} namespaces; 1 worker process,"
        f" {pool} pool of {concurrency}, {children.parallel_calls()} parallel calls per reconcile"
        f" (JOBS_RECONCILE_PARALLEL_CALLS); write rate limit: {limit}"
    )
    return run(name, conditions, command, env, jobs, namespaces, log, timeout, counted=True)


def run_kopf(
    jobs: int, namespaces: list[str], scratch: Path, timeout: float, threads: tuple[int, int]
) -> Run:
    kopf = Path(sys.executable).parent / "kopf"
    command = [
        str(kopf),
        "run",
        "--standalone",
        "--all-namespaces",
        "--quiet",
        str(REPO / "bench" / "baselines" / "kopf_jobs_operator.py"),
    ]
    max_workers, child_threads = threads
    env = {**os.environ, "KOPF_MAX_WORKERS": str(max_workers), "KOPF_CHILD_THREADS": str(child_threads)}
    name = f"Kopf (one process, {max_workers} handler threads, {child_threads} child threads)"
    conditions = (
        f"{jobs} jobs x {REPLICAS} workers over {len(namespaces)} namespaces; 1 process,"
        f" settings.execution.max_workers {max_workers}, {child_threads} child threads;"
        " write rate limit: none"
    )
    kopf_log = scratch / "kopf.log"
    return run(name, conditions, command, env, jobs, namespaces, kopf_log, timeout, counted=False)


def run_ceiling(
    jobs: int, namespaces: list[str], processes: int, threads: int, scratch: Path, timeout: float
) -> Run:
    """The same writes from a tight client loop: what the simulator takes at that concurrency."""
    name = f"simulator ceiling ({processes} client processes x {threads} threads)"
    conditions = (
        f"{jobs} jobs x {REPLICAS} workers over {len(namespaces)} namespaces; {processes} processes x"
        f" {threads} threads = {processes * threads} calls in flight; only the writes (status PUT,"
        f" {REPLICAS} Services, {REPLICAS} Pods per job), plans computed before the clock; no mirror;"
        " write rate limit: none"
    )
    log = scratch / "ceiling.log"
    with running_simulator() as sim:
        prepare(sim, namespaces)
        stored = [sim.store.create(manifest) for manifest in manifests(jobs, namespaces)]
        jobs_file = scratch / "ceiling-jobs.json"
        jobs_file.write_text(json.dumps(stored))
        env = {
            **os.environ,
            "KUBECONFIG": str(sim.kubeconfig_path),
            "KUBE_WRITE_QPS": UNLIMITED_WRITES,
            "KUBE_WRITE_BURST": UNLIMITED_WRITES,
            "LOG_LEVEL": "WARNING",
        }
        script = str(REPO / "bench" / "baselines" / "simulator_ceiling.py")
        command = [sys.executable, script, str(jobs_file), "--processes", str(processes), "--threads",
                   str(threads), "--process"]  # fmt: skip
        with log.open("ab") as errors:  # each child holds its own copy of the descriptor
            clients = [
                subprocess.Popen(
                    [*command, str(index)],
                    cwd=REPO,
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    start_new_session=True,
                    text=True,
                )
                for index in range(processes)
            ]
        try:
            for client in clients:
                assert client.stdout is not None
                if (line := client.stdout.readline().strip()) != "ready":
                    raise SystemExit(f"{name}: a client said {line!r}\n{log.read_text()[-3000:]}")
            sim.counters.reset()
            load_before = load_average()
            own_cpu = time.process_time()
            began = time.monotonic()
            for client in clients:
                assert client.stdin is not None
                client.stdin.write("go\n")
                client.stdin.flush()
            outputs = [client.communicate(timeout=timeout)[0] for client in clients]
            seconds = time.monotonic() - began
            own_cpu = time.process_time() - own_cpu
        finally:
            for client in clients:
                stop(client)
        calls = Counter({verb: n for verb, n in sim.counters.by_verb().items() if n})
        # Each client's last words: done <seconds> <errors> <CPU seconds> <peak RSS kB>.
        reports = [next((line.split() for line in out.splitlines() if line.startswith("done ")), None)
                   for out in outputs]  # fmt: skip
        client_cpu = sum(float(report[3]) for report in reports if report)
        client_rss_mb = sum(int(report[4]) for report in reports if report) / 1024
        result = Run(name, conditions, jobs, seconds, calls, client_rss_mb, client_cpu, own_cpu, load_before,
                     load_average(), children_seconds=seconds)  # fmt: skip
        result.wrong = [
            f"a client: {output.strip()}"
            for client, output in zip(clients, outputs, strict=True)
            if client.returncode != 0
        ]
        result.wrong += cluster_problems(sim, jobs, namespaces)
        statuses = sim.counters.count(verb="update", resource="tfjobs.argoml.io/status", code=200)
        if statuses != jobs:
            result.wrong.append(f"{statuses} status writes answered 200, expected {jobs}")
    return result


def summary(runs: list[Run]) -> None:
    """The median and range of each operator's figures over the rounds."""

    def spread(values: list[float], unit: str, digits: int = 1) -> str:
        return (
            f"median {statistics.median(values):.{digits}f}{unit} (range {min(values):.{digits}f}"
            f"-{max(values):.{digits}f}{unit})"
        )

    print(f"== {runs[0].name}: {len(runs)} rounds")
    print(
        f"   conditions: {runs[0].conditions}; {machine()}; load average at the start of each round:"
        f" {', '.join(r.load_before for r in runs)}; at its end: {', '.join(r.load_after for r in runs)}"
    )
    print(f"   throughput {spread([r.throughput for r in runs], ' jobs/s')}")
    print(f"   time {spread([r.seconds for r in runs], ' s')}")
    print(f"   time until every pod was created {spread([r.children_seconds for r in runs], ' s')}")
    print(f"   API calls per job {spread([r.per_job() for r in runs], '')}")
    print(f"   client CPU per job {spread([1000 * r.operator_cpu / r.jobs for r in runs], ' ms')}")
    print(f"   peak RSS {spread([r.peak_rss_mb for r in runs], ' MB', 0)}")


def median_throughput(runs: list[Run]) -> float:
    return statistics.median(r.throughput for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument(
        "--namespaces", type=int, default=10, help="jobs are spread over this many namespaces"
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="our worker's pool threads (default 8) or processes (2)"
    )
    parser.add_argument("--pool", choices=["threads", "prefork"], default="threads", help="our worker's pool")
    parser.add_argument(
        "--timeout",
        type=float,
        help="seconds allowed for each run (default: 900, or 0.6 s per job when that is more, so 5,000 jobs"
        " on a loaded machine get 3,000 s)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating which contender goes first")
    parser.add_argument("--kopf-max-workers", type=int, default=20, help="settings.execution.max_workers")
    parser.add_argument("--kopf-child-threads", type=int, default=8, help="threads creating children")
    parser.add_argument("--skip-kopf", action="store_true")
    parser.add_argument(
        "--ceiling-threads",
        type=int,
        default=min(children.parallel_calls(), REPLICAS),
        help="threads of each ceiling client process (default: the calls one of our pool processes has in"
        " flight, min(JOBS_RECONCILE_PARALLEL_CALLS, replicas))",
    )
    parser.add_argument(
        "--shipped-limit", action="store_true", help="also run ours with the chart's KUBE_WRITE_QPS/BURST"
    )
    parser.add_argument("--shipped-limit-jobs", type=int, default=200, help="jobs of that run")
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = 8 if args.pool == "threads" else 2
    for flag in (
        "jobs",
        "namespaces",
        "concurrency",
        "rounds",
        "kopf_max_workers",
        "kopf_child_threads",
        "ceiling_threads",
        "shipped_limit_jobs",
    ):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')}: {getattr(args, flag)} must be at least 1")
    if args.timeout is None:
        args.timeout = max(900.0, 0.6 * max(args.jobs, args.shipped_limit_jobs))
    namespaces = [f"team-{index}" for index in range(args.namespaces)]
    kopf_threads = (args.kopf_max_workers, args.kopf_child_threads)
    shipped = shipped_write_limit()
    print(
        f"settings: {args.jobs} jobs x {REPLICAS} workers over {args.namespaces} namespaces; {args.rounds}"
        f" rounds; ours: 1 Celery worker, {args.pool} pool of {args.concurrency},"
        f" {children.parallel_calls()} parallel calls per reconcile; Kopf: "
        + (
            "skipped"
            if args.skip_kopf
            else f"1 process, settings.execution.max_workers"
            f" {args.kopf_max_workers}, {args.kopf_child_threads} child threads"
        )
        + f"; ceiling: {args.concurrency} processes x {args.ceiling_threads} threads;"
        f" write rate limits: none (KUBE_WRITE_QPS={UNLIMITED_WRITES} for ours, none in Kopf)"
        + (
            f"; plus ours over {args.shipped_limit_jobs} jobs with the shipped KUBE_WRITE_QPS={shipped[0]},"
            f" KUBE_WRITE_BURST={shipped[1]} (kube/ratelimit.py, the chart's default)"
            if args.shipped_limit
            else ""
        )
        + f"; {machine()}; load average {load_average()}"
    )
    ours: list[Run] = []
    kopf: list[Run] = []
    ceiling: list[Run] = []
    limited: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as scratch_name:
        scratch = Path(scratch_name)
        ensure_database()
        for round_ in range(args.rounds):
            order = ["ours", "kopf", "ceiling"] if round_ % 2 == 0 else ["ceiling", "kopf", "ours"]
            if args.skip_kopf:
                order.remove("kopf")
            print(f"-- round {round_ + 1}: {' then '.join(order)}", flush=True)
            for which in order:
                if which == "ours":
                    ours.append(
                        run_ours(args.jobs, namespaces, args.pool, args.concurrency, scratch, args.timeout)
                    )
                    ours[-1].report()
                elif which == "kopf":
                    kopf.append(run_kopf(args.jobs, namespaces, scratch, args.timeout, kopf_threads))
                    kopf[-1].report()
                else:
                    ceiling.append(
                        run_ceiling(
                            args.jobs,
                            namespaces,
                            args.concurrency,
                            args.ceiling_threads,
                            scratch,
                            args.timeout,
                        )
                    )
                    ceiling[-1].report()
                sys.stdout.flush()
        if args.shipped_limit:
            print("-- the shipped write limit", flush=True)
            limited.append(
                run_ours(
                    args.shipped_limit_jobs,
                    namespaces,
                    args.pool,
                    args.concurrency,
                    scratch,
                    args.timeout,
                    shipped,
                )
            )
            limited[-1].report()
    for runs in (ours, kopf, ceiling):
        if runs:
            summary(runs)
    fraction = median_throughput(ours) / median_throughput(ceiling)
    print(f"== ours / simulator ceiling, median throughput: {fraction:.2f} (aim: at least 0.5)")
    if kopf:
        print(f"== ours / Kopf, median throughput: {median_throughput(ours) / median_throughput(kopf):.2f}x")
    if limited:
        default = limited[0]
        print(
            f"== a default install (shipped limit, {default.jobs} jobs): {default.throughput:.1f} jobs/s,"
            f" {default.per_job('create', 'update', 'patch', 'delete'):.1f} writes per job (events included)"
        )
    wrong = [(run.name, problem) for run in [*ours, *kopf, *ceiling, *limited] for problem in run.wrong]
    if wrong:
        for name, problem in wrong[:20]:
            print(f"WRONG: {name}: {problem}")
        raise SystemExit(f"{len(wrong)} wrong answers")


if __name__ == "__main__":
    main()
