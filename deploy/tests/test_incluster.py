"""The in-cluster leg: every process runs with its chart's identity and still does everything.

kubesim serves HTTPS with RBAC and Pod Security admission; the chart's ServiceAccounts, Roles and bindings
(rendered by Helm's engine) are applied to it; each ServiceAccount gets a token, laid out as a kubelet
mounts it. The web server (gunicorn), the controller worker (leader), a plain worker and beat run as the
chart starts them, each with KUBE_IN_CLUSTER=true, its own token and the API address from
KUBERNETES_SERVICE_HOST/PORT, and with the shipped write limit (20 QPS, burst 50). Then every capability is
driven end to end: jobs of each kind, a sweep, TensorBoards (spawned, culled, stopped), a GC run, a resync,
a pipeline submitted, the dashboard's logs and events. Any 403 fails the leg at once, naming the request
RBAC refused; any Pod Security warning or refusal for a pod we make fails it too.

deploy/rbac_necessity.py runs this module once per rule removed from the rendered Roles (through
ARGOML_INCLUSTER_RBAC_FILE) and reports which failure names it.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
import requests
from celery import Celery
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

from jobs.tests.cluster import install_crds, job_manifest
from jobs.tests.test_operator import kubectl
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

from . import incluster
from .incluster import ACCOUNTS, NAMESPACE, USER_NAMESPACE, Process

# Not transactional: what the processes commit stays visible to the tests (READ COMMITTED) across the
# module; the leg's rows are removed at the end.
pytestmark = pytest.mark.django_db

METRICS_TOKEN = "incluster-scrape"
REDIS_DB = int(os.environ.get("INCLUSTER_TEST_REDIS_DB", "15"))
WAIT = 90.0
#: A job whose one reconcile creates 100 services, then 100 pods, each step's creates sent at once (the leg
#: sets JOBS_RECONCILE_PARALLEL_CALLS above it). Against the shipped bucket (burst 50, 20 QPS) they would have
#: to spread over 7.5 s not to wait: on any machine that runs the leg, writes queue.
WIDE_WORKERS = 100


def redis_url() -> str:
    return f"redis://{REDIS_HOST}/{REDIS_DB}"


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor != "postgresql":
        pytest.fail(
            "the in-cluster leg shares its database with the processes: set DATABASE_URL to PostgreSQL"
        )
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def describe_denial(attributes: Any) -> str:
    """`verb resource[/subresource] group namespace user`: the rule a Role lacks."""
    return " ".join(
        [
            attributes.verb,
            attributes.combined_resource if attributes.resource_request else attributes.path,
            f"group={attributes.api_group or 'core'}",
            f"namespace={attributes.namespace or '(cluster)'}",
            f"user={attributes.user.name}",
        ]
    )


@dataclass
class Leg:
    sim: Simulator
    processes: dict[str, Process]
    web: str  # the web server's base URL
    token: str  # the API token of the user who drives the leg
    session: str  # the same user's dashboard session
    redis: redis_lib.Redis
    metrics_ports: dict[str, int]  # process → its WORKER_METRICS_PORT

    def rate_limiter_waits(self) -> tuple[int, float]:
        """(writes, seconds they waited in all) for the client-side limiter, summed over the workers."""
        writes, waited = 0, 0.0
        for port in self.metrics_ports.values():
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10,
                                headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text  # fmt: skip
            for family in text_string_to_metric_families(text):
                if family.name == "rest_client_rate_limiter_duration_seconds":
                    for sample in family.samples:
                        if sample.name.endswith("_count"):
                            writes += int(sample.value)
                        elif sample.name.endswith("_sum"):
                            waited += sample.value
        return writes, waited

    def problems(self) -> list[str]:
        """RBAC denials and Pod Security findings so far: each one fails the leg."""
        gate = self.sim.security.gate
        assert gate is not None
        found = [f"403 FORBIDDEN: {describe_denial(denial)}" for denial in gate.denials]
        found += [f"POD SECURITY: {finding}" for finding in self.sim.pod_security.findings]
        for process in self.processes.values():
            if process.popen.poll() is not None:
                found.append(f"PROCESS EXITED: {process.name}\n{process.text()[-3000:]}")
        return found

    def check(self) -> None:
        problems = self.problems()
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """Poll `condition` until truthy; fail at once on a denial, or with the logs when time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            self.check()
            result = condition()
            if result:
                return result
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {p.name}\n{p.text()[-2500:]}" for p in self.processes.values())
                pytest.fail(
                    f"timed out after {timeout:.0f}s waiting for {what}\n{self.summary()}\n{logs}",
                    pytrace=False,
                )
            time.sleep(0.25)

    def summary(self) -> str:
        """The user namespace's objects and their status, to read when a wait timed out."""
        lines = []
        for plural in ("tensorboards.argoml.io", "hyperparamworkflows.argoml.io", "deployments", "pods"):
            for item in self.sim.store.list(plural, USER_NAMESPACE)["items"]:
                status = {k: v for k, v in (item.get("status") or {}).items() if k in ("phase", "conditions")}
                lines.append(f"{plural} {item['metadata']['name']}: {status}")
        return "\n".join(lines[-60:])

    # -- the user's side: the REST API and the dashboard, over HTTP like a browser or a script -----------
    def api(self, method: str, path: str, body: Any = None) -> requests.Response:
        headers = {"Authorization": f"Token {self.token}"}
        response = requests.request(method, self.web + path, json=body, headers=headers, timeout=60)
        self.check()  # a refusal behind the answer is named before the answer is judged
        return response

    def page(self, path: str) -> requests.Response:
        response = requests.get(self.web + path, cookies={"sessionid": self.session}, timeout=60)
        self.check()
        return response

    def send_task(self, name: str, *, wait: bool = True) -> Any:
        """Send a beat task to the workers' `default` queue, as beat does; its result when `wait`."""
        app = Celery("incluster-sender", broker=redis_url(), backend=redis_url(), set_as_current=False)
        app.conf.update(task_serializer="json", accept_content=["json"], result_serializer="json")
        result = app.send_task(name, queue="default")
        return self.wait(lambda: result.ready() and result, f"task {name}").get(timeout=5) if wait else None

    def get(self, plural: str, name: str, namespace: str = USER_NAMESPACE) -> dict[str, Any] | None:
        try:
            return self.sim.store.get(plural, name, namespace)
        except Exception:
            return None


