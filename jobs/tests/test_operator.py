"""The operator end to end, with real processes: `kubectl apply` a job to kubesim → the informers of a
`celery worker` (controllers on, leader-elected) mirror it into PostgreSQL and enqueue it → a pool process
reconciles it → pods and services in kubesim → the simulated kubelet runs them → the job's status, its
replicas and its history show in kubectl, the admin and the API.

One simulator (frozen clock) and one worker serve the whole module; each test has a namespace of its own.
Simulated time moves only when a test advances it; the worker reads it through Redis (simclock.py).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
import redis as redis_lib
import yaml
from django.db import connection

from jobs.frameworks import framework_class
from jobs.models import Replica, TrainingJob, TrainingJobHistory
from jobs.tests import simclock
from jobs.tests.cluster import (
    condition,
    env_of,
    event_reasons,
    events_about,
    get_job,
    install_crds,
    job_manifest,
    live_pods,
    pods,
    services,
    state_of,
)
from jobs.tests.controller_worker import leading_controller_worker
from jobs.tests.echo_crd import ECHOJOB
from kube.controller.queue import QueueStore
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker, wait_for
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator

# Not transactional: the test's own rows (the admin user) roll back, while what the worker commits stays
# visible (READ COMMITTED) and is namespaced per test, so no test sees another's.
pytestmark = pytest.mark.django_db


REDIS_DB = int(os.environ.get("JOBS_TEST_REDIS_DB", "13"))
T0 = datetime(2026, 6, 1, 8, 0, 0, tzinfo=UTC)
KINDS = (
    "TFJob",
    "MXJob",
    "PyTorchJob",
    "XGBoostJob",
    "JAXJob",
    "PaddleJob",
    "MPIJob",
    "EchoJob",
    "TFJob.kubeflow.org",
)
# How long the operator may take to catch up: a bound on a wait, not a figure. Each wait ends as soon as the
# cluster is quiet (0.2-0.4 s alone); under `make test`'s five processes on two cores, beside other work,
# 20 s ran out four times in one run (they pass alone), so a stuck operator is now found after 60 s.
WAIT = 60.0
_namespaces = count(1)


def redis_url() -> str:
    return f"redis://{REDIS_HOST}/{REDIS_DB}"


def database_url() -> str:
    """The test database pytest-django created, for the worker to mirror into."""
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
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_crds(simulator)
        simulator.store.create(ECHOJOB.manifest())
        simclock.publish(redis, simulator.clock.time())
        yield simulator


@pytest.fixture(scope="module")
def worker(sim, redis, django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Worker]:
    """`celery worker -Q reconcile` with the controllers on, mirroring into the test database."""
    with django_db_blocker.unblock():
        env = {
            **os.environ,
            **controller_worker_env(
                "argoml-jobs-test",
                KUBE_QUEUE_LEASE_SECONDS="2.0",
                KUBE_QUEUE_BACKOFF_MAX_SECONDS="5.0",
                JOBS_CLOCK="jobs.tests.simclock.now",
                JOBS_KUBEFLOW_V1="true",
            ),
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url(),
            "KUBECONFIG": str(sim.kubeconfig_path),
        }
    with leading_controller_worker(
        "operator",
        env,
        tmp_path_factory.mktemp("operator-worker"),
        django_db_blocker,
        "-I",
        "jobs.tests.echo_framework",
    ) as running:
        yield running


@pytest.fixture
def ns(sim, worker) -> str:
    name = f"op-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


# -- helpers -----------------------------------------------------------------------------------------
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


def advance(sim: Simulator, redis: redis_lib.Redis, seconds: int, *, step: int = 1) -> None:
    """Move simulated time `step` seconds at a time, letting the worker react in between."""
    for _ in range(0, seconds, step):
        simclock.publish(redis, sim.clock.time() + step)
        sim.advance(step)
        quiet(sim, redis)


def quiet(sim: Simulator, redis: redis_lib.Redis, timeout: float = WAIT) -> None:
    """Wait until the cluster stops changing and no reconcile is owed (the worker caught up)."""
    last = [sim.store.resource_version, 0]

    def settled() -> bool:
        sim.store.wait_idle()
        version = sim.store.resource_version
        if version != last[0] or not queue_idle(redis):
            last[:] = [version, 0]
            return False
        last[1] += 1
        return last[1] >= 10  # ~0.2 s without a change

    try:
        wait_for(settled, timeout, "the operator to settle")
    except AssertionError as timed_out:
        store = QueueStore(redis)
        owed = {kind: status for kind in KINDS if (status := store.status(kind)).owed_now}
        raise AssertionError(
            f"{timed_out}: resourceVersion {sim.store.resource_version}, owed {owed}"
        ) from None


def queue_idle(redis: redis_lib.Redis) -> bool:
    """No reconcile due or running (a requeue after a deadline or TTL waits in the future)."""
    store = QueueStore(redis)
    return not any(store.status(kind).owed_now for kind in KINDS)


def until(condition: Callable[[], Any], what: str) -> None:
    wait_for(condition, WAIT, what)


def nudge(sim: Simulator, kind: str, namespace: str, name: str) -> None:
    """Touch the job, as the periodic resync would look at it again after a timer ran out."""
    plural = framework_class(kind).plural
    patch = {"metadata": {"annotations": {"test.argoml.io/nudged": str(sim.clock.time())}}}
    sim.store.patch(f"{plural}.argoml.io", name, patch, namespace=namespace)


def row(namespace: str, name: str, kind: str = "TFJob") -> TrainingJob | None:
    return TrainingJob.objects.filter(kind=kind, namespace=namespace, name=name).order_by("-id").first()


def phase_of_row(namespace: str, name: str, kind: str = "TFJob") -> str | None:
    found = row(namespace, name, kind)
    return found.phase if found else None


def history(namespace: str, name: str, kind: str = "TFJob") -> list[str]:
    return list(
        TrainingJobHistory.objects.filter(
            resource__kind=kind, resource__namespace=namespace, resource__name=name
        )
        .order_by("at", "id")
        .values_list("phase", flat=True)
    )


def live_replicas(namespace: str, job: str) -> list[tuple[str, str]]:
    rows = Replica.objects.filter(namespace=namespace, name__startswith=f"{job}-", deleted_at=None)
    return sorted(rows.values_list("name", "phase"))


# -- the Done-when scenario ----------------------------------------------------------------------------
def test_a_tfjob_applied_with_kubectl_runs_to_success_and_shows_everywhere(
    sim, redis, ns, admin_client, tmp_path
):
    manifest = job_manifest(
        "TFJob",
        {"Chief": 1, "PS": 2, "Worker": 4},
        name="mnist",
        namespace=ns,
        scripts={"Chief": {"duration": 4}, "PS": {"duration": None}, "Worker": {"duration": 3}},
    )
    path = tmp_path / "mnist.yaml"
    path.write_text(yaml.safe_dump(manifest))
    kubectl(sim, "apply", "-f", str(path))

    names = {f"mnist-{t}-{i}" for t, n in (("chief", 1), ("ps", 2), ("worker", 4)) for i in range(n)}
    until(lambda: set(pods(sim, ns)) == names and set(services(sim, ns)) == names, "7 pods and 7 services")
    config = json.loads(env_of(pods(sim, ns)["mnist-worker-3"], "tensorflow")["TF_CONFIG"])
    assert config["task"] == {"type": "worker", "index": 3}
    assert config["cluster"]["chief"] == [f"mnist-chief-0.{ns}.svc:2222"]
    assert len(config["cluster"]["worker"]) == 4
    assert env_of(pods(sim, ns)["mnist-ps-1"], "tensorflow")["ARGOML_REPLICA_TYPE"] == "ps"
    quiet(sim, redis)

    advance(sim, redis, 2)
    until(lambda: phase_of_row(ns, "mnist") == "Running", "the mirror to say Running")
    advance(sim, redis, 4)
    until(lambda: phase_of_row(ns, "mnist") == "Succeeded", "the mirror to say Succeeded")

    # The parameter servers, still running when the chief succeeded, count as succeeded (as in Kubeflow).
    table = kubectl(sim, "get", "tfjobs", "-n", ns)
    assert "mnist" in table
    assert "Succeeded" in table
    assert "Chief 1/1 succeeded · PS 2/2 succeeded · Worker 4/4 succeeded" in table
    assert history(ns, "mnist") == ["Created", "Running", "Succeeded"]

    job = row(ns, "mnist")
    page = admin_client.get(f"/admin/jobs/trainingjob/{job.pk}/change/").content.decode()
    assert all(name in page for name in names)
    listing = admin_client.get(f"/admin/jobs/trainingjob/?namespace={ns}").content.decode()
    assert "Chief 1/1 succeeded · PS 2/2 succeeded · Worker 4/4 succeeded" in listing

    api = admin_client.get(f"/api/jobs/{job.pk}/").json()
    assert api["phase"] == "Succeeded"
    assert {r["pod_name"] for r in api["replicas"]} == names
    assert {r["phase"] for r in api["replicas"] if r["replica_type"] != "ps"} == {"Succeeded"}
    assert [h["phase"] for h in api["history"]] == ["Created", "Running", "Succeeded"]
    assert admin_client.get(f"/api/jobs/?namespace={ns}&kind=TFJob").json()["results"][0]["name"] == "mnist"

    events = dict(events_about(sim, ns, "mnist"))
    assert {"SuccessfulCreatePod", "SuccessfulCreateService", "TFJobSucceeded"} <= set(events)
    # cleanPodPolicy Running stops the parameter servers, still running when the chief succeeded.
    assert events["SuccessfulDeletePod"] == "Deleted pods: mnist-ps-0, mnist-ps-1 (cleanPodPolicy Running)"


def test_an_mxjob_runs_with_the_dmlc_environment_and_succeeds_when_worker_0_does(
    sim, redis, ns, admin_client
):
    apply(
        sim,
        job_manifest(
            "MXJob",
            {"Scheduler": 1, "Server": 1, "Worker": 2},
            name="tune",
            namespace=ns,
            scripts={
                "Scheduler": {"duration": None},
                "Server": {"duration": None},
                "Worker": {"duration": 2},
            },
        ),
    )
    until(lambda: len(pods(sim, ns)) == 4, "4 pods")
    env = env_of(pods(sim, ns)["tune-worker-1"], "mxnet")
    assert (env["DMLC_ROLE"], env["DMLC_WORKER_ID"], env["DMLC_NUM_WORKER"]) == ("worker", "1", "2")
    assert env["DMLC_PS_ROOT_URI"] == "tune-scheduler-0"
    quiet(sim, redis)
    advance(sim, redis, 4)

    until(lambda: phase_of_row(ns, "tune", "MXJob") == "Succeeded", "the MXJob to succeed")
    assert "Succeeded" in kubectl(sim, "get", "mxjobs", "-n", ns)
    pk = row(ns, "tune", "MXJob").pk
    replicas = admin_client.get(f"/api/jobs/{pk}/").json()["replicas"]
    assert {(r["replica_type"], r["phase"]) for r in replicas} >= {
        ("worker", "Succeeded"),
        ("scheduler", "Running"),
    }


def test_a_pytorchjob_gives_every_worker_its_rank_and_succeeds_with_its_master(sim, redis, ns, admin_client):
    apply(
        sim,
        job_manifest(
            "PyTorchJob",
            {"Master": 1, "Worker": 2},
            name="ddp",
            namespace=ns,
            scripts={"Master": {"duration": 3}, "Worker": {"duration": 3}},
        ),
    )
    until(lambda: len(pods(sim, ns)) == 3, "3 pods")
    env = env_of(pods(sim, ns)["ddp-worker-1"], "pytorch")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == (
        "ddp-master-0",
        "23456",
        "3",
        "2",
    )
    quiet(sim, redis)
    advance(sim, redis, 5)
    until(lambda: phase_of_row(ns, "ddp", "PyTorchJob") == "Succeeded", "the PyTorchJob to succeed")
    assert "Succeeded" in kubectl(sim, "get", "pytorchjobs", "-n", ns)
    assert history(ns, "ddp", "PyTorchJob") == ["Created", "Running", "Succeeded"]
    assert len(admin_client.get(f"/api/jobs/{row(ns, 'ddp', 'PyTorchJob').pk}/").json()["replicas"]) == 3


def test_a_workers_only_elastic_pytorchjob_meets_through_the_rendezvous_and_succeeds(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "PyTorchJob",
            {"Worker": 2},
            name="elastic",
            namespace=ns,
            scripts={"Worker": {"duration": 3}},
            elasticPolicy={"minReplicas": 1, "maxReplicas": 4, "rdzvId": "run-1", "maxRestarts": 3},
        ),
    )
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    for index in (0, 1):
        env = env_of(pods(sim, ns)[f"elastic-worker-{index}"], "pytorch")
        assert {name: env.get(name) for name in ELASTIC_ENV} == {
            "PET_RDZV_ENDPOINT": "elastic-worker-0:23456",
            "PET_RDZV_BACKEND": "c10d",
            "PET_RDZV_ID": "run-1",
            "PET_NNODES": "1:4",
            "PET_MAX_RESTARTS": "3",
            "PET_NPROC_PER_NODE": "auto",
            "PYTHONUNBUFFERED": "1",
            "MASTER_ADDR": None,
        }
    quiet(sim, redis)
    advance(sim, redis, 5)
    until(
        lambda: phase_of_row(ns, "elastic", "PyTorchJob") == "Succeeded", "the elastic PyTorchJob to succeed"
    )
    assert history(ns, "elastic", "PyTorchJob") == ["Created", "Running", "Succeeded"]
    stored = json.loads(kubectl(sim, "get", "pytorchjob", "elastic", "-n", ns, "-o", "json"))
    assert stored["spec"]["elasticPolicy"]["maxReplicas"] == 4


ELASTIC_ENV = (
    "PET_RDZV_ENDPOINT",
    "PET_RDZV_BACKEND",
    "PET_RDZV_ID",
    "PET_NNODES",
    "PET_MAX_RESTARTS",
    "PET_NPROC_PER_NODE",
    "PYTHONUNBUFFERED",
    "MASTER_ADDR",
)


def test_an_xgboostjob_ranks_workers_after_its_master_and_succeeds_with_it(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "XGBoostJob",
            {"Master": 1, "Worker": 2},
            name="xgb",
            namespace=ns,
            scripts={"Master": {"duration": 3}, "Worker": {"duration": None}},
        ),
    )
    until(lambda: len(pods(sim, ns)) == 3, "3 pods")
    env = env_of(pods(sim, ns)["xgb-worker-1"], "xgboost")
    assert {name: env[name] for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
        "MASTER_ADDR": "xgb-master-0",
        "MASTER_PORT": "9999",
        "WORLD_SIZE": "3",
        "RANK": "2",
    }
    assert env["WORKER_ADDRS"] == "xgb-worker-0,xgb-worker-1"
    quiet(sim, redis)
    advance(sim, redis, 5)
    until(lambda: phase_of_row(ns, "xgb", "XGBoostJob") == "Succeeded", "the XGBoostJob to succeed")
    assert "Succeeded" in kubectl(sim, "get", "xgboostjobs", "-n", ns)
    assert history(ns, "xgb", "XGBoostJob") == ["Created", "Running", "Succeeded"]


def test_a_jaxjob_gives_each_process_its_id_and_the_coordinator_and_succeeds(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "JAXJob",
            {"Worker": 2},
            name="spmd",
            namespace=ns,
            scripts={"Worker": {"duration": 3}},
        ),
    )
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    env = env_of(pods(sim, ns)["spmd-worker-1"], "jax")
    assert (env["COORDINATOR_ADDRESS"], env["COORDINATOR_PORT"]) == ("spmd-worker-0", "6666")
    assert (env["NUM_PROCESSES"], env["PROCESS_ID"]) == ("2", "1")
    quiet(sim, redis)
    advance(sim, redis, 5)
    until(lambda: phase_of_row(ns, "spmd", "JAXJob") == "Succeeded", "the JAXJob to succeed")
    assert "Succeeded" in kubectl(sim, "get", "jaxjobs", "-n", ns)
    assert live_replicas(ns, "spmd") == [("spmd-worker-0", "Succeeded"), ("spmd-worker-1", "Succeeded")]


def test_kubectl_scale_adds_workers_to_a_jaxjob_through_kubeflows_scale_subresource(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "JAXJob", {"Worker": 2}, name="grow", namespace=ns, scripts={"Worker": {"duration": None}}
        ),
    )
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    quiet(sim, redis)
    kubectl(sim, "scale", "jaxjob", "grow", "-n", ns, "--replicas=3")
    until(lambda: len(live_pods(sim, ns)) == 3, "a third worker")
    assert env_of(pods(sim, ns)["grow-worker-2"], "jax")["PROCESS_ID"] == "2"
    quiet(sim, redis)
    selector = kubectl(
        sim, "get", "jaxjob", "grow", "-n", ns, "-o", "jsonpath={.status.replicaStatuses.Worker.selector}"
    )
    assert selector == "argoml.io/job-name=grow,argoml.io/replica-type=worker"


def test_a_collective_paddlejob_meets_at_worker_0s_own_address_and_succeeds(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "PaddleJob",
            {"Worker": 2},
            name="resnet",
            namespace=ns,
            scripts={"Worker": {"duration": 3}},
        ),
    )
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    first = next(c for c in pods(sim, ns)["resnet-worker-0"]["spec"]["containers"] if c["name"] == "paddle")
    pod_ip = next(e for e in first["env"] if e["name"] == "POD_IP_DUMMY")
    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env_of(pods(sim, ns)["resnet-worker-0"], "paddle")["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
    env = env_of(pods(sim, ns)["resnet-worker-1"], "paddle")
    assert (env["PADDLE_MASTER"], env["PADDLE_NNODES"], env["PADDLE_JOB_ID"]) == (
        "resnet-worker-0:36543",
        "2",
        "resnet",
    )
    quiet(sim, redis)
    advance(sim, redis, 5)
    until(lambda: phase_of_row(ns, "resnet", "PaddleJob") == "Succeeded", "the PaddleJob to succeed")
    assert "Succeeded" in kubectl(sim, "get", "paddlejobs", "-n", ns)


def test_an_mpijob_gets_hostfile_ssh_key_and_workers_then_its_launcher_and_succeeds_with_it(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "MPIJob", {"Launcher": 1, "Worker": 2}, name="pi", namespace=ns, slotsPerWorker=2,
            scripts={"Launcher": {"duration": 3}, "Worker": {"duration": None}},
            run_policy={"cleanPodPolicy": "Running"},
        ),
    )  # fmt: skip
    until(lambda: set(pods(sim, ns)) == {"pi-launcher-0", "pi-worker-0", "pi-worker-1"}, "workers, launcher")
    quiet(sim, redis)  # the launcher's event is recorded after the pod is created
    creations = [
        note for reason, note in events_about(sim, ns, "pi") if reason.startswith("SuccessfulCreate")
    ]
    # One run creates what the pods mount, the job's Service and the workers (its events are recorded
    # concurrently, in no set order); the launcher comes in a later run, once the workers exist.
    assert set(creations[:4]) == {
        "Created configmap: pi-config",
        "Created secret: pi-ssh",
        "Created service: pi",
        "Created pods: pi-worker-0, pi-worker-1",
    }
    assert creations[4:] == ["Created pod: pi-launcher-0"]
    hostfile = sim.store.get("configmaps", "pi-config", ns)["data"]["hostfile"]
    assert hostfile == f"pi-worker-0.pi.{ns}.svc slots=2\npi-worker-1.pi.{ns}.svc slots=2\n"
    secret = sim.store.get("secrets", "pi-ssh", ns)
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ssh-ed25519 ")
    assert set(services(sim, ns)) == {"pi"}, "one headless Service for the job, none per replica"
    launcher = pods(sim, ns)["pi-launcher-0"]
    assert env_of(launcher, "mpi")["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert (launcher["spec"]["hostname"], launcher["spec"]["subdomain"]) == ("pi-launcher-0", "pi")

    advance(sim, redis, 2)
    until(lambda: phase_of_row(ns, "pi", "MPIJob") == "Running", "the mirror to say Running")
    running = f"#!/bin/sh\necho pi-worker-0.pi.{ns}.svc\necho pi-worker-1.pi.{ns}.svc\n"
    discover_hosts = lambda: sim.store.get("configmaps", "pi-config", ns)["data"]["discover_hosts.sh"]  # noqa: E731
    until(lambda: discover_hosts() == running, "discover_hosts.sh to list the running workers")
    advance(sim, redis, 4)
    until(lambda: phase_of_row(ns, "pi", "MPIJob") == "Succeeded", "the launcher's success to be the job's")
    until(lambda: set(live_pods(sim, ns)) == {"pi-launcher-0"}, "cleanPodPolicy Running to stop the workers")
    assert "Succeeded" in kubectl(sim, "get", "mpijobs", "-n", ns)

    kubectl(sim, "delete", "mpijob", "pi", "-n", ns)
    until(
        lambda: not pods(sim, ns)
        and not services(sim, ns)
        and not sim.store.list("configmaps", ns)["items"]
        and not sim.store.list("secrets", ns)["items"],
        "every child to go with the job",
    )


def test_a_toy_framework_added_in_a_few_lines_runs_end_to_end(sim, redis, ns):
    echo = job_manifest("TFJob", {"Worker": 2}, name="hello", namespace=ns)
    echo.update(kind="EchoJob", spec={"echoReplicaSpecs": echo["spec"].pop("tfReplicaSpecs")})
    for replica in echo["spec"]["echoReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0]["name"] = "echo"
    apply(sim, echo)

    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    assert env_of(pods(sim, ns)["hello-worker-1"], "echo")["ECHO_PEERS"] == "hello-worker-0,hello-worker-1"
    quiet(sim, redis)
    advance(sim, redis, 4)
    until(lambda: phase_of_row(ns, "hello", "EchoJob") == "Succeeded", "the EchoJob to succeed")
    assert "Succeeded" in kubectl(sim, "get", "echojobs", "-n", ns)


# -- failures and restarts -------------------------------------------------------------------------
def test_a_failing_worker_fails_the_job_with_its_exit_code(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob",
            {"Chief": 1, "Worker": 2},
            name="nan",
            namespace=ns,
            scripts={"Chief": {"duration": None}, "Worker": {"duration": 2, "exitCode": 1, "message": "NaN"}},
        ),
    )
    until(lambda: len(pods(sim, ns)) == 3, "3 pods")
    quiet(sim, redis)
    advance(sim, redis, 4)

    until(lambda: phase_of_row(ns, "nan") == "Failed", "the job to fail")
    job = row(ns, "nan")
    assert job.state_reason == "TFJobFailed"
    assert "exited with code 1" in job.state_message
    assert history(ns, "nan") == ["Created", "Running", "Failed"]
    assert "nan-chief-0" not in live_pods(sim, ns)  # still running: stopped by cleanPodPolicy Running
    failed = Replica.objects.get(name="nan-worker-0", namespace=ns)
    assert (failed.phase, failed.exit_code) == ("Failed", 1)
    assert "TFJobFailed" in event_reasons(sim, ns, "nan")


def test_exit_code_policy_recreates_a_killed_pod_and_the_job_still_succeeds(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob", {"Worker": 2}, name="oom", namespace=ns, restart_policy="ExitCode",
            scripts={"Worker": {"duration": 3}},
        ),
    )  # fmt: skip
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    quiet(sim, redis)
    advance(sim, redis, 2)
    sim.kubelet.exit(ns, "oom-worker-0", "tensorflow", 137, "OOMKilled")
    quiet(sim, redis)

    until(lambda: Replica.objects.filter(namespace=ns, name="oom-worker-0").count() == 2, "a second pod")
    advance(sim, redis, 5)
    until(lambda: phase_of_row(ns, "oom") == "Succeeded", "the job to succeed")
    assert row(ns, "oom").restarts == 1
    attempts = Replica.objects.filter(namespace=ns, name="oom-worker-0").order_by("id")
    assert [(r.exit_code, r.deleted_at is not None) for r in attempts] == [(137, True), (0, False)]
    assert "Restarting" in history(ns, "oom")


@pytest.fixture
def quick_crash_loop(sim) -> Iterator[None]:
    """The kubelet restarts crashed containers after 1 s, 2 s, 4 s... instead of 10 s, 20 s, 40 s."""
    settings = sim.kubelet.settings
    before, settings.restart_backoff = settings.restart_backoff, 1.0
    yield
    settings.restart_backoff = before


@pytest.mark.usefixtures("quick_crash_loop")
def test_the_backoff_limit_fails_a_job_that_keeps_crashing(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "PyTorchJob", {"Master": 1}, name="crash", namespace=ns, restart_policy="OnFailure",
            scripts={"Master": {"duration": 1, "exitCode": 3}}, run_policy={"backoffLimit": 1},
        ),
    )  # fmt: skip
    until(lambda: len(pods(sim, ns)) == 1, "a pod")
    quiet(sim, redis)
    advance(sim, redis, 10)  # crash, restart in place after 1 s, crash, restart after 2 s: one too many

    until(lambda: phase_of_row(ns, "crash", "PyTorchJob") == "Failed", "the job to fail")
    assert row(ns, "crash", "PyTorchJob").state_reason == "BackoffLimitExceeded"
    assert live_pods(sim, ns) == {}


def test_the_active_deadline_fails_the_job_and_stops_its_pods(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob", {"Worker": 2}, name="late", namespace=ns, scripts={"Worker": {"duration": None}},
            run_policy={"activeDeadlineSeconds": 10},
        ),
    )  # fmt: skip
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    quiet(sim, redis)
    advance(sim, redis, 2)
    advance(sim, redis, 9, step=9)
    nudge(sim, "TFJob", ns, "late")  # the requeue asked for is 8 real seconds away: an event runs it now

    until(lambda: phase_of_row(ns, "late") == "Failed", "the deadline to fail the job")
    assert row(ns, "late").state_reason == "DeadlineExceeded"
    until(lambda: live_pods(sim, ns) == {}, "the pods to be stopped")


def test_a_finished_job_is_deleted_after_its_ttl_and_keeps_its_history(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob", {"Worker": 1}, name="brief", namespace=ns, scripts={"Worker": {"duration": 1}},
            run_policy={"ttlSecondsAfterFinished": 5},
        ),
    )  # fmt: skip
    until(lambda: len(pods(sim, ns)) == 1, "a pod")
    quiet(sim, redis)
    advance(sim, redis, 3)
    until(lambda: phase_of_row(ns, "brief") == "Succeeded", "the job to succeed")
    advance(sim, redis, 5, step=5)
    nudge(sim, "TFJob", ns, "brief")

    until(lambda: get_job(sim, "TFJob", ns, "brief") is None, "the TTL to delete the job")
    until(lambda: row(ns, "brief").deleted_at is not None, "the mirror to see the deletion")
    assert history(ns, "brief") == ["Created", "Running", "Succeeded", "Succeeded"]
    assert TrainingJobHistory.objects.filter(resource=row(ns, "brief")).last().reason == "Deleted"


def test_clean_pod_policy_all_removes_pods_and_services_and_the_replicas_stay_as_deleted(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob", {"Chief": 1, "Worker": 1}, name="tidy", namespace=ns,
            scripts={"Chief": {"duration": 1}, "Worker": {"duration": 1}},
            run_policy={"cleanPodPolicy": "All"},
        ),
    )  # fmt: skip
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    quiet(sim, redis)
    advance(sim, redis, 3)

    until(lambda: phase_of_row(ns, "tidy") == "Succeeded", "the job to succeed")
    until(lambda: pods(sim, ns) == {} and services(sim, ns) == {}, "every child to be removed")
    until(lambda: live_replicas(ns, "tidy") == [], "the replicas to be marked deleted")
    assert Replica.objects.filter(namespace=ns).count() == 2


def test_suspending_removes_the_pods_and_resuming_brings_them_back(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob", {"Worker": 2}, name="pause", namespace=ns, scripts={"Worker": {"duration": None}}
        ),
    )
    until(lambda: len(pods(sim, ns)) == 2, "2 pods")
    quiet(sim, redis)
    advance(sim, redis, 2)
    until(lambda: phase_of_row(ns, "pause") == "Running", "the job to run")

    kubectl(
        sim,
        "patch",
        "tfjob",
        "pause",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"runPolicy":{"suspend":true}}}',
    )
    until(lambda: phase_of_row(ns, "pause") == "Suspended", "the job to be suspended")
    until(lambda: live_pods(sim, ns) == {} and services(sim, ns) == {}, "the children to go")
    advance(sim, redis, 1)  # the kubelet stops them: a pod holds its name until it is gone

    kubectl(
        sim,
        "patch",
        "tfjob",
        "pause",
        "-n",
        ns,
        "--type=merge",
        "-p",
        '{"spec":{"runPolicy":{"suspend":false}}}',
    )
    until(lambda: len(live_pods(sim, ns)) == 2, "the pods to come back")
    quiet(sim, redis)
    advance(sim, redis, 2)
    until(lambda: phase_of_row(ns, "pause") == "Running", "the job to run again")
    # Resumed, the job is back to Created until its new pods run.
    assert history(ns, "pause") == ["Created", "Running", "Suspended", "Created", "Running"]
    assert TrainingJobHistory.objects.filter(resource=row(ns, "pause")).order_by("at", "id")[3].reason == (
        "TFJobResumed"
    )


def test_kueue_admits_preempts_and_readmits_a_kubeflow_tfjob_as_its_kubeflow_integration_does(sim, redis, ns):
    """Kueue's Kubeflow integration (kubernetes-sigs/kueue, pkg/controller/jobs/kubeflow): its webhook leaves
    a job with a queue-name label suspended; admitting it merges the flavour's node selector, tolerations and
    labels into each replica template and unsuspends it in one update (RunWithPodSetsInfo); preempting
    suspends it and restores the templates; Kueue frees the quota once `replicaStatuses[*].active` is 0
    (IsActive), reads a True `Running` as PodsReady and a True `Succeeded` or `Failed` as finished."""
    queued = job_manifest(
        "TFJob", {"Worker": 2}, name="queued", namespace=ns,
        scripts={"Worker": {"duration": 3}}, run_policy={"suspend": True},
    )  # fmt: skip
    queued["apiVersion"] = "kubeflow.org/v1"
    queued["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    apply(sim, queued)
    key = "TFJob.kubeflow.org"
    until(lambda: state_of(get_job(sim, key, ns, "queued")) == "Suspended", "the queued job to be suspended")
    quiet(sim, redis)
    assert pods(sim, ns) == {}
    assert active_replicas(get_job(sim, key, ns, "queued")) == 0

    def admit(flavour: str) -> str:
        template = {
            "metadata": {"labels": {"kueue.x-k8s.io/podset": "worker"}},
            "spec": {
                "nodeSelector": {"cloud.provider.com/accelerator": flavour},
                "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            },
        }
        replicas = {"Worker": {"template": template}}
        return json.dumps({"spec": {"runPolicy": {"suspend": False}, "tfReplicaSpecs": replicas}})

    kubectl(sim, "patch", "tfjobs.kubeflow.org", "queued", "-n", ns, "--type=merge", "-p", admit("a100"))
    until(lambda: len(live_pods(sim, ns)) == 2, "the admitted job's pods")
    for pod in live_pods(sim, ns).values():
        assert pod["spec"]["nodeSelector"] == {"cloud.provider.com/accelerator": "a100"}
        assert {"key": "spot", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
        assert pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] in ("0", "1")  # TAS reads it
    quiet(sim, redis)
    advance(sim, redis, 1)
    until(lambda: condition(get_job(sim, key, ns, "queued"), "Running")["status"] == "True", "PodsReady")
    assert active_replicas(get_job(sim, key, ns, "queued")) == 2

    restore = {"runPolicy": {"suspend": True}, "tfReplicaSpecs": {"Worker": {"template": {
        "metadata": {"labels": {"kueue.x-k8s.io/podset": None}},
        "spec": {"nodeSelector": None, "tolerations": None},
    }}}}  # fmt: skip
    kubectl(sim, "patch", "tfjobs.kubeflow.org", "queued", "-n", ns, "--type=merge", "-p",
            json.dumps({"spec": restore}))  # fmt: skip
    until(
        lambda: state_of(get_job(sim, key, ns, "queued")) == "Suspended", "the preempted job to be suspended"
    )
    until(lambda: live_pods(sim, ns) == {}, "the preempted pods to go")
    until(lambda: active_replicas(get_job(sim, key, ns, "queued")) == 0, "no active replica (IsActive false)")
    assert condition(get_job(sim, key, ns, "queued"), "Running")["status"] == "False"
    advance(sim, redis, 1)  # the kubelet stops them: a pod holds its name until it is gone

    kubectl(sim, "patch", "tfjobs.kubeflow.org", "queued", "-n", ns, "--type=merge", "-p", admit("h100"))
    until(lambda: len(live_pods(sim, ns)) == 2, "the readmitted job's pods")
    selectors = {
        p["spec"]["nodeSelector"]["cloud.provider.com/accelerator"] for p in live_pods(sim, ns).values()
    }
    assert selectors == {"h100"}, "the new flavour's templates, not the first admission's"
    quiet(sim, redis)
    advance(sim, redis, 5)
    until(lambda: state_of(get_job(sim, key, ns, "queued")) == "Succeeded", "the readmitted job to succeed")
    finished = condition(get_job(sim, key, ns, "queued"), "Succeeded")
    assert finished["status"] == "True"
    assert "queued" in finished["message"]
    assert get_job(sim, key, ns, "queued")["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "user-queue"
    }


def active_replicas(job: dict[str, Any] | None) -> int:
    statuses = ((job or {}).get("status") or {}).get("replicaStatuses") or {}
    return sum(int(status.get("active") or 0) for status in statuses.values())


def test_changing_the_replica_count_scales_the_job(sim, redis, ns):
    apply(
        sim,
        job_manifest(
            "TFJob", {"Worker": 4}, name="elastic", namespace=ns, scripts={"Worker": {"duration": None}}
        ),
    )
    until(lambda: len(pods(sim, ns)) == 4, "4 pods")
    quiet(sim, redis)
    advance(sim, redis, 2)

    patch = '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":2}}}}'
    kubectl(sim, "patch", "tfjob", "elastic", "-n", ns, "--type=merge", "-p", patch)
    until(lambda: set(live_pods(sim, ns)) == {"elastic-worker-0", "elastic-worker-1"}, "a scale down to 2")
    until(lambda: len(services(sim, ns)) == 2, "their services to go too")
    quiet(sim, redis)
    advance(sim, redis, 1)
    kept = ["elastic-worker-0", "elastic-worker-1"]
    until(lambda: [name for name, _ in live_replicas(ns, "elastic")] == kept, "the mirror to follow")

    patch = '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":3}}}}'
    kubectl(sim, "patch", "tfjob", "elastic", "-n", ns, "--type=merge", "-p", patch)
    until(lambda: len(live_pods(sim, ns)) == 3, "a scale up to 3")
    config = json.loads(env_of(pods(sim, ns)["elastic-worker-2"], "tensorflow")["TF_CONFIG"])
    assert len(config["cluster"]["worker"]) == 3
