"""The reconcile loop against the simulator, in this process: each test calls `reconcile_job` until nothing
changes, and moves simulated time so the kubelet runs the pods. (The same behaviours through a real Celery
worker and the watch loops are in test_operator.py.)"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count

import pytest
import yaml
from django.core.management import call_command
from django.test.utils import override_settings

import limits
from jobs import conf
from jobs.reconcile import reconcile_job
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
from jobs.tests.test_elastic import ELASTIC_ENV_CASES
from kube.client import reset_client
from kube.errors import Conflict, Forbidden
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
_namespaces = count(1)


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    """One simulator (frozen clock, kubelet) for the module; the operator's clock is the simulator's."""
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_crds(simulator)
        mp = pytest.MonkeyPatch()
        mp.setattr(conf, "now", simulator.clock.now)
        with override_settings(
            KUBECONFIG=str(simulator.kubeconfig_path),
            KUBE_IN_CLUSTER=False,
            KUBE_WRITE_QPS=10_000.0,
            KUBE_WRITE_BURST=10_000,
        ):
            reset_client()
            yield simulator
        mp.undo()
        reset_client()


@pytest.fixture
def ns(sim: Simulator) -> str:
    """A namespace of the test's own."""
    name = f"reconcile-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


def fingerprint(sim: Simulator, kind: str, namespace: str, name: str) -> tuple:
    job = get_job(sim, kind, namespace, name)
    children = [
        (meta["name"], meta["uid"], bool(meta.get("deletionTimestamp")))
        for meta in (
            c["metadata"] for c in [*pods(sim, namespace).values(), *services(sim, namespace).values()]
        )
    ]
    return (job and job["metadata"]["resourceVersion"], sorted(children))


def settle(sim: Simulator, kind: str, namespace: str, name: str) -> float | None:
    """Reconcile until a run changes nothing; returns the last requested requeue."""
    for _ in range(10):
        before = fingerprint(sim, kind, namespace, name)
        requeue = reconcile_job(kind, namespace, name)
        sim.store.wait_idle()
        if fingerprint(sim, kind, namespace, name) == before:
            return requeue
    raise AssertionError(f"{kind} {namespace}/{name} keeps changing")


def play(sim: Simulator, kind: str, namespace: str, name: str, seconds: int) -> None:
    """Let `seconds` of simulated time pass one by one, reconciling after each, as watch events would."""
    for _ in range(seconds):
        sim.advance(1)
        if get_job(sim, kind, namespace, name) is not None:
            settle(sim, kind, namespace, name)


def submit(sim: Simulator, manifest: dict) -> dict:
    created = sim.store.create(manifest)
    settle(sim, manifest["kind"], manifest["metadata"]["namespace"], manifest["metadata"]["name"])
    return created


# -- the whole life of a job -------------------------------------------------------------------------
def test_an_mpijob_read_from_the_api_keeps_its_key_and_rewrites_its_hostfile_when_scaled(sim, ns):
    """The path outside the leader: children, the hostfile ConfigMap included, are listed from the API."""
    manifest = job_manifest(
        "MPIJob", {"Launcher": 1, "Worker": 1}, name="pi", namespace=ns,
        scripts={"Launcher": {"duration": None}, "Worker": {"duration": None}},
    )  # fmt: skip
    submit(sim, manifest)
    assert set(pods(sim, ns)) == {"pi-launcher-0", "pi-worker-0"}
    key = sim.store.get("secrets", "pi-ssh", ns)["data"]
    assert (
        sim.store.get("configmaps", "pi-config", ns)["data"]["hostfile"]
        == f"pi-worker-0.pi.{ns}.svc slots=1\n"
    )

    sim.store.patch(
        "mpijobs.argoml.io", "pi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}}}, namespace=ns
    )
    settle(sim, "MPIJob", ns, "pi")
    assert set(pods(sim, ns)) == {"pi-launcher-0", "pi-worker-0", "pi-worker-1"}
    hostfile = sim.store.get("configmaps", "pi-config", ns)["data"]["hostfile"]
    assert hostfile == f"pi-worker-0.pi.{ns}.svc slots=1\npi-worker-1.pi.{ns}.svc slots=1\n"
    assert sim.store.get("secrets", "pi-ssh", ns)["data"] == key, "a job keeps the key it was created with"
    assert [reason for reason in event_reasons(sim, ns, "pi") if "Failed" in reason] == []