def make_user() -> tuple[str, str]:
    """An editor of the user namespace: an API token and a dashboard session."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from access.models import NamespaceGrant, Role

    user = User.objects.create_user("practitioner")
    NamespaceGrant.objects.create(user=user, namespace=USER_NAMESPACE, role=Role.EDITOR)
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return Token.objects.create(user=user).key, str(session.session_key)


def process_environment(sim: Simulator, static_root: Path, web_port: int) -> dict[str, str]:
    """What every container of the chart gets, with the leg's database and Redis; no KUBECONFIG."""
    timings = controller_worker_env("unused", KUBE_QUEUE_LEASE_SECONDS="2.0")
    for shipped in [
        key for key in timings if key.startswith(("KUBE_WRITE", "KUBE_LEADER", "KUBE_CONTROLLERS"))
    ]:
        timings.pop(shipped)  # the shipped write limit, the shipped leader election
    env = {key: value for key, value in os.environ.items() if not key.startswith("KUBE")}
    env.update(timings)
    env.update(incluster.service_environment(sim))
    env.update(
        {
            "KUBE_IN_CLUSTER": "true",
            "KUBECONFIG": "",
            "ARGOML_NAMESPACE": NAMESPACE,
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url(),
            "DJANGO_SETTINGS_MODULE": "deploy.tests.static_settings",
            "TEST_STATIC_ROOT": str(static_root),
            "SECRET_KEY": "test-only-secret-key",
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_COOKIES": "false",
            "GUNICORN_BIND": f"127.0.0.1:{web_port}",
            "GUNICORN_CERTFILE": "",
            "GUNICORN_KEYFILE": "",
            "GUNICORN_WORKERS": "1",
            "GUNICORN_THREADS": "4",
            "GC_SUCCEEDED_RETENTION_SECONDS": "0",
            "GC_FAILED_RETENTION_SECONDS": "0",
            "TENSORBOARD_ARTIFACT_BUCKET": "ml-artifacts",
            "TENSORBOARD_ALLOWED_LOGDIRS": "s3://ml-artifacts/",
            "JOBS_RECONCILE_PARALLEL_CALLS": str(WIDE_WORKERS + 4),
            "JOBS_KUBEFLOW_V1": "true",  # what the chart's ConfigMap says with kubeflow.installCRDs
        }
    )
    return env


