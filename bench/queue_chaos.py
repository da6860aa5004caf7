"""Queue recovery under chaos: TFJobs on kubesim, two controller workers, repeated kill -9 of a worker.

    .venv/bin/python bench/queue_chaos.py [--jobs 200] [--kills 8] [--kill-every 6] [--concurrency 2]

Two `celery worker -Q reconcile --controllers` processes (prefork --concurrency each) with the shipped
settings (write limit KUBE_WRITE_QPS 20, queue lease, sweep and heartbeat timings) run the jobs operator
against a fresh simulator (no kubelet: pods stay Pending). All jobs are submitted at once; then every
--kill-every seconds one worker, chosen in turn, gets SIGKILL on its whole process group and a new one is
started in its place, --kills times. Convergence: every pod and service exists, every job's status and every
pod is mirrored into PostgreSQL (CHAOS_BENCH_DATABASE_URL, default database argoml_chaos_bench on
127.0.0.1:5432; created, migrated, emptied); Redis database CHAOS_BENCH_REDIS_DB (default 14; flushed) of
BENCH_REDIS_HOST (default 127.0.0.1:6379).

Per-key recovery: at each kill, the keys the victim held (running, or whose message it had received: the
queue's `reserved` entries naming it) are noted, and two times are printed (worst and median): until the
queue hands the key back (its lapsed lease recovered, its lost message resent), and until a run of it starts
(a new lease token in Redis, or the key done), which adds the wait behind the backlog that the 20 QPS write
limit builds up. Printed too: the settings and the convergence time. Exits non-zero if a job did not
converge within --timeout.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ["BENCH_DATABASE_URL"] = os.environ.get(
    "CHAOS_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/argoml_chaos_bench"
)
os.environ["JOBS_BENCH_REDIS_DB"] = os.environ.get("CHAOS_BENCH_REDIS_DB", "14")

import jobs_operator as common  # noqa: E402  (bench/ is on sys.path when run as a script)
import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from kube.controller.queue import QueueStore  # noqa: E402
from kube.controller.queue.conf import queue_conf_from_settings  # noqa: E402
from kubesim.testing import running_simulator  # noqa: E402

KIND = "TFJob"


class Watcher:
    """Samples the queue's Redis state every 50 ms; tells when each key a killed worker held ran again."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        keys = QueueStore.keys(KIND)
        self.pending, self.running, self.owner, self.reserved = keys[0], keys[1], keys[2], keys[5]
        # member -> (kill time, its lease token at the kill or None, the victim's node name)
        self.waiting: dict[str, tuple[float, str | None, str]] = {}
        self.unhanded: set[str] = set()  # members the queue has not yet handed back (resent or recovered)
        self.handed_back: list[float] = []  # kill -> its message is in the queue again (or it runs)
        self.recoveries: list[float] = []  # kill -> a run of it starts (includes waiting behind the backlog)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def killed(self, node: str, killed_at: float) -> int:
        """Note every key the killed worker (node name `node`) held; returns how many."""
        owners = self.client.hgetall(self.owner)
        # Running keys: the victim's or the survivor's (a token does not say whose); the survivor's count as
        # recovered when they finish, so they can only lower the median, never raise the worst.
        held: dict[str, str | None] = dict(owners)
        for member, worker in self.client.hgetall(self.reserved).items():
            if worker.startswith(f"{node}@"):
                held.setdefault(member, None)
        with self._lock:
            for member, token in held.items():
                if member not in self.waiting:
                    self.waiting[member] = (killed_at, token, node)
                    self.unhanded.add(member)
        return len(held)

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            owners = self.client.hgetall(self.owner)
            holders = self.client.hgetall(self.reserved)
            pending = set(self.client.zrange(self.pending, 0, -1))
            now = time.monotonic()
            with self._lock:
                for member, (killed_at, token, node) in list(self.waiting.items()):
                    current = owners.get(member)
                    if member in self.unhanded:
                        if token is not None:
                            handed = current != token  # the lapsed lease was recovered (or it finished)
                        else:
                            handed = not holders.get(member, "").startswith(f"{node}@")  # resent
                        if handed:
                            self.handed_back.append(now - killed_at)
                            self.unhanded.discard(member)
                    ran_again = current is not None and current != token
                    done = current is None and member not in pending
                    if ran_again or done:
                        if member in self.unhanded:
                            self.handed_back.append(now - killed_at)
                            self.unhanded.discard(member)
                        self.recoveries.append(now - killed_at)
                        del self.waiting[member]