def test_a_tfjob_gets_a_pod_and_service_per_replica_and_succeeds_when_its_chief_does(sim, ns):
    manifest = job_manifest(
        "TFJob",
        {"Chief": 1, "PS": 2, "Worker": 4},
        name="mnist",
        namespace=ns,
        scripts={"PS": {"duration": None}, "Worker": {"duration": 3}, "Chief": {"duration": 4}},
    )
    submit(sim, manifest)

    names = {f"mnist-{t}-{i}" for t, n in (("chief", 1), ("ps", 2), ("worker", 4)) for i in range(n)}
    assert set(pods(sim, ns)) == names
    assert set(services(sim, ns)) == names
    tf_config = env_of(pods(sim, ns)["mnist-worker-3"], "tensorflow")["TF_CONFIG"]
    assert f'"ps":["mnist-ps-0.{ns}.svc:2222","mnist-ps-1.{ns}.svc:2222"]' in tf_config
    assert '"task":{"type":"worker","index":3}' in tf_config
    assert state_of(get_job(sim, "TFJob", ns, "mnist")) == "Created"

    play(sim, "TFJob", ns, "mnist", 2)
    job = get_job(sim, "TFJob", ns, "mnist")
    assert state_of(job) == "Running"
    assert job["status"]["replicaSummary"] == "Chief 1/1 · PS 2/2 · Worker 4/4"

    play(sim, "TFJob", ns, "mnist", 4)
    job = get_job(sim, "TFJob", ns, "mnist")
    assert state_of(job) == "Succeeded"
    assert job["status"]["completionTime"] == "2026-05-01T09:00:05Z"
    # cleanPodPolicy defaults to Running for TF: the parameter servers still running are removed.
    assert set(live_pods(sim, ns)) == names - {"mnist-ps-0", "mnist-ps-1"}
    events = dict(events_about(sim, ns, "mnist"))
    # One event per kind and run, naming every child (not 7 events that the spam filter would thin out).
    assert events["SuccessfulCreatePod"] == "Created pods: " + ", ".join(
        ["mnist-chief-0", "mnist-ps-0", "mnist-ps-1"] + [f"mnist-worker-{i}" for i in range(4)]
    )
    assert events["SuccessfulCreateService"].startswith("Created services: mnist-chief-0, mnist-ps-0")
    assert events["SuccessfulDeletePod"] == "Deleted pods: mnist-ps-0, mnist-ps-1 (cleanPodPolicy Running)"
    assert {"TFJobCreated", "TFJobRunning", "TFJobSucceeded"} <= set(events)


