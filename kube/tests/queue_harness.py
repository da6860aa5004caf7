"""Real Redis and real Celery worker processes for the queue tests and the benchmark.

Everything runs on one dedicated Redis database (TEST_REDIS_DB: KUBE_QUEUE_TEST_REDIS_DB, else the database
of REDIS_URL, else 7), which is flushed, never any other.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import redis
from celery import Celery

from kube.controller.queue import CelerySender, ObjectKey, QueueConf, QueueStore, ReconcileQueue

REPO_ROOT = Path(__file__).resolve().parents[2]


def _default_db() -> str:
    """The database of REDIS_URL when it names one (each engineer's own), else 7."""
    path = urlsplit(os.environ.get("REDIS_URL", "")).path.strip("/")
    return path if path.isdigit() else "7"


TEST_REDIS_DB = int(os.environ.get("KUBE_QUEUE_TEST_REDIS_DB") or _default_db())
REDIS_HOST = os.environ.get("KUBE_QUEUE_TEST_REDIS_HOST", "127.0.0.1:6379")


def redis_url(db: int = TEST_REDIS_DB) -> str:
    return f"redis://{REDIS_HOST}/{db}"


def redis_client(db: int = TEST_REDIS_DB) -> redis.Redis:
    return redis.Redis.from_url(redis_url(db), decode_responses=True)


@contextmanager
def emptied(connection: redis.Redis) -> Iterator[redis.Redis]:
    """`connection`'s database flushed before and after: what each test module's Redis fixture yields (the
    queue's test database, or the sample controller's records)."""
    connection.flushdb()
    try:
        yield connection
    finally:
        connection.flushdb()


class RecordingSender:
    """A queue's sender that records each (key, countdown) instead of sending a Celery message."""

    def __init__(self) -> None:
        self.sent: list[tuple[ObjectKey, float]] = []

    def __call__(self, key: ObjectKey, countdown: float) -> None:
        self.sent.append((key, countdown))


def queue_for(client: redis.Redis, conf: QueueConf, db: int = TEST_REDIS_DB) -> ReconcileQueue:
    """A queue on the test database whose messages go to the workers consuming that same database."""
    app = Celery("kube-queue-tests", broker=redis_url(db), set_as_current=False)
    return ReconcileQueue(QueueStore(client), conf, CelerySender(app))


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    logfile: Path

    @property
    def hostname_prefix(self) -> str:
        return f"{self.name}@"

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.logfile.exists() and " ready." in self.logfile.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        log = self.logfile.read_text(errors="replace") if self.logfile.exists() else "(no log)"
        raise RuntimeError(f"worker {self.name} did not become ready:\n{log[-3000:]}")

    def kill_hard(self) -> None:
        """kill -9 the whole worker: the main process and its pool children, with no chance to clean up."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill_hard()


# Queue timings short enough for tests, passed to the workers through the environment like any setting.
TEST_QUEUE_TIMINGS = {
    "KUBE_QUEUE_LEASE_SECONDS": "1.0",
    "KUBE_QUEUE_SWEEP_INTERVAL_SECONDS": "0.2",
    "KUBE_QUEUE_RESEND_AFTER_SECONDS": "5.0",
    "KUBE_QUEUE_BACKOFF_BASE_SECONDS": "0.05",
    "KUBE_QUEUE_BACKOFF_MAX_SECONDS": "30.0",
}


def start_worker(
    name: str,
    logdir: Path,
    *,
    concurrency: int = 2,
    pool: str = "prefork",
    db: int = TEST_REDIS_DB,
    timings: dict[str, str] | None = None,
) -> Worker:
    """Start `celery worker -Q reconcile` in its own process group, importing the sample controller."""
    logfile = logdir / f"{name}.log"
    env = {**os.environ, "REDIS_URL": redis_url(db)}
    env.update(TEST_QUEUE_TIMINGS if timings is None else timings)
    command = [
        *(sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "-Q", "reconcile"),
        *("-n", f"{name}@%h", "-P", pool, "-c", str(concurrency), "-I", "kube.tests.queue_controller"),
        *(
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "INFO",
            "--logfile",
            str(logfile),
        ),
    ]
    with (logdir / f"{name}.out").open("ab") as output:  # the banner and warnings; logs go to logfile
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Worker(name, process, logfile)


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def runs(client: redis.Redis, member: str) -> list[dict[str, object]]:
    """Finished runs of a Probe object, in order."""
    return [json.loads(item) for item in client.lrange(f"probe:runs:{member}", 0, -1)]


def starts(client: redis.Redis, member: str) -> list[dict[str, object]]:
    return [json.loads(item) for item in client.lrange(f"probe:starts:{member}", 0, -1)]


def queue_idle(client: redis.Redis, kind: str) -> bool:
    """Nothing pending (due or later), running or dirty for the kind, read in one atomic step."""
    status = QueueStore(client).status(kind)
    return not (status.owed_now or status.waiting)