@pytest.fixture(scope="module")
def leg(django_db_setup, django_db_blocker, collected_static, tmp_path_factory) -> Iterator[Leg]:
    started = time.monotonic()
    redis = redis_lib.Redis.from_url(redis_url(), decode_responses=True)
    redis.flushdb()
    workdir = tmp_path_factory.mktemp("incluster")
    with running_simulator(https=True, auth=True, kubelet=True, argo=True) as sim:
        install_crds(sim)
        incluster.label_namespaces(sim)
        incluster.install_rbac(sim, incluster.chart_rbac())
        sim.argo.script("train", run={"duration": 0.5}, parameters=lambda node: {"loss": "0.25"},
                        artifacts=tensorboard_logs)  # fmt: skip
        port = incluster.free_port()
        base = process_environment(sim, collected_static, port)
        processes: dict[str, Process] = {}
        metrics_ports: dict[str, int] = {}
        with django_db_blocker.unblock():
            token, session = make_user()
        try:
            for name, (command, ready) in incluster.commands().items():
                token_dir = workdir / "sa" / name
                incluster.mount_service_account(token_dir, sim, incluster.issue_token(sim, ACCOUNTS[name]))
                env = {**base, "KUBE_SERVICEACCOUNT_DIR": str(token_dir)}
                if name in ("controller", "worker"):  # their metrics show the writes the limiter held back
                    metrics_dir = workdir / "metrics" / name
                    metrics_dir.mkdir(parents=True)
                    metrics_ports[name] = incluster.free_port()
                    env.update(PROMETHEUS_MULTIPROC_DIR=str(metrics_dir), METRICS_TOKEN=METRICS_TOKEN,
                               WORKER_METRICS_PORT=str(metrics_ports[name]))  # fmt: skip
                processes[name] = incluster.start(name, command, env, workdir, ready)
            leg = Leg(sim, processes, f"http://127.0.0.1:{port}", token, session, redis, metrics_ports)
            for process in processes.values():
                process.wait_ready(90)
            leg.wait(lambda: web_answers(leg), "the web server to answer")
            leg.wait(lambda: "became leader" in processes["controller"].text(), "the controller to lead")
            print(f"in-cluster leg: set up in {time.monotonic() - started:.1f}s")
            yield leg
        finally:
            for process in processes.values():
                process.stop()
            redis.flushdb()
            print(f"in-cluster leg: {time.monotonic() - started:.1f}s in all")
            with django_db_blocker.unblock():
                forget_the_legs_rows()


def tensorboard_logs(node: Any) -> dict[str, Any]:
    """Each training step's `tensorboard` artifact: a key of its own, without the commas of trial names."""
    return {"tensorboard": {"s3": {"key": f"{node.workflow}/{zlib.crc32(node.display_name.encode())}"}}}


def forget_the_legs_rows() -> None:
    """What the processes mirrored and the leg's user, so later modules start from a clean database."""
    from django.contrib.auth.models import User

    from garbage.models import GCRun
    from hyperparam.models import Sweep
    from jobs.models import TrainingJob
    from tensorboard.models import Tensorboard

    for model in (TrainingJob, Sweep, Tensorboard, GCRun):
        model.objects.all().delete()
    User.objects.filter(username="practitioner").delete()


