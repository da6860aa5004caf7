"""The TrainJob reconcile against the simulator, in this process, with the shipped write rate limiter: each
test calls `reconcile_train_job` until nothing changes and moves simulated time so the kubelet runs the pods.
(The same through a real Celery worker, its informers' cache and the mirror is in test_operator.py.)"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count

import pytest
from django.test.utils import override_settings

from jobs import conf
from jobs.tests.cluster import env_of, event_reasons, live_pods, pods, services
from kube.client import reset_client
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from trainer import constants as c
from trainer.models.trainjobs import RUNTIME_GENERATION_ANNOTATION
from trainer.operator import status
from trainer.progress import server as progress_server
from trainer.reconcile import reconcile_train_job, status_server
from trainer.tests import factories as f
from trainer.tests.cluster import (
    CLUSTER_RUNTIMES,
    TRAINJOBS,
    conditions,
    get_train_job,
    install_pod_group_crd,
    install_trainer,
    jobs_status,
    scripted,
    train_job,
)

T0 = datetime(2026, 6, 1, 9, 0, 0, tzinfo=UTC)
_namespaces = count(1)


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_trainer(simulator)
        mp = pytest.MonkeyPatch()
        mp.setattr(conf, "now", simulator.clock.now)
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            yield simulator
        mp.undo()
        reset_client()


@pytest.fixture
def ns(sim: Simulator) -> str:
    name = f"trainer-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


def fingerprint(sim: Simulator, namespace: str, name: str) -> tuple:
    job = get_train_job(sim, namespace, name)
    children = sorted(
        (meta["name"], meta["uid"], bool(meta.get("deletionTimestamp")))
        for meta in (
            o["metadata"] for o in [*pods(sim, namespace).values(), *services(sim, namespace).values()]
        )
    )
    return (job and job["metadata"]["resourceVersion"], children)


def settle(sim: Simulator, namespace: str, name: str) -> float | None:
    """Reconcile until a run changes nothing; the last requested requeue."""
    for _ in range(10):
        before = fingerprint(sim, namespace, name)
        requeue = reconcile_train_job(namespace, name)
        sim.store.wait_idle()
        if fingerprint(sim, namespace, name) == before:
            return requeue
    raise AssertionError(f"TrainJob {namespace}/{name} keeps changing")


def play(sim: Simulator, namespace: str, name: str, seconds: int) -> None:
    for _ in range(seconds):
        sim.advance(1)
        settle(sim, namespace, name)


def submit(sim: Simulator, manifest: dict) -> dict:
    created = sim.store.create(manifest)
    settle(sim, manifest["metadata"]["namespace"], manifest["metadata"]["name"])
    return created


def test_a_torch_trainjob_runs_its_nodes_with_trainers_env_and_labels_and_completes(sim, ns):
    job = train_job(
        "mnist", ns, "torch-distributed",
        trainer={"image": "example.io/train:1", "command": ["torchrun", "train.py"], "numNodes": 2},
    )  # fmt: skip
    submit(sim, scripted(job, {"node": {"duration": 3}}))

    found = pods(sim, ns)
    assert set(found) == {"mnist-node-0-0", "mnist-node-0-1"}
    pod = found["mnist-node-0-1"]
    labels = pod["metadata"]["labels"]
    assert labels[c.LABEL_JOBSET_NAME] == "mnist"
    assert labels[c.LABEL_REPLICATED_JOB_NAME] == "node"
    assert labels[c.LABEL_COMPLETION_INDEX] == "1"
    assert labels[c.LABEL_ANCESTOR] == "trainer"
    assert pod["spec"]["hostname"] == "mnist-node-0-1"
    assert pod["spec"]["subdomain"] == "mnist"
    env = env_of(pod, "node")
    assert env["PET_NNODES"] == "2"
    assert env["PET_MASTER_ADDR"] == "mnist-node-0-0.mnist"
    assert env["PET_MASTER_PORT"] == "29500"
    assert "PET_NODE_RANK" in env
    container = pod["spec"]["containers"][0]
    assert container["image"] == "example.io/train:1"
    assert container["command"] == ["torchrun", "train.py"]
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "mnist", True)
    service = services(sim, ns)["mnist"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {c.LABEL_JOBSET_NAME: "mnist"}

    stored = get_train_job(sim, ns, "mnist")
    assert stored["metadata"]["annotations"][RUNTIME_GENERATION_ANNOTATION] == "1"
    assert jobs_status(stored)["node"]["succeeded"] == 0

    play(sim, ns, "mnist", 1)
    assert jobs_status(get_train_job(sim, ns, "mnist"))["node"] == {
        "ready": 1, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0,
    }  # fmt: skip
    play(sim, ns, "mnist", 4)
    done = get_train_job(sim, ns, "mnist")
    assert conditions(done) == {"Complete": ("True", "AllJobsCompleted")}
    assert jobs_status(done)["node"]["succeeded"] == 1
    assert {"SuccessfulCreatePod", "SuccessfulCreateService"} <= set(event_reasons(sim, ns, "mnist"))


def test_the_runtime_generation_annotation_is_set_once_and_never_changed(sim, ns):
    runtime = f.torch_runtime()
    runtime["metadata"]["name"] = f"torch-{ns}"
    sim.store.create(runtime)
    submit(sim, scripted(train_job("gen", ns, f"torch-{ns}"), {"node": {"duration": None}}))
    assert get_train_job(sim, ns, "gen")["metadata"]["annotations"][RUNTIME_GENERATION_ANNOTATION] == "1"

    sim.store.patch(CLUSTER_RUNTIMES, f"torch-{ns}", {"spec": {"mlPolicy": {"numNodes": 2}}})
    assert sim.store.get(CLUSTER_RUNTIMES, f"torch-{ns}")["metadata"]["generation"] == 2
    play(sim, ns, "gen", 1)
    assert get_train_job(sim, ns, "gen")["metadata"]["annotations"][RUNTIME_GENERATION_ANNOTATION] == "1"


def test_an_mpi_trainjob_gets_its_ssh_secret_once_its_hostfile_and_completes_with_its_launcher(sim, ns):
    job = train_job("ds", ns, "deepspeed-distributed", trainer={"numNodes": 3})
    submit(sim, scripted(job, {"node": {"duration": None}, "launcher": {"duration": 3}}))

    assert set(pods(sim, ns)) == {"ds-node-0-0", "ds-node-0-1"}  # the launcher waits for its nodes: Ready
    secret = sim.store.get("secrets", "ds-mpi-ssh-auth", ns)
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["immutable"] is True
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")
    hostfile = sim.store.get("configmaps", "ds-mpi-hostfile", ns)["data"]["hostfile"]
    assert hostfile.splitlines() == [  # in the runtime's order: node first, then the training launcher
        "ds-node-0-0.ds slots=1", "ds-node-0-1.ds slots=1", "ds-launcher-0-0.ds slots=1",
    ]  # fmt: skip

    play(sim, ns, "ds", 1)
    assert set(pods(sim, ns)) == {"ds-node-0-0", "ds-node-0-1", "ds-launcher-0-0"}
    launcher = pods(sim, ns)["ds-launcher-0-0"]
    assert env_of(launcher, "node")["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert sim.store.get("secrets", "ds-mpi-ssh-auth", ns)["data"] == secret["data"]  # never regenerated

    play(sim, ns, "ds", 4)
    done = get_train_job(sim, ns, "ds")
    assert conditions(done) == {"Complete": ("True", "AllJobsCompleted")}
    assert live_pods(sim, ns).keys() == {"ds-launcher-0-0"}  # the sshd nodes are stopped once it is done
    assert "SuccessfulDeletePod" in event_reasons(sim, ns, "ds")


def test_the_trainer_starts_only_once_both_initializers_completed(sim, ns):
    job = train_job(
        "init", ns, "torch-with-initializers",
        initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca"}, "model": {"storageUri": "hf://gpt2"}},
    )  # fmt: skip
    submit(
        sim,
        scripted(
            job,
            {
                "dataset-initializer": {"duration": 2},
                "model-initializer": {"duration": 4},
                "node": {"duration": 2},
            },
        ),
    )
    assert set(pods(sim, ns)) == {"init-dataset-initializer-0-0", "init-model-initializer-0-0"}
    dataset = env_of(pods(sim, ns)["init-dataset-initializer-0-0"], "dataset-initializer")
    assert dataset["STORAGE_URI"] == "hf://tatsu-lab/alpaca"
    play(sim, ns, "init", 3)
    assert "init-node-0-0" not in pods(sim, ns)  # the dataset is done, the model is not
    assert jobs_status(get_train_job(sim, ns, "init"))["dataset-initializer"]["succeeded"] == 1
    play(sim, ns, "init", 2)
    assert "init-node-0-0" in pods(sim, ns)
    play(sim, ns, "init", 3)
    assert conditions(get_train_job(sim, ns, "init")) == {"Complete": ("True", "AllJobsCompleted")}


def test_a_torchtune_runtime_gets_its_shared_claim_and_every_step_mounts_it(sim, ns):
    """Trainer's torchtune runtimes mount `initializer` without declaring it: JobSet's volumeClaimPolicies
    create the claim `initializer-<trainjob>` and give it to each step that mounts it. Without that, the API
    server refuses every pod (`spec.containers[0].volumeMounts[0].name: Not found: "initializer"`)."""
    job = train_job("tune", ns, "torchtune-test")
    steps = {
        "dataset-initializer": {"duration": 1},
        "model-initializer": {"duration": 1},
        "node": {"duration": 1},
    }
    submit(sim, scripted(job, steps))
    claim = sim.store.get("persistentvolumeclaims", "initializer-tune", ns)
    assert claim["spec"]["resources"] == {"requests": {"storage": "20Gi"}}
    assert claim["metadata"]["ownerReferences"][0]["uid"] == get_train_job(sim, ns, "tune")["metadata"]["uid"]
    play(sim, ns, "tune", 8)
    assert conditions(get_train_job(sim, ns, "tune")) == {"Complete": ("True", "AllJobsCompleted")}
    made = pods(sim, ns)
    assert set(made) == {"tune-dataset-initializer-0-0", "tune-model-initializer-0-0", "tune-node-0-0"}
    for pod in made.values():
        volumes = pod["spec"]["volumes"]
        assert {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-tune"}} in volumes


def test_suspend_deletes_the_pods_and_keeps_the_service_and_resume_recreates_them(sim, ns):
    submit(
        sim,
        scripted(
            train_job("sus", ns, "torch-distributed", trainer={"numNodes": 2}), {"node": {"duration": None}}
        ),
    )
    play(sim, ns, "sus", 1)
    sim.store.patch(TRAINJOBS, "sus", {"spec": {"suspend": True}}, namespace=ns)
    settle(sim, ns, "sus")
    play(sim, ns, "sus", 2)
    suspended = get_train_job(sim, ns, "sus")
    assert conditions(suspended) == {"Suspended": ("True", "Suspended")}
    assert live_pods(sim, ns) == {}
    assert "sus" in services(sim, ns)
    assert jobs_status(suspended)["node"]["suspended"] == 1

    sim.store.patch(TRAINJOBS, "sus", {"spec": {"suspend": False}}, namespace=ns)
    settle(sim, ns, "sus")
    assert conditions(get_train_job(sim, ns, "sus")) == {"Suspended": ("False", "Resumed")}
    assert set(live_pods(sim, ns)) == {"sus-node-0-0", "sus-node-0-1"}


def test_past_active_deadline_seconds_the_job_fails_with_deadline_exceeded_and_its_pods_go(sim, ns):
    job = train_job("late", ns, "torch-distributed", activeDeadlineSeconds=5)
    sim.store.create(scripted(job, {"node": {"duration": None}}))
    assert settle(sim, ns, "late") == 5.0  # looked at again when the deadline runs out
    play(sim, ns, "late", 6)
    failed = get_train_job(sim, ns, "late")
    assert conditions(failed) == {"Failed": ("True", "DeadlineExceeded")}
    assert live_pods(sim, ns) == {}


def test_a_pod_that_fails_fails_the_trainjob_as_a_failed_job_fails_its_jobset(sim, ns):
    job = train_job("crash", ns, "torch-never-restart", trainer={"numNodes": 2})
    submit(sim, scripted(job, {"node": {"duration": 2, "exitCode": 1}}))
    play(sim, ns, "crash", 3)
    failed = get_train_job(sim, ns, "crash")
    assert conditions(failed) == {"Failed": ("True", "FailedJobs")}
    assert jobs_status(failed)["node"]["failed"] == 1
    message = next(cond["message"] for cond in failed["status"]["conditions"])
    assert message == "jobset failed due to one or more job failures"


def test_a_trainer_crashing_under_on_failure_fails_the_trainjob_past_the_jobs_backoff_limit(sim, ns):
    """Trainer's own torch runtime restarts a crashing trainer in place (OnFailure); the Job JobSet makes for
    the trainer step fails once its pods' restarts add up to 6 (Kubernetes' default backoffLimit), and so
    does the TrainJob (issue 32: it looped for ever, and Kubeflow's SDK waited for a Failed that never
    came). Two nodes crash together, so the Job fails at their third restarts."""
    job = train_job("loop", ns, "torch-distributed", trainer={"numNodes": 2})
    submit(sim, scripted(job, {"node": {"duration": 1, "exitCode": 1}}))
    started, restarts_seen = sim.clock.time(), 0
    for _ in range(30):
        play(sim, ns, "loop", 5)
        if conditions(get_train_job(sim, ns, "loop")):
            break
        restarts_seen = sum(status.restarts(pod) for pod in pods(sim, ns).values())
    failed = get_train_job(sim, ns, "loop")
    assert conditions(failed) == {"Failed": ("True", "FailedJobs")}
    assert jobs_status(failed)["node"]["failed"] == 1
    # Not before: CrashLoopBackOff waits 10, 20 and 40 s before the third restarts, and 4 restarts were seen
    # while it still ran.
    assert sim.clock.time() - started >= 70
    assert restarts_seen == 4
    assert live_pods(sim, ns) == {}


def test_a_trainjob_managed_by_multikueue_is_left_alone(sim, ns):
    submit(sim, train_job("elsewhere", ns, "torch-distributed", managedBy="kueue.x-k8s.io/multikueue"))
    assert pods(sim, ns) == {}
    assert (
        "status" not in get_train_job(sim, ns, "elsewhere")
        or not get_train_job(sim, ns, "elsewhere")["status"]
    )


def test_a_missing_runtime_is_a_warning_event_and_a_retry_not_a_crash(sim, ns):
    sim.store.create(train_job("lost", ns, "no-such-runtime"))
    assert reconcile_train_job(ns, "lost") == 15.0
    assert pods(sim, ns) == {}
    assert event_reasons(sim, ns, "lost") == ["TrainJobResourcesCreationFailed"]


def test_a_trainjob_past_the_node_bound_fails_naming_the_field_and_the_bound_with_nothing_planned(
    sim, ns, monkeypatch
):
    # Created behind the webhook's back (or before MAX_REPLICAS_PER_JOB was lowered): the controller
    # checks again, before planning a single pod.
    def never(*args, **kwargs):
        raise AssertionError("a TrainJob past its bounds must not be planned")

    monkeypatch.setattr("trainer.operator.plan.plan", never)
    sim.store.create(train_job("huge", ns, "torch-distributed", trainer={"numNodes": 100_000}))

    started = time.process_time()  # CPU time: planning 100,000 pods would cost seconds of it
    assert reconcile_train_job(ns, "huge") is None  # nothing to look at again: no reconcile can plan it
    assert time.process_time() - started < 2

    failed = get_train_job(sim, ns, "huge")
    assert conditions(failed) == {"Failed": ("True", "LimitExceeded")}
    (condition,) = failed["status"]["conditions"]
    assert condition["message"] == (
        "spec.trainer.numNodes: must be at most 1000 nodes (MAX_REPLICAS_PER_JOB), not 100000"
    )
    assert pods(sim, ns) == {}
    assert services(sim, ns) == {}
    assert event_reasons(sim, ns, "huge") == ["LimitExceeded"]
    settle(sim, ns, "huge")  # and it stays so: no second write, no second event
    assert event_reasons(sim, ns, "huge") == ["LimitExceeded"]


def test_a_runtime_past_its_bounds_fails_the_trainjob_naming_the_runtime(sim, ns):
    runtime = f.torch_runtime()
    runtime["metadata"]["name"] = f"wide-{ns}"
    runtime["spec"]["template"]["spec"]["replicatedJobs"].append(
        f.replicated_job("worker", replicas=40, parallelism=40)
    )
    sim.store.create(runtime)
    sim.store.create(train_job("wide", ns, f"wide-{ns}"))

    reconcile_train_job(ns, "wide")

    (condition,) = get_train_job(sim, ns, "wide")["status"]["conditions"]
    assert (condition["type"], condition["reason"]) == ("Failed", "LimitExceeded")
    assert condition["message"].startswith(f"spec.runtimeRef.name: ClusterTrainingRuntime 'wide-{ns}' runs")
    assert pods(sim, ns) == {}


def gang_runtime(name: str, policy: dict) -> dict:
    runtime = f.torch_runtime()
    runtime["metadata"]["name"] = name
    runtime["spec"]["podGroupPolicy"] = policy
    return runtime


def test_with_coscheduling_the_podgroup_is_created_before_the_pods_which_carry_its_label(sim, ns):
    install_pod_group_crd(sim, "scheduler-plugins")
    sim.store.create(gang_runtime(f"gang-{ns}", {"coscheduling": {"scheduleTimeoutSeconds": 90}}))
    job = train_job(
        "gang", ns, f"gang-{ns}", trainer={"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": 2}}}
    )
    submit(sim, scripted(job, {"node": {"duration": None}}))

    group = sim.store.get("podgroups.scheduling.x-k8s.io", "gang", ns)
    assert group["spec"] == {"minMember": 2, "minResources": {"cpu": "4"}, "scheduleTimeoutSeconds": 90}
    assert group["metadata"]["ownerReferences"][0]["name"] == "gang"
    assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in pods(sim, ns).values()} == {
        "gang"
    }
    assert "SuccessfulCreatePodGroup" in event_reasons(sim, ns, "gang")


def test_without_the_schedulers_crd_no_pod_is_created_and_a_warning_says_why(sim, ns):
    sim.store.create(gang_runtime(f"volcano-{ns}", {"volcano": {}}))  # Volcano's CRD is not installed
    sim.store.create(train_job("nogang", ns, f"volcano-{ns}"))
    assert settle(sim, ns, "nogang") == 30.0
    assert pods(sim, ns) == {}
    assert "nogang" in services(sim, ns)
    assert "FailedCreatePodGroup" in event_reasons(sim, ns, "nogang")


def test_a_trainjob_being_deleted_gets_no_pod_again(sim, ns):
    job = train_job("going", ns, "torch-distributed")
    job["metadata"]["finalizers"] = ["test.argoml.io/hold"]
    submit(sim, scripted(job, {"node": {"duration": None}}))
    sim.store.delete(TRAINJOBS, "going", ns)  # held by the finalizer: deletionTimestamp set
    sim.store.delete("pods", "going-node-0-0", ns, grace_period_seconds=0)
    sim.store.wait_idle()
    assert reconcile_train_job(ns, "going") is None
    assert live_pods(sim, ns) == {}
    sim.store.patch(TRAINJOBS, "going", {"metadata": {"finalizers": None}}, namespace=ns)


STATUS_SERVER = "https://argoml-webhooks.argoml.svc:443"
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_status_server_is_read_from_settings_and_the_ca_file_each_time(settings, tmp_path):
    settings.TRAINER_STATUS_SERVER_URL = ""
    assert status_server() is None
    ca_file = tmp_path / "ca.crt"
    settings.TRAINER_STATUS_SERVER_URL = STATUS_SERVER
    settings.TRAINER_STATUS_CA_CERT_PATH = str(ca_file)
    ca_file.write_text(CA)
    assert status_server() == progress_server.StatusServer(STATUS_SERVER, CA)
    ca_file.write_text(CA.replace("MIIB", "renewed"))
    server = status_server()
    assert server is not None
    assert "renewed" in server.ca_cert


def test_with_a_status_server_the_trainer_steps_pods_are_told_where_and_how_to_report(
    sim, ns, settings, tmp_path
):
    """What Trainer's TrainJobStatus plugin injects, and the CA ConfigMap, made once (labelled, so the
    controller sees it and does not create it again at every run)."""
    (tmp_path / "ca.crt").write_text(CA)
    settings.TRAINER_STATUS_SERVER_URL = STATUS_SERVER
    settings.TRAINER_STATUS_CA_CERT_PATH = str(tmp_path / "ca.crt")
    job = train_job(
        "report", ns, "xgboost-distributed", trainer={"numNodes": 2, "command": ["python", "t.py"]}
    )
    submit(sim, scripted(job, {"node": {"duration": None}}))

    found = pods(sim, ns)
    assert set(found) == {"report-node-0-0", "report-node-0-1"}
    for pod in found.values():
        env = env_of(pod, "node")
        assert env[progress_server.ENV_URL] == (
            f"{STATUS_SERVER}/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/report/status"
        )
        assert env[progress_server.ENV_TOKEN] == "/var/run/secrets/kubeflow/trainer/token"
        assert env[progress_server.ENV_CA_CERT] == "/var/run/secrets/kubeflow/trainer/ca.crt"
        assert env["DMLC_NUM_WORKER"] == "2"
        [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == progress_server.VOLUME]
        token, ca = volume["projected"]["sources"]
        audience = f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/report/status"
        assert token["serviceAccountToken"]["audience"] == audience
        assert ca["configMap"]["name"] == "report-tls-config"
    config_map = sim.store.get("configmaps", "report-tls-config", ns)
    assert config_map["data"] == {"ca.crt": CA}
    assert config_map["metadata"]["ownerReferences"][0]["name"] == "report"
    created = sim.store.get("configmaps", "report-tls-config", ns)["metadata"]["resourceVersion"]
    play(sim, ns, "report", 2)
    assert sim.store.get("configmaps", "report-tls-config", ns)["metadata"]["resourceVersion"] == created


def test_without_a_status_server_no_pod_is_told_to_report(sim, ns, settings):
    settings.TRAINER_STATUS_SERVER_URL = ""
    submit(sim, scripted(train_job("quiet", ns, "xgboost-distributed"), {"node": {"duration": None}}))
    [pod] = pods(sim, ns).values()
    assert not any(name.startswith("KUBEFLOW_TRAINER_SERVER") for name in env_of(pod, "node"))
    assert "quiet-tls-config" not in {
        m["metadata"]["name"] for m in sim.store.list("configmaps", ns)["items"]
    }
