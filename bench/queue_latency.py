"""Reconcile queue: enqueue-to-reconcile-start latency, idle and busy, and no-op reconciles/s, real worker.

    BENCH_REDIS_HOST=127.0.0.1:6379 .venv/bin/python bench/queue_latency.py [--pool threads]
        [--concurrency 8] [--rounds 3] [--samples 400] [--spacing 0.02] [--busy-rate 150]
        [--work-ms 20] [--keys 3000]

Each round starts one `celery worker -Q reconcile -P <pool> -c <concurrency>` with the project's settings
(the shipped queue timings and Celery prefetch) on Redis database KUBE_QUEUE_BENCH_REDIS_DB (default 8;
flushed) of BENCH_REDIS_HOST (default 127.0.0.1:6379), importing the sample controller of
kube/tests/queue_controller.py. The defaults are the shipped controller worker: threads pool, 8 threads.
Each round measures:

  drain  no-op reconciles/s while the worker drains a backlog of --keys keys enqueued before it started
         (first start to last start), and the CPU time of the worker's processes per run;
  idle   latency from just before `enqueue()` to the start of the reconcile (kind Noop), one new key every
         --spacing seconds, nothing else queued;
  busy   the same latency while a second client enqueues --busy-rate new keys/s of kind Busy, each of
         which holds a pool slot for --work-ms (a reconcile waiting on API calls), arriving in bursts
         (Poisson); the offered load is busy-rate x work / concurrency of the pool's slots, and
         busy-rate / drain of the worker's own pace. Target: p99 <= 100 ms (issue 21).

The reconciles make no API calls, so no write limit applies. Every answer is checked (each key of the round
ran exactly once, and the queue ends idle); the script exits 1 when one is wrong.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
BENCH_DB = int(os.environ.get("KUBE_QUEUE_BENCH_REDIS_DB", "8"))
REDIS_HOST = os.environ.get("BENCH_REDIS_HOST", "127.0.0.1:6379")
os.environ["REDIS_URL"] = f"redis://{REDIS_HOST}/{BENCH_DB}"
os.environ["KUBE_QUEUE_TEST_REDIS_HOST"] = REDIS_HOST  # where the harness connects and points the worker

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402

from kube.controller.queue import ReconcileQueue  # noqa: E402
from kube.controller.queue.conf import queue_conf_from_settings  # noqa: E402
from kube.tests.queue_harness import (  # noqa: E402
    Worker,
    queue_for,
    queue_idle,
    redis_client,
    start_worker,
    wait_for,
)

TARGET_P99_MS = 100.0
SEED = 21  # of the busy load's arrivals
BENCH_KEYS = ("noop:started", "noop:runs", "busy:runs")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass
class Latencies:
    ms: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.ms)

    @property
    def p99(self) -> float:
        return percentile(self.ms, 0.99)

    @property
    def max(self) -> float:
        return max(self.ms)


@dataclass
class Round:
    enqueue_rate: float
    drain_rate: float
    cpu_ms_per_run: float
    idle: Latencies
    busy: Latencies
    busy_keys: int
    busy_seconds: float
    wrong: list[str] = field(default_factory=list)


def enqueue_backlog(queue: ReconcileQueue, keys: int, prefix: str) -> float:
    """Enqueue `keys` new no-op keys from one client; return enqueues/s."""
    began = time.perf_counter()
    for index in range(keys):
        queue.enqueue("Noop", "bench", f"{prefix}-{index}")
    return keys / (time.perf_counter() - began)


def worker_cpu_seconds(worker: Worker) -> float:
    """CPU time (user + system) of the worker's processes so far: its main process and any pool children,
    which share its process group."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[2]) == worker.process.pid:  # fields[2]: the process group
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def drain(client: redis.Redis, keys: int, worker: Worker) -> tuple[float, float]:
    """Reconciles/s while the worker drains the backlog (first start to last start), and the worker's CPU
    per run, in ms, over the runs after its start-up."""
    cpu_before, done_before = worker_cpu_seconds(worker), client.hlen("noop:started")
    wait_for(lambda: client.hlen("noop:started") >= keys and queue_idle(client, "Noop"), 300, "the backlog")
    cpu_ms = (worker_cpu_seconds(worker) - cpu_before) * 1000 / max(1, keys - done_before)
    started = [float(value) for value in client.hvals("noop:started")]
    return (keys - 1) / (max(started) - min(started)), cpu_ms


def enqueue_samples(queue: ReconcileQueue, samples: int, spacing: float, prefix: str) -> dict[str, float]:
    """Enqueue one new no-op key every `spacing` seconds (on a fixed schedule); member -> when enqueued."""
    enqueued: dict[str, float] = {}
    began = time.monotonic()
    for index in range(samples):
        delay = began + index * spacing - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        name = f"{prefix}-{index}"
        enqueued[f"bench/{name}"] = time.time()
        queue.enqueue("Noop", "bench", name)
    return enqueued


