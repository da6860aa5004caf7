"""A sample controller for the queue's tests and benchmark, imported by real worker processes (`-I`).

Each run of kind `Probe` records itself in Redis and does what the test scripted for that object:
  probe:sleeps:<ns/name>  list of seconds to sleep, one popped per run (no item: no sleep)
  probe:fail:<ns/name>    how many of the next runs raise
  probe:runs:<ns/name>    one JSON record per finished run {start, end, worker, failed}
  probe:starts:<ns/name>  one JSON record per started run {start, worker, pid}
Kinds of the benchmark (bench/queue_latency.py), each counting its runs per key so the bench can check that
every key ran exactly once:
  Noop  notes when it started: HSET noop:started <ns/name> <time>; HINCRBY noop:runs <ns/name> 1
  Busy  the load around it: sleeps QUEUE_BENCH_WORK_SECONDS (default 0.02, like a reconcile waiting on API
        calls), then HINCRBY busy:runs <ns/name> 1
"""

from __future__ import annotations

import json
import os
import time
from functools import cache

import redis
from celery import current_task
from django.conf import settings

from kube.controller.queue import registry as reconcilers


class ScriptedFailure(RuntimeError):
    pass


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, decode_responses=True)


def _worker() -> str:
    return current_task.request.hostname if current_task else "in-process"


def reconcile_probe(namespace: str, name: str) -> None:
    member = f"{namespace}/{name}"
    client = _redis()
    start = time.time()
    worker = _worker()
    client.rpush(f"probe:starts:{member}", json.dumps({"start": start, "worker": worker, "pid": os.getpid()}))
    sleep = client.lpop(f"probe:sleeps:{member}")
    if sleep:
        time.sleep(float(sleep))
    failed = client.decr(f"probe:fail:{member}") >= 0
    end = time.time()
    client.rpush(
        f"probe:runs:{member}", json.dumps({"start": start, "end": end, "worker": worker, "failed": failed})
    )
    if failed:
        raise ScriptedFailure(f"{member}: scripted failure")


def reconcile_noop(namespace: str, name: str) -> None:
    started = time.time()
    member = f"{namespace}/{name}"
    pipe = _redis().pipeline(transaction=False)
    pipe.hset("noop:started", member, repr(started))
    pipe.hincrby("noop:runs", member, 1)
    pipe.execute()


BUSY_WORK_SECONDS = float(os.environ.get("QUEUE_BENCH_WORK_SECONDS", "0.02"))


def reconcile_busy(namespace: str, name: str) -> None:
    time.sleep(BUSY_WORK_SECONDS)
    _redis().hincrby("busy:runs", f"{namespace}/{name}", 1)


# Kinds of the queue alone, with no resource behind them to watch: straight into the queue's table.
for _kind, _reconcile in (("Probe", reconcile_probe), ("Noop", reconcile_noop), ("Busy", reconcile_busy)):
    reconcilers.register(_kind, _reconcile)
