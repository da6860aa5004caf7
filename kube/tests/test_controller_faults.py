"""The API server going away and coming back under real controller workers: kubesim (its state kept in a
directory, on a fixed port) is stopped for longer than the leader's lease and started again from its data,
while two `celery worker --controllers` run the sample controller. The leader steps down, campaigns again,
its informers list and watch again, and every object converges, with never two leaders at once.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from itertools import pairwise
from pathlib import Path

import pytest

from kube.errors import NotFound
from kube.resources import CONFIGMAP, SECRET
from kube.tests.controller_harness import (
    NAMESPACE,
    client_for,
    configmap,
    redis_client,
    start_controller_worker,
)
from kube.tests.queue_harness import wait_for
from kube.tests.redis_server import free_port
from kube.tests.sample_controller import ENABLED_LABEL

REPO = Path(__file__).resolve().parents[2]
LEASE_NAME = "argoml-controller-faults"
LEASE_DURATION = 2.0  # controller_worker_env's
#: After kubesim is back: an informer's next attempt comes within its back-off (at most 8 s), a candidate
#: campaigns every 0.25 s; then a list and the runs.
CONVERGE_WITHIN = 20.0
ENABLED = {ENABLED_LABEL: "true"}
_LEADING = re.compile(r"^(\S+ \S+) \w+ kube\.leader (became leader|stopped leading)", re.MULTILINE)


class RestartableSimulator:
    """`python -m kubesim` on one port and one state directory, in a process of its own: stopping it drops
    every connection, as an API server going away does, and starting it again restores its objects."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.state_dir = workdir / "state"
        self.kubeconfig_path = workdir / "kubeconfig"
        self.log = workdir / "kubesim.log"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "kubesim", "--port", str(self.port), "--kubeconfig",
                   str(self.kubeconfig_path), "--state-dir", str(self.state_dir), "--insecure",
                   "--no-kubelet", "--no-argo"]  # fmt: skip
        with self.log.open("a") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO)
        assert self.process.stdout is not None
        self.process.stdout.readline()  # its address, once it serves

    def stop(self) -> None:
        """SIGTERM: it saves its objects and exits; every open connection drops."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)
        self.process = None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    restartable = RestartableSimulator(tmp_path_factory.mktemp("restartable-kubesim"))
    restartable.start()
    try:
        yield restartable
    finally:
        restartable.stop()


@pytest.fixture(scope="module")
def workers(cluster, tmp_path_factory):
    redis = redis_client()
    redis.flushdb()
    logdir = tmp_path_factory.mktemp("api-fault-workers")
    started = {
        name: start_controller_worker(name, logdir, cluster.kubeconfig_path, lease_name=LEASE_NAME)
        for name in ("a1", "a2")
    }
    try:
        for worker in started.values():
            worker.wait_ready()
        yield started
    finally:
        for worker in started.values():
            worker.stop()
        redis.flushdb()


def copy_of(client, name: str) -> dict | None:
    try:
        return client.get(SECRET, f"{name}-copy", NAMESPACE).get("data") or {}
    except NotFound:
        return None


def leading_intervals(logfile: Path) -> list[tuple[datetime, datetime | None]]:
    """When the worker led, from its log: (became leader, stopped leading or None if it still leads)."""
    intervals: list[tuple[datetime, datetime | None]] = []
    for stamp, what in _LEADING.findall(logfile.read_text(errors="replace")):
        moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
        if what == "became leader":
            intervals.append((moment, None))
        elif intervals and intervals[-1][1] is None:
            intervals[-1] = (intervals[-1][0], moment)
    return intervals


def test_the_api_server_restarting_from_its_data_the_controllers_recover_with_one_leader(cluster, workers):
    client = client_for(cluster.kubeconfig_path, request_timeout=5)
    for index in range(5):
        client.create(CONFIGMAP, configmap(f"before-{index}", {"v": "1"}, **ENABLED))
    wait_for(lambda: all(copy_of(client, f"before-{i}") for i in range(5)), 20, "the copies before")

    cluster.stop()
    time.sleep(LEASE_DURATION * 2)  # the leader cannot renew: it steps down
    cluster.start()
    back = time.monotonic()
    client = client_for(cluster.kubeconfig_path, request_timeout=5)
    client.patch(CONFIGMAP, "before-0", {"data": {"v": "2"}}, NAMESPACE)
    for index in range(5):
        client.create(CONFIGMAP, configmap(f"after-{index}", {"v": "1"}, **ENABLED))
    client.delete(SECRET, "before-1-copy", NAMESPACE)

    def converged() -> bool:
        return (
            (copy_of(client, "before-0") or {}).get("v") == "Mg=="  # base64 of "2"
            and copy_of(client, "before-1") is not None
            and all(copy_of(client, f"after-{i}") for i in range(5))
        )

    wait_for(converged, CONVERGE_WITHIN, "every object after the API server came back")
    print(f"converged {time.monotonic() - back:.1f} s after the API server was back")

    intervals = sorted(
        (start, end or datetime.max, name)
        for name, worker in workers.items()
        for start, end in leading_intervals(worker.logfile)
    )
    assert len(intervals) >= 2, intervals  # led before, stepped down, led again
    for (_, end, first), (start, _, second) in pairwise(intervals):
        assert end <= start, f"{first} and {second} led at the same time"