def latencies(client: redis.Redis, enqueued: dict[str, float], prefix: str) -> Latencies:
    """Enqueue-to-start latency of each sample, in ms, once every one has started."""
    members = list(enqueued)
    wait_for(lambda: all(client.hmget("noop:started", members)), 300, f"every {prefix} sample to start")
    started = dict(zip(members, client.hmget("noop:started", members), strict=True))
    return Latencies([(float(started[member]) - at) * 1000 for member, at in enqueued.items()])


class BusyLoad(threading.Thread):
    """Enqueues new Busy keys from its own client until stopped, `rate` per second on average, as Poisson
    arrivals (seeded, so every round offers the same bursts): watch events come in bursts, e.g. the children
    a job creates at once."""

    def __init__(self, queue: ReconcileQueue, rate: float, prefix: str, seed: int) -> None:
        super().__init__(name="busy-load", daemon=True)
        self.queue, self.rate, self.prefix = queue, rate, prefix
        self.random = random.Random(seed)
        self.stopping = threading.Event()
        self.sent = 0
        self.seconds = 0.0

    def run(self) -> None:
        began = time.monotonic()
        due = began
        while not self.stopping.is_set():
            due += self.random.expovariate(self.rate)
            delay = due - time.monotonic()
            if delay > 0 and self.stopping.wait(delay):
                break
            self.queue.enqueue("Busy", "bench", f"{self.prefix}-{self.sent}")
            self.sent += 1
        self.seconds = time.monotonic() - began


def check_round(client: redis.Redis, noop_members: list[str], busy_members: list[str]) -> list[str]:
    """Every key of the round ran exactly once and nothing is left pending, running or dirty."""
    wait_for(
        lambda: client.hlen("busy:runs") >= len(busy_members) and queue_idle(client, "Busy"),
        300,
        "the busy load to drain",
    )
    wrong = []
    for hash_name, members in (("noop:runs", noop_members), ("busy:runs", busy_members)):
        runs = client.hgetall(hash_name)
        counts = [int(runs.get(member, 0)) for member in members]
        for member, count in zip(members, counts, strict=True):
            if count != 1:
                wrong.append(f"{hash_name} {member}: ran {count} times, expected once")
        for extra in sorted(set(runs) - set(members)):
            wrong.append(f"{hash_name} {extra}: ran but was never enqueued in this round")
    for kind in ("Noop", "Busy"):
        if not queue_idle(client, kind):
            wrong.append(f"{kind}: keys still pending, running or dirty at the end of the round")
    return wrong


def run_round(number: int, args: argparse.Namespace, client: redis.Redis, queues, logdir: Path) -> Round:
    """One round on a fresh worker: the backlog is enqueued before it starts, so it drains at full speed."""
    queue, busy_queue = queues
    client.delete(*BENCH_KEYS)
    prefix = f"r{number}"
    enqueue_rate = enqueue_backlog(queue, args.keys, f"{prefix}-backlog")
    worker = start_worker(
        f"bench{number}", logdir, pool=args.pool, concurrency=args.concurrency, db=BENCH_DB, timings={}
    )
    try:
        worker.wait_ready()
        rate, cpu_ms = drain(client, args.keys, worker)
        idle_samples = enqueue_samples(queue, args.samples, args.spacing, f"{prefix}-idle")
        idle = latencies(client, idle_samples, f"{prefix}-idle")
        load = BusyLoad(busy_queue, args.busy_rate, f"{prefix}-busy", seed=SEED)
        load.start()
        time.sleep(1.0)  # let the load reach its steady state before sampling
        busy_samples = enqueue_samples(queue, args.samples, args.spacing, f"{prefix}-busy")
        load.stopping.set()  # the load lasts while samples are enqueued, not while a slow worker catches up
        load.join()
        busy = latencies(client, busy_samples, f"{prefix}-busy")
        noop_members = [
            f"bench/{prefix}-{phase}-{index}"
            for phase, count in (("backlog", args.keys), ("idle", args.samples), ("busy", args.samples))
            for index in range(count)
        ]
        busy_members = [f"bench/{prefix}-busy-{index}" for index in range(load.sent)]
        wrong = check_round(client, noop_members, busy_members)
    finally:
        worker.stop()
    return Round(enqueue_rate, rate, cpu_ms, idle, busy, load.sent, load.seconds, wrong)