@pytest.fixture(autouse=True)
def nothing_refused(leg: Leg) -> Iterator[None]:
    """After each test, whatever it asserted: any denial or Pod Security finding so far fails it."""
    yield
    leg.check()


def web_answers(leg: Leg) -> bool:
    try:
        return requests.get(leg.web + "/healthz", timeout=5).status_code == 200
    except requests.RequestException:
        return False


def phase(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("status") or {}).get("phase") or "")


def condition_true(obj: dict[str, Any] | None, kind: str) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


LOG_LINE = "epoch 1 loss 0.25"
JOBS = {
    "TFJob": job_manifest("TFJob", {"PS": 1, "Worker": 2}, name="tf", namespace=USER_NAMESPACE,
                          scripts={"Worker": {"duration": 1, "exitCode": 0, "output": [LOG_LINE]}}),
    "MXJob": job_manifest("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 1}, name="mx",
                          namespace=USER_NAMESPACE),
    "PyTorchJob": job_manifest("PyTorchJob", {"Master": 1, "Worker": 1}, name="ddp",
                               namespace=USER_NAMESPACE),
    "XGBoostJob": job_manifest("XGBoostJob", {"Master": 1, "Worker": 1}, name="xgb",
                               namespace=USER_NAMESPACE),
    "JAXJob": job_manifest("JAXJob", {"Worker": 2}, name="jax", namespace=USER_NAMESPACE),
    "PaddleJob": job_manifest("PaddleJob", {"Worker": 2}, name="paddle", namespace=USER_NAMESPACE),
    # Its hostfile ConfigMap and SSH key Secret need grants of their own.
    "MPIJob": job_manifest("MPIJob", {"Launcher": 1, "Worker": 2}, name="mpi", namespace=USER_NAMESPACE),
}  # fmt: skip
#: Kubeflow's group, through the same API and controllers (the chart's kubeflow.installCRDs).
KUBEFLOW_JOBS = {
    kind: {**job_manifest(kind, replicas, name=f"kf-{kind.lower()}", namespace=USER_NAMESPACE),
           "apiVersion": "kubeflow.org/v1"}
    for kind, replicas in [("TFJob", {"Worker": 2}), ("MPIJob", {"Launcher": 1, "Worker": 1})]
}  # fmt: skip


def test_jobs_of_each_kind_run_to_success_through_the_web_and_the_controllers(leg):
    wide = job_manifest("TFJob", {"Worker": WIDE_WORKERS}, name="wide", namespace=USER_NAMESPACE,
                        successPolicy="AllWorkers")  # fmt: skip
    for manifest in [*JOBS.values(), *KUBEFLOW_JOBS.values(), wide]:
        response = leg.api("POST", "/api/jobs/", manifest)
        assert response.status_code == 202, response.text
    for kind, manifest in [*JOBS.items(), *KUBEFLOW_JOBS.items(), ("TFJob", wide)]:
        plural = f"{kind.lower()}s.{manifest['apiVersion'].split('/')[0]}"
        name = manifest["metadata"]["name"]
        leg.wait(
            lambda p=plural, n=name: condition_true(leg.get(p, n), "Succeeded"), f"{kind} {name} to succeed"
        )
    pods = leg.sim.store.list("pods", USER_NAMESPACE, label_selector="argoml.io/job-name=wide")
    assert len(pods["items"]) == WIDE_WORKERS


def test_the_writes_of_a_wide_job_queued_behind_the_shipped_limit_and_it_still_succeeded(leg):
    """200 creates from one reconcile against a burst of 50 at 20 QPS: writes waited, and every worker ran."""
    writes, waited = leg.rate_limiter_waits()
    print(f"in-cluster leg: {writes} writes waited {waited:.2f}s in all for the client-side limit")
    assert writes >= 2 * WIDE_WORKERS
    assert waited > 0
    status = leg.get("tfjobs.argoml.io", "wide")["status"]
    assert status["replicaStatuses"]["Worker"].get("succeeded") == WIDE_WORKERS