def start_worker(name: str, env: dict[str, str], logdir: Path, concurrency: int) -> subprocess.Popen:
    log = logdir / f"{name}.log"
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "--controllers",
               "-Q", "reconcile", "-n", f"{name}@%h", "-c", str(concurrency), "--without-gossip",
               "--without-mingle", "--without-heartbeat", "-l", "WARNING", "--logfile", str(log)]  # fmt: skip
    with log.open("ab") as output:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=output,
                                       start_new_session=True)  # fmt: skip


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--kill-every", type=float, default=6.0, help="seconds between kills")
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes of each worker")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds allowed to converge")
    args = parser.parse_args()
    for flag in ("jobs", "namespaces", "concurrency"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag}: {getattr(args, flag)} must be at least 1")
    conf = queue_conf_from_settings()
    print(
        f"settings: {args.jobs} TFJobs x {common.REPLICAS} workers over {args.namespaces} namespaces;"
        f" 2 workers x prefork {args.concurrency}; {args.kills} SIGKILLs, one every {args.kill_every} s;"
        f" write limit {settings.KUBE_WRITE_QPS} QPS (burst {settings.KUBE_WRITE_BURST});"
        f" lease {conf.lease} s,"
        f" sweep {conf.sweep_interval} s, worker timeout {conf.worker_timeout} s,"
        f" resend after {conf.resend_after} s"
    )
    namespaces = [f"team-{index}" for index in range(args.namespaces)]
    client = redis.Redis.from_url(common.REDIS_URL, decode_responses=True)
    client.flushdb()
    common.ensure_database()
    common.empty_tables()
    watcher = Watcher(client)
    with tempfile.TemporaryDirectory(prefix="bench-chaos-") as scratch, running_simulator() as sim:
        common.prepare(sim, namespaces)
        env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path), "LOG_LEVEL": "WARNING"}
        for name in ("KUBE_WRITE_QPS", "KUBE_WRITE_BURST"):
            env.pop(name, None)  # the shipped limit
        names = ["chaos-a", "chaos-b"]
        workers = {name: start_worker(name, env, Path(scratch), args.concurrency) for name in names}
        try:
            warmup = common.job_manifest(
                "TFJob", {"Worker": common.REPLICAS}, name="warmup", namespace="warmup"
            )
            sim.store.create(warmup)
            warmed = common.mirrored_jobs(["warmup"], counted=False)
            common.wait_for(lambda: warmed() == 1, 180, "the warm-up job")
            jobs, pods = common.mirrored_jobs(namespaces, counted=False), common.mirrored_pods(namespaces)
            services = args.jobs * common.REPLICAS

            def converged() -> bool:
                created = sim.counters.count(verb="create", resource="services", code=201)
                return (common.created_pods(sim) >= services and created >= services and jobs() >= args.jobs
                        and pods() >= services)  # fmt: skip

            sim.counters.reset()
            watcher.start()
            began = time.monotonic()
            for manifest in common.manifests(args.jobs, namespaces):
                sim.store.create(manifest)
            held = 0
            for index in range(args.kills):
                time.sleep(args.kill_every)
                victim = names[index % 2]
                kill(workers[victim])
                held += watcher.killed(victim, time.monotonic())
                workers[victim] = start_worker(victim, env, Path(scratch), args.concurrency)
            common.wait_for(converged, args.timeout, "every job to converge")
            seconds = time.monotonic() - began
            common.wait_for(lambda: not watcher.waiting, 120, "every held key to run again")
        finally:
            watcher.stop()
            for process in workers.values():
                if process.poll() is None:
                    kill(process)
    connection.close()
    recoveries = watcher.recoveries
    print(f"converged: all {args.jobs} jobs ({services:,} pods and services, every job and pod mirrored)"
          f" in {seconds:.1f} s")  # fmt: skip
    if recoveries:
        handed = watcher.handed_back
        print(f"keys held by the victims at their kills: {held}")
        print(f"per-key recovery, kill -> its message is back in the queue: worst {max(handed):.1f} s,"
              f" median {statistics.median(handed):.1f} s")  # fmt: skip
        print(f"per-key recovery, kill -> a run of it starts (behind the backlog the write limit leaves):"
              f" worst {max(recoveries):.1f} s, median {statistics.median(recoveries):.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