def test_a_kubeflow_v1_tfjob_runs_in_its_own_group_as_kubeflow_writes_it(sim, ns):
    """Kubeflow's manifest, unchanged: no runPolicy (Kubeflow's SDK cannot read a job without one, so the
    operator writes its default), children owned in kubeflow.org, Kubeflow's labels and condition order."""
    theirs = job_manifest(
        "TFJob", {"Worker": 1}, name="mnist", namespace=ns, scripts={"Worker": {"duration": 2}}
    )
    theirs["apiVersion"] = "kubeflow.org/v1"
    sim.store.create(theirs)
    settle(sim, "TFJob.kubeflow.org", ns, "mnist")
    job = get_job(sim, "TFJob.kubeflow.org", ns, "mnist")
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}  # Kubeflow v1.9's default, not TF's own
    worker = pods(sim, ns)["mnist-worker-0"]
    assert worker["metadata"]["ownerReferences"][0]["apiVersion"] == "kubeflow.org/v1"
    assert worker["metadata"]["labels"]["training.kubeflow.org/job-name"] == "mnist"
    assert worker["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert get_job(sim, "TFJob", ns, "mnist") is None  # nothing written to our group
    for _ in range(3):
        sim.advance(1)
        settle(sim, "TFJob.kubeflow.org", ns, "mnist")
    job = get_job(sim, "TFJob.kubeflow.org", ns, "mnist")
    assert [(c["type"], c["status"]) for c in job["status"]["conditions"]] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    assert condition(job, "Succeeded")["reason"] == "TFJobSucceeded"


def test_a_kubeflow_v1_mpijob_runs_in_its_own_group_with_its_hostfile_key_and_service(sim, ns):
    """MPIJob is one of Kubeflow v1.9's kinds too: its extra children are owned in kubeflow.org and carry
    Kubeflow's operator name (mpijob-controller), and the launcher's success is the job's."""
    theirs = job_manifest(
        "MPIJob", {"Launcher": 1, "Worker": 2}, name="pi", namespace=ns,
        scripts={"Launcher": {"duration": 2}, "Worker": {"duration": None}},
    )  # fmt: skip
    theirs["apiVersion"] = "kubeflow.org/v1"
    sim.store.create(theirs)
    for _ in range(2):  # the workers first, then (once they exist) the launcher
        settle(sim, "MPIJob.kubeflow.org", ns, "pi")
    assert get_job(sim, "MPIJob.kubeflow.org", ns, "pi")["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
    assert get_job(sim, "MPIJob", ns, "pi") is None  # nothing written to our group
    assert set(pods(sim, ns)) == {"pi-launcher-0", "pi-worker-0", "pi-worker-1"}
    children = [
        *pods(sim, ns).values(),
        *services(sim, ns).values(),
        sim.store.get("configmaps", "pi-config", ns),
        sim.store.get("secrets", "pi-ssh", ns),
    ]
    for child in children:
        assert child["metadata"]["ownerReferences"][0]["apiVersion"] == "kubeflow.org/v1"
        assert child["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "mpijob-controller"
        assert child["metadata"]["labels"]["training.kubeflow.org/job-name"] == "pi"
    assert set(services(sim, ns)) == {"pi"}
    launcher = pods(sim, ns)["pi-launcher-0"]
    assert launcher["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    play(sim, "MPIJob.kubeflow.org", ns, "pi", 4)
    job = get_job(sim, "MPIJob.kubeflow.org", ns, "pi")
    assert state_of(job) == "Succeeded"
    assert condition(job, "Succeeded")["reason"] == "MPIJobSucceeded"


def test_a_worker_that_fails_under_never_fails_the_job_and_stops_the_others(sim, ns):
    manifest = job_manifest(
        "PyTorchJob",
        {"Master": 1, "Worker": 2},
        name="ddp",
        namespace=ns,
        restart_policy="Never",
        scripts={"Master": {"duration": None}, "Worker": {"duration": 2, "exitCode": 1}},
        run_policy={"cleanPodPolicy": "Running"},
    )
    submit(sim, manifest)
    play(sim, "PyTorchJob", ns, "ddp", 4)

    job = get_job(sim, "PyTorchJob", ns, "ddp")
    assert state_of(job) == "Failed"
    failed = condition(job, "Failed")
    assert failed["reason"] == "PyTorchJobFailed"
    assert "ddp-worker-0 exited with code 1" in failed["message"]
    assert "ddp-master-0" not in live_pods(sim, ns)  # stopped by cleanPodPolicy Running
    assert "PyTorchJobFailed" in event_reasons(sim, ns, "ddp")


def test_exit_code_policy_recreates_a_pod_killed_by_a_signal_and_counts_the_restart(sim, ns):
    manifest = job_manifest(
        "TFJob",
        {"Worker": 2},
        name="preempted",
        namespace=ns,
        restart_policy="ExitCode",
        scripts={"Worker": {"duration": 3}},
    )
    submit(sim, manifest)
    play(sim, "TFJob", ns, "preempted", 2)
    first_uid = pods(sim, ns)["preempted-worker-0"]["metadata"]["uid"]

    sim.kubelet.exit(ns, "preempted-worker-0", "tensorflow", 137)  # OOM-killed
    play(sim, "TFJob", ns, "preempted", 1)

    job = get_job(sim, "TFJob", ns, "preempted")
    assert pods(sim, ns)["preempted-worker-0"]["metadata"]["uid"] != first_uid
    assert job["status"]["restarts"] == 1
    assert (
        "SuccessfulDeletePod",
        "Deleted pod: preempted-worker-0 (exited with code 137; recreating it)",
    ) in (events_about(sim, ns, "preempted"))
    play(sim, "TFJob", ns, "preempted", 5)
    assert state_of(get_job(sim, "TFJob", ns, "preempted")) == "Succeeded"


def test_exit_code_policy_fails_the_job_on_the_programs_own_error(sim, ns):
    manifest = job_manifest(
        "TFJob",
        {"Worker": 2},
        name="buggy",
        namespace=ns,
        restart_policy="ExitCode",
        scripts={"Worker": {"duration": 1, "exitCode": 2}},
    )
    submit(sim, manifest)
    play(sim, "TFJob", ns, "buggy", 3)
    job = get_job(sim, "TFJob", ns, "buggy")
    assert state_of(job) == "Failed"
    assert job["status"].get("restarts", 0) == 0


def test_backoff_limit_counts_every_restart_including_recreations(sim, ns):
    manifest = job_manifest(
        "TFJob",
        {"Worker": 1},
        name="crashy",
        namespace=ns,
        restart_policy="ExitCode",
        scripts={"Worker": {"duration": 1, "exitCode": 143}},
        run_policy={"backoffLimit": 2},
    )
    submit(sim, manifest)
    play(sim, "TFJob", ns, "crashy", 12)

    job = get_job(sim, "TFJob", ns, "crashy")
    assert state_of(job) == "Failed"
    failed = condition(job, "Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    assert "would restart 3 times, more than its backoffLimit of 2" in failed["message"]
    assert job["status"]["restarts"] == 2  # the two recreations made; the third was refused


def test_the_active_deadline_fails_the_job_and_removes_its_pods(sim, ns):
    manifest = job_manifest(
        "MXJob",
        {"Scheduler": 1, "Server": 1, "Worker": 2},
        name="slow",
        namespace=ns,
        scripts={t: {"duration": None} for t in ("Scheduler", "Server", "Worker")},
        run_policy={"activeDeadlineSeconds": 30},
    )
    submit(sim, manifest)
    play(sim, "MXJob", ns, "slow", 2)
    requeue = settle(sim, "MXJob", ns, "slow")
    assert requeue == pytest.approx(28)  # the loop asks to be back when the deadline passes

    sim.advance(29)
    settle(sim, "MXJob", ns, "slow")
    job = get_job(sim, "MXJob", ns, "slow")
    assert condition(job, "Failed")["reason"] == "DeadlineExceeded"
    assert live_pods(sim, ns) == {}


def test_a_finished_job_is_deleted_once_its_ttl_passes(sim, ns):
    manifest = job_manifest(
        "PyTorchJob",
        {"Master": 1},
        name="short",
        namespace=ns,
        scripts={"Master": {"duration": 1}},
        run_policy={"ttlSecondsAfterFinished": 60},
    )
    submit(sim, manifest)
    play(sim, "PyTorchJob", ns, "short", 3)
    assert state_of(get_job(sim, "PyTorchJob", ns, "short")) == "Succeeded"
    assert settle(sim, "PyTorchJob", ns, "short") == pytest.approx(59)

    sim.advance(60)
    settle(sim, "PyTorchJob", ns, "short")
    assert get_job(sim, "PyTorchJob", ns, "short") is None
    assert pods(sim, ns) == {}  # the garbage collector followed the ownerReferences


def test_clean_pod_policy_all_removes_every_pod_and_service_once_finished(sim, ns):
    manifest = job_manifest(
        "TFJob",
        {"Chief": 1, "Worker": 2},
        name="tidy",
        namespace=ns,
        scripts={"Chief": {"duration": 1}, "Worker": {"duration": 1}},
        run_policy={"cleanPodPolicy": "All"},
    )
    submit(sim, manifest)
    play(sim, "TFJob", ns, "tidy", 3)
    assert state_of(get_job(sim, "TFJob", ns, "tidy")) == "Succeeded"
    assert pods(sim, ns) == {}
    assert services(sim, ns) == {}


def test_a_suspended_job_keeps_no_pods_and_resumes_with_new_ones(sim, ns):
    manifest = job_manifest(
        "TFJob", {"Worker": 2}, name="pausable", namespace=ns, scripts={"Worker": {"duration": None}}
    )
    submit(sim, manifest)
    play(sim, "TFJob", ns, "pausable", 2)

    sim.store.patch("tfjobs.argoml.io", "pausable", {"spec": {"runPolicy": {"suspend": True}}}, namespace=ns)
    settle(sim, "TFJob", ns, "pausable")
    job = get_job(sim, "TFJob", ns, "pausable")
    assert state_of(job) == "Suspended"
    assert "startTime" not in job["status"]
    assert live_pods(sim, ns) == {}
    assert services(sim, ns) == {}

    sim.store.patch("tfjobs.argoml.io", "pausable", {"spec": {"runPolicy": {"suspend": False}}}, namespace=ns)
    play(sim, "TFJob", ns, "pausable", 2)
    job = get_job(sim, "TFJob", ns, "pausable")
    assert state_of(job) == "Running"
    assert condition(job, "Suspended")["status"] == "False"
    assert set(live_pods(sim, ns)) == {"pausable-worker-0", "pausable-worker-1"}


def test_changing_replicas_scales_down_and_up(sim, ns):
    manifest = job_manifest(
        "TFJob", {"Worker": 4}, name="elastic", namespace=ns, scripts={"Worker": {"duration": None}}
    )
    submit(sim, manifest)
    patch = {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}}
    sim.store.patch("tfjobs.argoml.io", "elastic", patch, namespace=ns)
    settle(sim, "TFJob", ns, "elastic")
    assert set(live_pods(sim, ns)) == {"elastic-worker-0", "elastic-worker-1"}
    assert set(services(sim, ns)) == {"elastic-worker-0", "elastic-worker-1"}

    patch = {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 3}}}}
    sim.store.patch("tfjobs.argoml.io", "elastic", patch, namespace=ns)
    settle(sim, "TFJob", ns, "elastic")
    assert set(live_pods(sim, ns)) == {"elastic-worker-0", "elastic-worker-1", "elastic-worker-2"}
    tf_config = env_of(pods(sim, ns)["elastic-worker-2"], "tensorflow")["TF_CONFIG"]
    assert tf_config.count(".svc:2222") == 3


def test_an_elastic_pytorchjob_scales_within_its_bounds_keeping_the_pods_it_has(sim, ns):
    manifest = job_manifest(
        "PyTorchJob",
        {"Worker": 2},
        name="torchrun",
        namespace=ns,
        scripts={"Worker": {"duration": None}},
        elasticPolicy={"minReplicas": 1, "maxReplicas": 4},
    )
    submit(sim, manifest)
    settle(sim, "PyTorchJob", ns, "torchrun")
    kept = {name: pod["metadata"]["uid"] for name, pod in live_pods(sim, ns).items()}
    assert set(kept) == {"torchrun-worker-0", "torchrun-worker-1"}

    patch = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 4}}}}
    sim.store.patch("pytorchjobs.argoml.io", "torchrun", patch, namespace=ns)
    settle(sim, "PyTorchJob", ns, "torchrun")
    now = live_pods(sim, ns)
    assert set(now) == {f"torchrun-worker-{i}" for i in range(4)}
    assert {name: now[name]["metadata"]["uid"] for name in kept} == kept
    envs = [env_of(now[f"torchrun-worker-{i}"], "pytorch") for i in range(4)]
    assert {(env["PET_RDZV_ENDPOINT"], env["PET_NNODES"]) for env in envs} == {
        ("torchrun-worker-0:23456", "1:4")
    }

    patch = {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}}
    sim.store.patch("pytorchjobs.argoml.io", "torchrun", patch, namespace=ns)
    settle(sim, "PyTorchJob", ns, "torchrun")
    assert {name: pod["metadata"]["uid"] for name, pod in live_pods(sim, ns).items()} == kept