CPU_UTILIZATION = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}


def autoscaler(leg: Leg, name: str) -> dict[str, Any] | None:
    return leg.get("horizontalpodautoscalers.autoscaling", name)


def test_an_elastic_job_keeps_an_autoscaler_while_it_runs_and_scales_within_its_bounds(leg):
    """The controller's HPA grants (create, update, delete), exercised as a user meets them."""
    manifest = job_manifest(
        "PyTorchJob", {"Worker": 2}, name="elastic", namespace=USER_NAMESPACE,
        scripts={"Worker": {"duration": 15, "exitCode": 0}},
        elasticPolicy={"minReplicas": 1, "maxReplicas": 3, "metrics": [CPU_UTILIZATION]},
    )  # fmt: skip
    response = leg.api("POST", "/api/jobs/", manifest)
    assert response.status_code == 202, response.text
    made = leg.wait(lambda: autoscaler(leg, "elastic"), "the HorizontalPodAutoscaler")
    assert (made["spec"]["minReplicas"], made["spec"]["maxReplicas"]) == (1, 3)

    patch = '{"spec":{"elasticPolicy":{"maxReplicas":4}}}'
    kubectl(leg.sim, "patch", "pytorchjob", "elastic", "-n", USER_NAMESPACE, "--type=merge", "-p", patch)
    leg.wait(lambda: autoscaler(leg, "elastic")["spec"]["maxReplicas"] == 4, "the HPA to follow maxReplicas")
    kubectl(leg.sim, "scale", "pytorchjob", "elastic", "-n", USER_NAMESPACE, "--replicas=3")
    leg.wait(lambda: leg.get("pods", "elastic-worker-2") is not None, "the third worker the scale asked for")

    succeeded = lambda: condition_true(leg.get("pytorchjobs.argoml.io", "elastic"), "Succeeded")  # noqa: E731
    leg.wait(succeeded, "the elastic job to succeed")
    leg.wait(lambda: autoscaler(leg, "elastic") is None, "the finished job's HPA to go")


def mirrored_job(leg: Leg, name: str) -> Any:
    from jobs.models import TrainingJob

    return leg.wait(lambda: TrainingJob.objects.filter(namespace=USER_NAMESPACE, name=name).first(), "a row")


def test_the_dashboard_shows_a_replicas_logs_and_the_jobs_events(leg):
    from jobs.models import Replica

    job = mirrored_job(leg, "tf")
    replica = leg.wait(lambda: Replica.objects.filter(job=job, name="tf-worker-0").first(), "the replica row")
    logs = leg.page(f"/dashboard/jobs/{job.pk}/replicas/{replica.pk}/logs/")
    assert logs.status_code == 200
    assert LOG_LINE in logs.text
    events = leg.page(f"/dashboard/jobs/{job.pk}/events/")
    assert events.status_code == 200
    assert "SuccessfulCreatePod" in events.text or "Created pod" in events.text, events.text[-2000:]
    leg.check()


def test_a_sweep_runs_its_trials_and_opens_in_a_tensorboard_stopped_through_the_api(leg):
    from hyperparam.tests.conftest import make_hpw, make_spec

    spec = make_spec(
        hyperparams=[{"name": "lr", "values": [0.1, 0.2]}, {"name": "batch-size", "values": [16]}]
    )
    spec["workflow"]["templates"][0]["outputs"]["artifacts"] = [
        {"name": "tensorboard", "path": "/logs", "archive": {"none": {}}}
    ]
    response = leg.api("POST", "/api/hyperparams/", make_hpw(spec, name="sweep", uid=""))
    assert response.status_code in (201, 202), response.text
    leg.wait(lambda: phase(leg.get("hyperparamworkflows.argoml.io", "sweep")) == "Succeeded", "the sweep")
    spawn = {
        "namespace": USER_NAMESPACE,
        "workflow": "sweep",
        "kind": "HyperparamWorkflow",
        "idleTimeout": "1s",
    }

    # Spawned, opened again (the same instance, refreshed), stopped through the API.
    spawned = leg.api("POST", "/api/tensorboards/", spawn)
    assert spawned.status_code == 201, spawned.text
    name = spawned.json()["name"]
    leg.wait(lambda: phase(leg.get("tensorboards.argoml.io", name)) == "Ready", "the sweep's TensorBoard")
    assert leg.api("POST", "/api/tensorboards/", spawn).status_code == 200
    assert leg.api("DELETE", f"/api/tensorboards/{spawned_id(leg, name)}/").status_code == 202
    leg.wait(lambda: leg.get("tensorboards.argoml.io", name) is None, "the TensorBoard to go")


