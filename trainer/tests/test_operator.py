"""The TrainJob controller end to end, with real processes: `kubectl apply` a TrainJob to kubesim → the
informers of a `celery worker` (TRAINER_ENABLED on, leader-elected, the shipped write rate limiter)
mirror it into PostgreSQL and enqueue it → a reconcile reads it, its runtime and its children from the
informers' cache → pods, Service, ConfigMap and Secret in kubesim → the kubelet runs them → the status, the
pods and the history show in kubectl and the mirror.

One simulator (frozen clock) and one worker serve the module; each test has a namespace of its own.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
import redis as redis_lib
import yaml
from django.db import connection

from jobs.tests import simclock
from jobs.tests.cluster import install_crds, live_pods, pods
from jobs.tests.controller_worker import leading_controller_worker
from kube import ratelimit
from kube.controller.queue import QueueStore
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker, wait_for
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator
from trainer.models import TrainJob, TrainJobHistory, TrainJobPod
from trainer.tests.cluster import conditions, get_train_job, install_trainer, scripted, train_job

pytestmark = pytest.mark.django_db

REDIS_DB = int(os.environ.get("TRAINER_TEST_REDIS_DB", "12"))
WAIT = 30.0
_namespaces = count(1)


def redis_url() -> str:
    return f"redis://{REDIS_HOST}/{REDIS_DB}"


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.skip("the operator tests share their database with a worker process: PostgreSQL only")
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture(scope="module")
def redis() -> Iterator[redis_lib.Redis]:
    client = redis_lib.Redis.from_url(redis_url(), decode_responses=True)
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture(scope="module")
def sim(redis) -> Iterator[Simulator]:
    with running_simulator(frozen_clock=True, kubelet=True) as simulator:
        install_crds(simulator)
        install_trainer(simulator)
        simclock.publish(redis, simulator.clock.time())
        yield simulator


@pytest.fixture(scope="module")
def worker(sim, redis, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:
    env = {
        **os.environ,
        **controller_worker_env(
            "argoml-trainer-test",
            KUBE_QUEUE_LEASE_SECONDS="2.0",
            KUBE_QUEUE_BACKOFF_MAX_SECONDS="5.0",
            JOBS_CLOCK="jobs.tests.simclock.now",
            TRAINER_ENABLED="true",
            # The shipped write rate limiter, not the harness's unthrottled one.
            KUBE_WRITE_QPS=str(ratelimit.DEFAULT_WRITE_QPS),
            KUBE_WRITE_BURST=str(ratelimit.DEFAULT_WRITE_BURST),
        ),
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url(),
        "KUBECONFIG": str(sim.kubeconfig_path),
    }
    try:
        # Threads, as the image's controller command runs it: reconciles read the leader's informer cache.
        with leading_controller_worker(
            "trainer", env, tmp_path_factory.mktemp("trainer-worker"), django_db_blocker, "--pool", "threads"
        ) as running:
            yield running
    finally:
        with django_db_blocker.unblock():
            TrainJobPod.objects.all().delete()
            TrainJob.objects.all().delete()


@pytest.fixture
def ns(sim, worker) -> str:
    name = f"tj-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


def kubectl(sim: Simulator, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(sim.kubeconfig_path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def apply(sim: Simulator, manifest: dict[str, Any]) -> None:
    kubectl(sim, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))


def queue_idle(redis: redis_lib.Redis) -> bool:
    """No reconcile due or running (a requeue after a deadline waits in the future), in one atomic read."""
    return not QueueStore(redis).status("TrainJob").owed_now


def quiet(sim: Simulator, redis: redis_lib.Redis) -> None:
    """Wait until the cluster stops changing and no reconcile is owed."""
    last = [sim.store.resource_version, 0]

    def settled() -> bool:
        sim.store.wait_idle()
        version = sim.store.resource_version
        if version != last[0] or not queue_idle(redis):
            last[:] = [version, 0]
            return False
        last[1] += 1
        return last[1] >= 10

    wait_for(settled, WAIT, "the controller to settle")


def advance(sim: Simulator, redis: redis_lib.Redis, seconds: int) -> None:
    for _ in range(seconds):
        simclock.publish(redis, sim.clock.time() + 1)
        sim.advance(1)
        quiet(sim, redis)


def row(namespace: str, name: str) -> TrainJob | None:
    return TrainJob.objects.filter(namespace=namespace, name=name).order_by("-id").first()


def test_a_torch_trainjob_applied_with_kubectl_runs_to_complete_and_shows_in_the_mirror(sim, redis, ns):
    job = train_job("mnist", ns, "torch-distributed", trainer={"numNodes": 2})
    apply(sim, scripted(job, {"node": {"duration": 3}}))
    wait_for(lambda: set(pods(sim, ns)) == {"mnist-node-0-0", "mnist-node-0-1"}, WAIT, "two node pods")
    quiet(sim, redis)
    advance(sim, redis, 1)
    wait_for(lambda: (row(ns, "mnist") or TrainJob()).phase == "Running", WAIT, "the mirror to say Running")
    advance(sim, redis, 3)
    wait_for(lambda: (row(ns, "mnist") or TrainJob()).phase == "Complete", WAIT, "the mirror to say Complete")

    assert conditions(get_train_job(sim, ns, "mnist")) == {"Complete": ("True", "AllJobsCompleted")}
    mirrored = row(ns, "mnist")
    assert (mirrored.runtime_kind, mirrored.runtime_name) == ("ClusterTrainingRuntime", "torch-distributed")
    assert mirrored.runtime_generation == 1
    assert mirrored.state_reason == "AllJobsCompleted"
    assert mirrored.steps_summary == "node 1 succeeded"
    assert mirrored.completion_time is not None
    # By id: a transition without a condition (Created, Running) is stamped when seen, others with the
    # condition's (simulated) time.
    rows = TrainJobHistory.objects.filter(resource=mirrored).order_by("id")
    assert list(rows.values_list("phase", flat=True)) == ["Created", "Running", "Complete"]
    pod_rows = TrainJobPod.objects.filter(train_job_id=mirrored.uid).order_by("completion_index")
    assert [(p.step, p.job_index, p.completion_index, p.phase, p.exit_code) for p in pod_rows] == [
        ("node", 0, 0, "Succeeded", 0),
        ("node", 0, 1, "Succeeded", 0),
    ]


def test_a_deepspeed_trainjob_reads_its_runtime_and_hostfile_from_the_cache_and_stops_its_nodes(
    sim, redis, ns
):
    job = train_job("ds", ns, "deepspeed-distributed", trainer={"numNodes": 2})
    apply(sim, scripted(job, {"node": {"duration": None}, "launcher": {"duration": 2}}))
    wait_for(lambda: set(pods(sim, ns)) == {"ds-node-0-0"}, WAIT, "the node pod")
    quiet(sim, redis)
    assert sim.store.get("configmaps", "ds-mpi-hostfile", ns)["data"]["hostfile"]
    assert sim.store.get("secrets", "ds-mpi-ssh-auth", ns)["type"] == "kubernetes.io/ssh-auth"
    advance(sim, redis, 1)
    wait_for(lambda: "ds-launcher-0-0" in pods(sim, ns), WAIT, "the launcher once the node is ready")
    advance(sim, redis, 3)
    wait_for(lambda: (row(ns, "ds") or TrainJob()).phase == "Complete", WAIT, "the mirror to say Complete")
    quiet(sim, redis)
    assert set(live_pods(sim, ns)) == {"ds-launcher-0-0"}


def test_suspending_with_kubectl_stops_the_pods_and_resuming_brings_them_back(sim, redis, ns):
    apply(sim, scripted(train_job("sus", ns, "torch-distributed"), {"node": {"duration": None}}))
    wait_for(lambda: set(pods(sim, ns)) == {"sus-node-0-0"}, WAIT, "the node pod")
    quiet(sim, redis)
    kubectl(sim, "patch", "trainjobs", "sus", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
    quiet(sim, redis)
    advance(sim, redis, 2)
    wait_for(lambda: live_pods(sim, ns) == {}, WAIT, "the pods to go")
    wait_for(lambda: (row(ns, "sus") or TrainJob()).phase == "Suspended", WAIT, "the mirror to say Suspended")
    kubectl(sim, "patch", "trainjobs", "sus", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
    wait_for(lambda: set(live_pods(sim, ns)) == {"sus-node-0-0"}, WAIT, "the pod to come back")
    quiet(sim, redis)
    assert conditions(get_train_job(sim, ns, "sus")) == {"Suspended": ("False", "Resumed")}