@pytest.mark.parametrize(("case", "replicas", "policy", "spec", "expected"), ELASTIC_ENV_CASES)
def test_kubeflows_elastic_env_cases_reach_the_pods_as_render_job_previews_them(
    sim, ns, tmp_path, case, replicas, policy, spec, expected
):
    """On a cluster the defaulter runs first, as Kubeflow's does: a policy with neither bound gets both
    from the Worker replicas, so its pods say `PET_NNODES=n:n` where the bare env case says `n`."""
    manifest = job_manifest(
        "PyTorchJob", replicas, name="elastic-job", namespace=ns, elasticPolicy=policy, **spec
    )
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(manifest))
    output = io.StringIO()
    call_command("render_job", str(path), stdout=output)
    rendered = yaml.safe_load_all(output.getvalue())
    previewed = {c["metadata"]["name"]: c for c in rendered if c["kind"] == "Pod"}
    workers = replicas["Worker"]
    if "minReplicas" not in policy and "maxReplicas" not in policy:
        expected = {**expected, "PET_NNODES": f"{workers}:{workers}"}

    submit(sim, manifest)
    made = live_pods(sim, ns)
    assert set(made) == set(previewed) == {f"elastic-job-worker-{i}" for i in range(workers)}, case
    for name, pod in made.items():
        env = env_of(pod, "pytorch")
        assert env == env_of(previewed[name], "pytorch"), case
        assert {key: value for key, value in env.items() if key.startswith(("PET_", "PYTHON"))} == {
            "PYTHONUNBUFFERED": "1",
            **expected,
        }, case