def test_a_tensorboard_left_alone_past_its_idle_timeout_is_culled_by_the_beat_task(leg):
    spawn = {"namespace": USER_NAMESPACE, "name": "scratch", "idleTimeout": "1s",
             "logdirs": [{"name": "run", "path": "s3://ml-artifacts/scratch/run"}]}  # fmt: skip
    assert leg.api("POST", "/api/tensorboards/", spawn).status_code == 201
    leg.wait(
        lambda: phase(leg.get("tensorboards.argoml.io", "scratch")) == "Ready", "the scratch TensorBoard"
    )
    time.sleep(1.5)  # past its idle timeout
    culled = leg.send_task("tensorboard.cull_idle")
    assert f"{USER_NAMESPACE}/scratch" in culled
    leg.wait(lambda: leg.get("tensorboards.argoml.io", "scratch") is None, "the culled TensorBoard to go")


def spawned_id(leg: Leg, name: str) -> int:
    from tensorboard.models import Tensorboard

    def row() -> Any:
        return Tensorboard.objects.filter(namespace=USER_NAMESPACE, name=name, deleted_at=None).first()

    return int(leg.wait(row, "its row").pk)


PIPELINE = """\
name: train-pipeline
dag:
  start_at: train
  steps:
    train:
      type: task
      command: python train.py
      next: success
    success:
      type: success
"""


def test_a_pipeline_is_submitted_and_its_workflow_runs(leg):
    body = {"pipeline": PIPELINE, "config": "docker_image: python:3.11\n", "namespace": USER_NAMESPACE}
    response = leg.api("POST", "/api/pipelines/submit", body)
    assert response.status_code == 201, response.text
    workflow = response.json()["name"]
    leg.wait(
        lambda: phase(leg.get("workflows.argoproj.io", workflow)) == "Succeeded", "the pipeline's workflow"
    )


def test_a_job_is_deleted_through_the_api(leg):
    job = mirrored_job(leg, "mx")
    assert leg.api("DELETE", f"/api/jobs/{job.pk}/").status_code in (202, 204)
    leg.wait(lambda: leg.get("mxjobs.argoml.io", "mx") is None, "the MXJob to go")


def test_a_resync_and_a_gc_run_as_the_worker(leg):
    from garbage.models import GCRun

    leg.send_task("kube.resync_all", wait=False)
    leg.send_task("garbage.collect_pods", wait=False)
    run = leg.wait(lambda: GCRun.objects.exclude(status=GCRun.Status.RUNNING).first(), "the GC run to finish")
    assert (run.status, run.errors) == (GCRun.Status.SUCCEEDED, 0), run.failures
    # The finished workflow pods (two trials and the pipeline's step) are gone; the jobs' pods are theirs.
    assert run.deleted >= 3
    left = leg.sim.store.list("pods", USER_NAMESPACE, label_selector="workflows.argoproj.io/workflow")
    assert left["items"] == []


def test_beat_runs_without_calling_the_cluster(leg):
    assert leg.processes["beat"].popen.poll() is None
    leg.check()


def test_no_request_was_forbidden_and_no_pod_warned(leg):
    """The summary the rule-removal script reads: every denial and Pod Security finding of the leg."""
    assert leg.problems() == []