def spread(values: list[float], digits: int = 1) -> str:
    """Median and range of one figure over the rounds."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f} to {max(values):.{digits}f})"


def conditions(args: argparse.Namespace) -> list[str]:
    conf = queue_conf_from_settings()
    units = "threads" if args.pool in ("threads", "solo") else "processes"
    offered = args.busy_rate * args.work_ms / 1000 / args.concurrency
    return [
        f"worker: 1 `celery worker -Q reconcile`, pool {args.pool}, {args.concurrency} {units};"
        f" prefetch multiplier {settings.CELERY_WORKER_PREFETCH_MULTIPLIER},"
        f" acks_late {settings.CELERY_TASK_ACKS_LATE}",
        f"queue timings (shipped): lease {conf.lease:g} s, sweep every {conf.sweep_interval:g} s,"
        f" heartbeat timeout {conf.worker_timeout:g} s; write limit: none applies (no API calls)",
        f"busy load: {args.busy_rate:g} new keys/s (Poisson arrivals, seed {SEED}) of {args.work_ms:g} ms"
        f" each = {offered:.0%} of the pool's {args.concurrency} slots; latency samples: {args.samples}"
        f" per phase, one every {args.spacing * 1000:g} ms",
        f"rounds: {args.rounds}; Redis {REDIS_HOST} db {BENCH_DB}; {os.cpu_count()} CPUs;"
        f" load average {'/'.join(f'{value:.1f}' for value in os.getloadavg())} at the start",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", choices=("threads", "prefork", "solo"), default="threads")
    parser.add_argument("--concurrency", type=int, default=8, help="pool threads or processes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=400, help="latency samples per phase and round")
    parser.add_argument("--spacing", type=float, default=0.02, help="seconds between latency samples")
    parser.add_argument("--busy-rate", type=float, default=150.0, help="busy load: new keys per second")
    parser.add_argument("--work-ms", type=float, default=20.0, help="busy load: milliseconds per reconcile")
    parser.add_argument("--keys", type=int, default=3000, help="keys in the backlog to drain")
    args = parser.parse_args()
    for name in ("concurrency", "rounds", "samples", "keys"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be at least 1")
    for name in ("spacing", "busy_rate", "work_ms"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')}: must be a positive number")

    for line in conditions(args):
        print(line, flush=True)
    os.environ["QUEUE_BENCH_WORK_SECONDS"] = str(args.work_ms / 1000)  # read by the worker's Busy kind
    client = redis_client(BENCH_DB)
    client.flushdb()
    conf = queue_conf_from_settings()
    queues = (queue_for(client, conf, BENCH_DB), queue_for(redis_client(BENCH_DB), conf, BENCH_DB))
    rounds: list[Round] = []
    try:
        with tempfile.TemporaryDirectory() as logdir:
            for number in range(1, args.rounds + 1):
                result = run_round(number, args, client, queues, Path(logdir))
                rounds.append(result)
                print(
                    f"round {number}: drain {result.drain_rate:,.0f}/s"
                    f" ({result.cpu_ms_per_run:.2f} ms CPU each); idle p50 {result.idle.p50:.1f} ms"
                    f" p99 {result.idle.p99:.1f} ms; busy p50 {result.busy.p50:.1f} ms p99"
                    f" {result.busy.p99:.1f} ms max {result.busy.max:.1f} ms"
                    f" ({result.busy_keys / result.busy_seconds:.0f} busy keys/s sent,"
                    f" {result.busy_keys / result.busy_seconds / result.drain_rate:.0%} of the drain rate)"
                    + (f"; {len(result.wrong)} WRONG" if result.wrong else ""),
                    flush=True,
                )
    finally:
        client.flushdb()

    busy_p99 = [r.busy.p99 for r in rounds]
    print(f"== enqueue-to-reconcile-start latency, median (range) over {len(rounds)} rounds:")
    print(
        f"   idle: p50 {spread([r.idle.p50 for r in rounds])} ms, p99 {spread([r.idle.p99 for r in rounds])}"
        f" ms, max {spread([r.idle.max for r in rounds])} ms"
    )
    met = statistics.median(busy_p99) <= TARGET_P99_MS
    print(
        f"   busy: p50 {spread([r.busy.p50 for r in rounds])} ms, p99 {spread(busy_p99)} ms,"
        f" max {spread([r.busy.max for r in rounds])} ms"
        f" (target p99 <= {TARGET_P99_MS:.0f} ms: {'met' if met else 'MISSED'})"
    )
    print(
        f"== no-op reconciles/s draining {args.keys} keys: {spread([r.drain_rate for r in rounds], 0)};"
        f" the worker's CPU per run {spread([r.cpu_ms_per_run for r in rounds], 2)} ms"
    )
    print(
        f"== enqueue: {spread([r.enqueue_rate for r in rounds], 0)} new keys/s from one client, no worker"
        " running (one Lua step + one publish each)"
    )
    wrong = [line for r in rounds for line in r.wrong]
    for line in wrong[:20]:
        print(f"WRONG: {line}")
    if wrong:
        print(f"{len(wrong)} wrong answers", file=sys.stderr)
        return 1
    print("answers: every key ran exactly once, and the queue ended idle, in every round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