# -- the contract's edges ------------------------------------------------------------------------------
def test_an_invalid_spec_fails_once_with_failed_validation_and_never_raises(sim, ns):
    manifest = job_manifest("TFJob", {"Worker": 1}, name="broken", namespace=ns)
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
    sim.store.create(manifest)

    assert settle(sim, "TFJob", ns, "broken") is None
    job = get_job(sim, "TFJob", ns, "broken")
    failed = condition(job, "Failed")
    assert failed["reason"] == "FailedValidation"
    assert "needs a container named 'tensorflow'" in failed["message"]
    assert pods(sim, ns) == {}
    version = job["metadata"]["resourceVersion"]
    reconcile_job("TFJob", ns, "broken")
    assert get_job(sim, "TFJob", ns, "broken")["metadata"]["resourceVersion"] == version
    assert event_reasons(sim, ns, "broken").count("FailedValidation") == 1


def test_a_job_one_replica_past_the_bound_fails_naming_the_field_and_one_at_it_runs(sim, ns):
    sim.store.create(job_manifest("TFJob", {"Chief": 1, "Worker": 4}, name="over", namespace=ns))
    sim.store.create(job_manifest("TFJob", {"Chief": 1, "Worker": 3}, name="at", namespace=ns))

    with limits.overridden(replicas_per_job=4):
        assert settle(sim, "TFJob", ns, "over") is None
        settle(sim, "TFJob", ns, "at")

    failed = condition(get_job(sim, "TFJob", ns, "over"), "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "FailedValidation")
    assert failed["message"] == (
        f"TFJob {ns}/over is invalid: spec.tfReplicaSpecs.Worker.replicas: "
        "must be at most 4 replicas (MAX_REPLICAS_PER_JOB), not 5 (Chief 1 + Worker 4)"
    )
    assert sorted(pods(sim, ns)) == ["at-chief-0", "at-worker-0", "at-worker-1", "at-worker-2"]
    assert event_reasons(sim, ns, "over").count("FailedValidation") == 1


def test_a_new_jobs_status_is_written_once_after_its_children_and_a_failed_write_fails_the_run(sim, ns):
    """A job never reconciled has no restart ledger to save first: its children are created, then one
    status write counts them. That write failing (Conflict: the job changed since it was read) fails the
    run, and the retry decides again from what the job and its children are now, creating nothing twice."""
    sim.store.create(job_manifest("TFJob", {"Worker": 2}, name="first", namespace=ns))
    sim.counters.reset()
    reconcile_job("TFJob", ns, "first")
    assert sim.counters.count(verb="update", resource="tfjobs.argoml.io/status") == 1
    assert get_job(sim, "TFJob", ns, "first")["status"]["replicaStatuses"]["Worker"]["active"] == 2

    sim.store.create(job_manifest("TFJob", {"Worker": 2}, name="second", namespace=ns))
    fault = sim.faults.fail(409, verb="update", resource="tfjobs.argoml.io/status", times=None)
    try:
        with pytest.raises(Conflict):
            reconcile_job("TFJob", ns, "second")
        assert "status" not in get_job(sim, "TFJob", ns, "second")
    finally:
        sim.faults.remove(fault)
    sim.counters.reset()
    settle(sim, "TFJob", ns, "second")
    assert sorted(name for name in pods(sim, ns) if name.startswith("second")) == [
        "second-worker-0",
        "second-worker-1",
    ]
    assert sim.counters.count(verb="create", resource="pods", code=201) == 0
    assert get_job(sim, "TFJob", ns, "second")["status"]["replicaStatuses"]["Worker"]["active"] == 2


def test_children_another_controller_owns_are_never_touched(sim, ns):
    stranger = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "other-worker-7", "namespace": ns, "labels": {"argoml.io/job-name": "other"}},
        "spec": {"containers": [{"name": "tensorflow", "image": "x"}]},
    }
    sim.store.create(stranger)
    submit(sim, job_manifest("TFJob", {"Worker": 1}, name="other", namespace=ns))
    assert set(pods(sim, ns)) == {"other-worker-0", "other-worker-7"}


