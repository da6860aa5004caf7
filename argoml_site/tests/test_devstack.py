"""`make run` on the embedded defaults: SQLite, embedded Redis, worker, web; Ctrl-C leaves nothing behind."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from minio import Minio

from argoml_site.devstack import Supervisor, listener_allowed_hosts, write_private

REPO = Path(__file__).resolve().parents[2]
TFJOB = """
apiVersion: argoml.io/v1alpha1
kind: TFJob
metadata: {name: smoke, namespace: default}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: tensorflow, image: tensorflow/tensorflow:2.16.1}]}}
"""
STACK_VARIABLES = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "KUBECONFIG")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def processes_started_with(marker: str) -> list[int]:
    """Pids whose environment carries `marker`: every child of the stack inherits it."""
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker.encode() in environ.read_bytes():
                pids.append(int(environ.parent.name))
        except OSError:
            continue
    return [pid for pid in pids if pid != os.getpid()]


class StackOutput:
    """Collects the stack's output lines in a thread so the test can wait for a line with a timeout."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if match := re.search(pattern, line):
                    return match
            time.sleep(0.1)
        raise AssertionError(f"no line matched {pattern!r} in:\n{''.join(self.lines)}")


def start_stack(dev_dir: Path, port: int) -> tuple[subprocess.Popen[str], StackOutput]:
    """`make run` as a user runs it: only the dev folder and the ports differ, so the test owns its SQLite,
    Redis and ports."""
    env = {key: value for key, value in os.environ.items() if key not in STACK_VARIABLES}
    env.update(ARGOML_DEV_DIR=str(dev_dir), DEBUG="true", PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "devstack", "--port", str(port), "--webhook-port", str(free_port()),
         "--tensorboard-port", str(free_port())],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    return process, StackOutput(process.stdout)


def interrupt(process: subprocess.Popen[str]) -> int:
    """Ctrl-C: the terminal sends SIGINT to the whole foreground process group."""
    os.killpg(process.pid, signal.SIGINT)
    return process.wait(timeout=60)


def without_traceback(output: StackOutput) -> str:
    """The stack's whole output once it stopped, which must hold no traceback (a Ctrl-C of `make run`
    printed one per watch of the worker, from the simulator: issue 29)."""
    output.wait_for(r"^Stopped\.")
    printed = "".join(output.lines)
    assert "Traceback" not in printed, printed[printed.index("Traceback") - 500 :][:5000]
    return printed