def test_a_deleted_job_needs_nothing(sim, ns):
    assert reconcile_job("TFJob", ns, "never-existed") is None


def test_a_new_jobs_first_run_reads_only_the_job_and_creates_each_round_at_once(sim, ns):
    sim.store.create(job_manifest("TFJob", {"Chief": 1, "Worker": 3}, name="fresh", namespace=ns))
    sim.counters.reset()

    reconcile_job("TFJob", ns, "fresh")

    calls = sim.counters.by_verb()
    assert calls["get tfjobs.argoml.io"] == 1
    assert "list pods" not in calls  # a job without a status has no children of ours yet
    assert (calls["create pods"], calls["create services"]) == (4, 4)
    assert calls["create events.events.k8s.io"] == 3  # services, pods, TFJobCreated: one event each


def test_a_child_the_server_refuses_is_a_warning_event_and_a_retry_after_the_others_were_made(sim, ns):
    sim.store.create(job_manifest("TFJob", {"Worker": 3}, name="partial", namespace=ns))
    fault = sim.faults.fail(403, verb="create", resource="pods", times=1)
    try:
        with pytest.raises(Forbidden):
            reconcile_job("TFJob", ns, "partial")
    finally:
        sim.faults.remove(fault)

    assert len(pods(sim, ns)) == 2
    assert len(services(sim, ns)) == 3
    reasons = event_reasons(sim, ns, "partial")
    assert "FailedCreatePod" in reasons
    assert "SuccessfulCreatePod" in reasons
    settle(sim, "TFJob", ns, "partial")  # the retry makes the missing one
    assert len(pods(sim, ns)) == 3