@pytest.fixture
def stack(tmp_path):
    port = free_port()
    marker = f"ARGOML_DEV_DIR={tmp_path}"
    process, output = start_stack(tmp_path, port)
    try:
        yield process, output, f"http://127.0.0.1:{port}", marker
    finally:
        if process.poll() is None:
            interrupt(process)
        for pid in processes_started_with(marker):
            os.kill(pid, signal.SIGKILL)


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.mark.browser
def test_make_run_brings_up_the_stack_and_ctrl_c_stops_every_process(stack, page, tmp_path):
    process, output, base_url, marker = stack
    kubeconfig = output.wait_for(r"export KUBECONFIG=(\S+)").group(1)
    credentials = output.wait_for(r"Log in as (\S+) / (\S+)")
    output.wait_for(r"Worker answered a ping task")
    repository = output.wait_for(r"Artifact repository: s3://(\S+) at http://(\S+) \(keys in (\S+);")
    output.wait_for(r"Argo-ML is up")
    assert (tmp_path / "db.sqlite3").exists(), "the default database is SQLite in the dev folder"

    # The artifact repository answers its keys (kept owner-only), which the dev namespace's Secret holds.
    keys_file = Path(repository.group(3))
    assert oct(keys_file.stat().st_mode & 0o777) == "0o600"
    keys = dict(line.split(": ", 1) for line in keys_file.read_text().splitlines())
    assert Minio(repository.group(2), keys["accesskey"], keys["secretkey"], secure=False).bucket_exists(
        repository.group(1)
    )
    secret = subprocess.run(
        [str(Path(sys.executable).with_name("kubectl")), "--kubeconfig", kubeconfig, "-n", "team-a", "get",
         "secret", "tensorboard-s3", "-o", "jsonpath={.data.secretkey}"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert base64.b64decode(secret).decode() == keys["secretkey"]

    assert get_json(f"{base_url}/healthz") == (200, {"status": "ok"})
    status, ready = get_json(f"{base_url}/readyz")
    assert status == 200, ready
    assert ready["checks"] == {"database": "ok", "redis": "ok", "cluster": "ok"}

    # The operator runs a job on the simulated cluster, driven by kubectl as a user would.
    kubectl = [str(Path(sys.executable).with_name("kubectl")), "--kubeconfig", kubeconfig]
    subprocess.run([*kubectl, "apply", "-f", "-"], input=TFJOB, text=True, check=True, timeout=60)
    state = ""
    deadline = time.monotonic() + 90
    while state != "Succeeded" and time.monotonic() < deadline:
        time.sleep(1)
        state = subprocess.run(
            [*kubectl, "get", "tfjob", "smoke", "-o", "jsonpath={.status.conditions[-1:].type}"],
            capture_output=True, text=True, timeout=60,
        ).stdout  # fmt: skip
    assert state == "Succeeded"

    page.goto(f"{base_url}/admin/")
    page.fill("#id_username", credentials.group(1))
    page.fill("#id_password", credentials.group(2))
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    assert "Site administration" in page.content()
    assert page.is_visible("text=Namespace grants")

    assert interrupt(process) == 0
    without_traceback(output)
    assert processes_started_with(marker) == []


# Unknown fields are refused by the CRD's schema before admission; these two problems pass the schema and
# reach the validating webhook, which reports both at once.
BAD_TFJOB = """
apiVersion: argoml.io/v1alpha1
kind: TFJob
metadata: {name: bad, namespace: default}
spec:
  tfReplicaSpecs:
    Workr:
      replicas: 1
      template: {spec: {containers: [{name: tensorflow, image: tensorflow/tensorflow:2.16.1}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: trainer, image: tensorflow/tensorflow:2.16.1}]}}
"""


TRAINJOB_ON_A_MISSING_RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: lost, namespace: default}
spec:
  runtimeRef: {name: torch-gone}
"""

TRAINJOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: smoke, namespace: default}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2, command: [torchrun, train.py]}
"""


def test_kubectl_apply_of_a_bad_tfjob_is_refused_by_the_stacks_webhooks_with_every_problem(stack):
    process, output, base_url, marker = stack
    kubeconfig = output.wait_for(r"export KUBECONFIG=(\S+)").group(1)
    output.wait_for(r"Admission webhooks: https://127\.0\.0\.1:\d+/webhooks/ \(registered")
    output.wait_for(r"Argo-ML is up")
    kubectl = [str(Path(sys.executable).with_name("kubectl")), "--kubeconfig", kubeconfig]
    refused = subprocess.run(
        [*kubectl, "apply", "-f", "-"], input=BAD_TFJOB, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1, refused.stdout
    assert 'The TFJob "bad" is invalid' in refused.stderr
    assert "spec.tfReplicaSpecs.Workr: unknown replica type; expected one of" in refused.stderr
    assert '(did you mean "Worker"?)' in refused.stderr
    assert "spec.tfReplicaSpecs.Worker.template.spec.containers" in refused.stderr
    # Kubeflow's group is served too, and its jobs are checked as ours are, then run.
    kubeflow_bad = BAD_TFJOB.replace("argoml.io/v1alpha1", "kubeflow.org/v1")
    refused = subprocess.run(
        [*kubectl, "apply", "-f", "-"], input=kubeflow_bad, capture_output=True, text=True, timeout=60
    )
    assert "spec.tfReplicaSpecs.Workr: unknown replica type" in refused.stderr
    kubeflow_job = TFJOB.replace("argoml.io/v1alpha1", "kubeflow.org/v1")
    subprocess.run([*kubectl, "apply", "-f", "-"], input=kubeflow_job, text=True, check=True, timeout=60)
    state, deadline = "", time.monotonic() + 90
    latest = "jsonpath={.status.conditions[-1:].type}"
    while state != "Succeeded" and time.monotonic() < deadline:
        time.sleep(1)
        state = subprocess.run(
            [*kubectl, "get", "tfjobs.kubeflow.org", "smoke", "-o", latest],
            capture_output=True, text=True, timeout=60,
        ).stdout  # fmt: skip
    assert state == "Succeeded"
    # Kubeflow Trainer's kinds are served, with its ready-made runtimes, and a TrainJob naming a runtime
    # that does not exist is refused by the webhooks.
    runtimes = subprocess.run(
        [*kubectl, "get", "clustertrainingruntimes", "-o", "name"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert "clustertrainingruntime.trainer.kubeflow.org/torch-distributed" in runtimes
    assert len(runtimes) == 4
    refused = subprocess.run(
        [*kubectl, "apply", "-f", "-"], input=TRAINJOB_ON_A_MISSING_RUNTIME, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout
    assert "spec.runtimeRef.name: ClusterTrainingRuntime 'torch-gone' does not exist" in refused.stderr
    # A TrainJob on a ready-made runtime runs without JobSet: its two nodes, then Complete.
    subprocess.run([*kubectl, "apply", "-f", "-"], input=TRAINJOB, text=True, check=True, timeout=60)
    state, deadline = "", time.monotonic() + 90
    while state != "Complete" and time.monotonic() < deadline:
        time.sleep(1)
        state = subprocess.run(
            [*kubectl, "get", "trainjobs", "smoke", "-o", latest], capture_output=True, text=True, timeout=60
        ).stdout
    assert state == "Complete"
    nodes = subprocess.run(
        [*kubectl, "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=smoke", "-o", "name"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert sorted(nodes) == ["pod/smoke-node-0-0", "pod/smoke-node-0-1"]
    # The web server does not answer reviews: the listener does, on its own port.
    assert urllib.request.urlopen(f"{base_url}/healthz", timeout=10).status == 200
    review = urllib.request.Request(f"{base_url}/webhooks/validate", data=b"{}")
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(review, timeout=10)
    assert answered.value.code == 404
    assert interrupt(process) == 0
    without_traceback(output)
    assert processes_started_with(marker) == []


def test_a_second_run_reuses_the_admin_user_and_says_where_its_password_is(stack, tmp_path):
    process, output, _, marker = stack
    output.wait_for(r"Argo-ML is up")
    assert interrupt(process) == 0
    without_traceback(output)
    assert "password: " in (tmp_path / "admin-credentials").read_text()
    assert oct((tmp_path / "admin-credentials").stat().st_mode & 0o777) == "0o600"

    again, second = start_stack(tmp_path, free_port())
    try:
        second.wait_for(r"Admin user: admin \(password saved in .*admin-credentials")
        second.wait_for(r"Argo-ML is up")
    finally:
        assert interrupt(again) == 0
    without_traceback(second)
    assert processes_started_with(marker) == []


def test_a_busy_port_is_reported_before_anything_starts(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {key: value for key, value in os.environ.items() if key not in STACK_VARIABLES}
        env.update(ARGOML_DEV_DIR=str(tmp_path), DEBUG="true")
        result = subprocess.run(
            [sys.executable, "manage.py", "devstack", "--port", str(port)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode != 0
    assert f"Port {port} on 127.0.0.1 is in use" in result.stderr


def test_the_supervisor_stops_a_child_that_ignores_sigterm(tmp_path):
    supervisor = Supervisor(cwd=tmp_path, stop_grace_seconds=1)
    ignore_sigterm = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    stubborn = supervisor.start("stubborn", [sys.executable, "-c", ignore_sigterm], dict(os.environ))
    time.sleep(0.5)
    started = time.monotonic()
    supervisor.stop_all()
    assert stubborn.process.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 5


def test_the_supervisor_stops_the_newest_child_before_signalling_the_one_it_talks_to(tmp_path):
    """The worker and the web server stop while the simulator and Redis they use still serve them."""
    journal = tmp_path / "journal"
    polite = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    open(sys.argv[1], 'a').write(sys.argv[2] + ' stopping\\n'); time.sleep(0.5)\n"
        "    open(sys.argv[1], 'a').write(sys.argv[2] + ' exited\\n'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "open(sys.argv[1], 'a').write(sys.argv[2] + ' ready\\n')\n"
        "time.sleep(60)\n"
    )
    supervisor = Supervisor(cwd=tmp_path)
    for name in ("simulator", "worker"):
        supervisor.start(name, [sys.executable, "-c", polite, str(journal), name], dict(os.environ))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (journal.exists() and journal.read_text().count("ready") == 2):
        time.sleep(0.05)
    supervisor.stop_all()
    assert journal.read_text().splitlines()[2:] == [
        "worker stopping", "worker exited", "simulator stopping", "simulator exited",
    ]  # fmt: skip


def test_the_supervisor_lets_a_child_stop_its_own_processes(tmp_path):
    """SIGTERM reaches the child, not its group: a Celery worker ends its pool after the running tasks,
    where a pool process signalled directly would die mid-task (a WorkerLostError at every Ctrl-C)."""
    journal = tmp_path / "journal"
    pool_process = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    open(sys.argv[1], 'a').write('pool stopping\\n'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "open(sys.argv[1], 'a').write('pool ready\\n')\n"
        "time.sleep(60)\n"
    )
    parent = (
        "import signal, subprocess, sys, time\n"
        "pool = subprocess.Popen([sys.executable, '-c', sys.argv[2], sys.argv[1]])\n"
        "def stop(*_):\n"
        "    open(sys.argv[1], 'a').write('parent stopping\\n'); time.sleep(0.5)\n"
        "    open(sys.argv[1], 'a').write('parent stops its pool\\n')\n"
        "    pool.terminate(); pool.wait(); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "time.sleep(60)\n"
    )
    supervisor = Supervisor(cwd=tmp_path)
    supervisor.start("worker", [sys.executable, "-c", parent, str(journal), pool_process], dict(os.environ))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (journal.exists() and "pool ready" in journal.read_text()):
        time.sleep(0.05)
    supervisor.stop_all()
    assert journal.read_text().splitlines() == [
        "pool ready",
        "parent stopping",
        "parent stops its pool",
        "pool stopping",
    ]


def test_the_supervisor_kills_what_a_stopped_child_left_behind(tmp_path):
    """A child that exits on SIGTERM without stopping its own processes leaves none running."""
    pid_file = tmp_path / "orphan.pid"
    parent = (
        "import signal, subprocess, sys, time\n"
        "orphan = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open(sys.argv[1], 'w').write(str(orphan.pid))\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
        "time.sleep(60)\n"
    )
    supervisor = Supervisor(cwd=tmp_path)
    supervisor.start("careless", [sys.executable, "-c", parent, str(pid_file)], dict(os.environ))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (pid_file.exists() and pid_file.read_text()):
        time.sleep(0.05)
    orphan = int(pid_file.read_text())
    supervisor.stop_all()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{orphan}").exists() and not _is_zombie(orphan):
        time.sleep(0.05)
    assert not Path(f"/proc/{orphan}").exists() or _is_zombie(orphan)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_private_file_is_owner_only_even_under_a_permissive_umask(tmp_path):
    previous = os.umask(0)
    try:
        write_private(tmp_path / "admin-credentials", "password: x\n")
    finally:
        os.umask(previous)
    assert oct((tmp_path / "admin-credentials").stat().st_mode & 0o777) == "0o600"
    assert (tmp_path / "admin-credentials").read_text() == "password: x\n"


def test_a_private_file_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path):
    elsewhere = tmp_path / "world-readable"
    elsewhere.write_text("")
    (tmp_path / "admin-credentials").symlink_to(elsewhere)
    write_private(tmp_path / "admin-credentials", "password: x\n")
    assert elsewhere.read_text() == ""
    assert not (tmp_path / "admin-credentials").is_symlink()
    assert (tmp_path / "admin-credentials").read_text() == "password: x\n"


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        (None, "localhost,127.0.0.1,[::1],argoml-webhooks.argoml.svc"),
        ("", "localhost,127.0.0.1,[::1],argoml-webhooks.argoml.svc"),
        ("dev.example.org", "dev.example.org,argoml-webhooks.argoml.svc"),
    ],
)
def test_the_webhook_listener_answers_the_stacks_hosts_and_the_service_name_pods_report_to(allowed, expected):
    env = {} if allowed is None else {"ALLOWED_HOSTS": allowed}
    assert listener_allowed_hosts(env) == expected
