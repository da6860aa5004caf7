"""Every file in examples/ runs on the dev stack (`make run`) as its header says and reaches its end state.

The stack is the real one (kubesim with its kubelet and Argo, the worker, the web server) in a folder of its
own; examples go in through the real kubectl and the commands their headers name.
"""

from __future__ import annotations

import html
import http.cookiejar
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from argoml_site.tests.test_devstack import (
    STACK_VARIABLES,
    free_port,
    interrupt,
    processes_started_with,
    start_stack,
)
from examples.tests.closed_form import validation_loss
from kubesim.testing import KUBECTL

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
NAMESPACE = "team-a"
KUBEFLOW_END = "Created Running Succeeded"
# Applied with `kubectl apply -f`: (file, resource, name, jsonpath, end state).
APPLIED = [
    ("tfjob.yaml", "tfjob", "mnist-ps", "{.status.conditions[-1:].type}", "Succeeded"),
    ("mxjob.yaml", "mxjob", "mnist-mx", "{.status.conditions[-1:].type}", "Succeeded"),
    ("pytorchjob.yaml", "pytorchjob", "mnist-ddp", "{.status.conditions[-1:].type}", "Succeeded"),
    ("pytorchjob-elastic.yaml", "pytorchjob", "mnist-elastic", "{.status.conditions[-1:].type}", "Succeeded"),
    ("xgboostjob.yaml", "xgboostjob", "iris-xgb", "{.status.conditions[-1:].type}", "Succeeded"),
    ("jaxjob.yaml", "jaxjob", "jax-simple", "{.status.conditions[-1:].type}", "Succeeded"),
    ("paddlejob.yaml", "paddlejob", "paddle-simple", "{.status.conditions[-1:].type}", "Succeeded"),
    ("mpijob.yaml", "mpijob", "pi", "{.status.conditions[-1:].type}", "Succeeded"),
    # Kubeflow's own manifests (kubeflow.org/v1): conditions as Kubeflow writes them.
    *[
        (f"kubeflow/{kind}.yaml", f"{kind}s.kubeflow.org", name, "{.status.conditions[*].type}", KUBEFLOW_END)
        for kind, name in [
            ("tfjob", "tfjob-simple"),
            ("pytorchjob", "mnist-kubeflow"),
            ("mxjob", "mxjob-simple"),
            ("xgboostjob", "xgboostjob-iris"),
            ("jaxjob", "jaxjob-simple"),
            ("paddlejob", "paddlejob-simple"),
            ("mpijob", "tensorflow-mnist"),
        ]
    ],
    ("trainjob-torch.yaml", "trainjob", "mnist-torch", "{.status.conditions[-1:].type}", "Complete"),
    ("trainjob-deepspeed.yaml", "trainjob", "llm-ds", "{.status.conditions[-1:].type}", "Complete"),
    ("hyperparam-grid.yaml", "hpw", "mnist-grid", "{.status.phase}", "Succeeded"),
    ("hyperparam-plain-grid.yaml", "hpw", "shard-grid", "{.status.phase}", "Succeeded"),
    ("hyperparam-random.yaml", "hpw", "mnist-random", "{.status.phase}", "Succeeded"),
    ("hyperparam-tpe.yaml", "hpw", "mnist-tpe", "{.status.phase}", "Succeeded"),
    ("hyperparam-train.yaml", "hpw", "ridge-grid", "{.status.phase}", "Succeeded"),
    ("tensorboard-workflow.yaml", "workflow", "mnist-tb", "{.status.phase}", "Succeeded"),
    # Real training code (examples/training) on `make run`; here, on the scripted kubelet, its pods exit 0.
    ("tfjob-train.yaml", "tfjob", "tf-train", "{.status.conditions[-1:].type}", "Succeeded"),
    ("jaxjob-train.yaml", "jaxjob", "jax-train", "{.status.conditions[-1:].type}", "Succeeded"),
    ("xgboostjob-train.yaml", "xgboostjob", "xgb-train", "{.status.conditions[-1:].type}", "Succeeded"),
    ("tensorboard-train.yaml", "tensorboard", "tf-train", "{.status.phase}", "Ready"),
]
END_STATE_TIMEOUT_SECONDS = 300.0


@dataclass
class Stack:
    base_url: str
    dev_dir: Path
    kubeconfig: str

    def env(self) -> dict[str, str]:
        """What a user's shell beside `make run` has: nothing of ours but the dev folder the test chose."""
        env = {key: value for key, value in os.environ.items() if key not in STACK_VARIABLES}
        env["ARGOML_DEV_DIR"] = str(self.dev_dir)
        return env

    def kubectl(self, *args: str) -> str:
        result = subprocess.run(
            [str(KUBECTL), "--kubeconfig", self.kubeconfig, "-n", NAMESPACE, *args],
            capture_output=True, text=True, timeout=60, cwd=REPO,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout

    def manage(self, header_command: str, **env: str) -> subprocess.CompletedProcess[str]:
        """A `.venv/bin/python manage.py …` line from an example's header, run as written."""
        words = header_command.split()
        assignments = dict(word.split("=", 1) for word in words if re.fullmatch(r"[A-Z_]+=\S*", word))
        argv = [word for word in words if not re.fullmatch(r"[A-Z_]+=\S*", word)]
        assert argv[:2] == [".venv/bin/python", "manage.py"], header_command
        return subprocess.run(
            [sys.executable, *argv[1:]], cwd=REPO, env={**self.env(), **assignments, **env},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    def explain(self, resource: str, name: str) -> str:
        """What a person would look at when a job did not end as expected: it, and its pods' last lines."""
        found = self.kubectl("get", resource, name, "-o", "yaml")
        logs = subprocess.run(
            [str(KUBECTL), "--kubeconfig", self.kubeconfig, "-n", NAMESPACE, "logs", "--prefix", "--tail=40",
             "--all-containers", "-l", f"argoml.io/job-name={name}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return f"{found}\n--- its pods' logs ---\n{logs.stdout}{logs.stderr}"

    def wait_for(self, resource: str, name: str, jsonpath: str, wanted: str) -> str:
        deadline = time.monotonic() + END_STATE_TIMEOUT_SECONDS
        state = ""
        while time.monotonic() < deadline:
            state = self.kubectl("get", resource, name, "-o", f"jsonpath={jsonpath}")
            if state == wanted or state in ("Failed", "Error"):
                break
            time.sleep(2)
        return state


def header_command(example: Path, starts_with: str) -> str:
    """The command the example's header gives (continuation lines joined), as a user would copy it."""
    lines = [
        line.removeprefix("#").strip() for line in example.read_text().splitlines() if line.startswith("#")
    ]
    for index, line in enumerate(lines):
        if line.startswith(starts_with):
            command = line
            while command.endswith("\\"):
                index += 1
                command = command[:-1].rstrip() + " " + lines[index]
            return command
    raise AssertionError(f"{example.name}: no line starting with {starts_with!r} in its header")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    dev_dir = tmp_path_factory.mktemp("dev")
    port = free_port()
    process, output = start_stack(dev_dir, port)
    try:
        kubeconfig = output.wait_for(r"export KUBECONFIG=(\S+)").group(1)
        output.wait_for(r"Argo-ML is up", timeout=180)
        stack = Stack(f"http://127.0.0.1:{port}", dev_dir, kubeconfig)
        # the training examples' code, as their headers say, before the jobs that mount it
        create_code = header_command(EXAMPLES / "tfjob-train.yaml", "kubectl create configmap").split()
        assert create_code[:3] == ["kubectl", "create", "configmap"], create_code
        stack.kubectl(*[word for word in create_code[1:] if word not in ("-n", NAMESPACE)])
        for example, *_ in APPLIED:
            assert f"kubectl apply -f examples/{example}" in (EXAMPLES / example).read_text()
            stack.kubectl("apply", "-f", str(EXAMPLES / example))
        yield stack
    finally:
        if process.poll() is None:
            interrupt(process)
        for pid in processes_started_with(f"ARGOML_DEV_DIR={dev_dir}"):
            os.kill(pid, signal.SIGKILL)


def test_every_example_is_covered_here():
    covered = {example for example, *_ in APPLIED} | {
        "pipeline/pipeline.yaml", "pipeline/config.yaml", "injection-rule.yaml", "gc-namespace-policy.yaml",
    }  # fmt: skip
    assert {str(path.relative_to(EXAMPLES)) for path in EXAMPLES.rglob("*.yaml")} == covered


@pytest.mark.parametrize(
    ("example", "resource", "name", "jsonpath", "wanted"), APPLIED, ids=[a[0] for a in APPLIED]
)
def test_an_applied_example_reaches_its_end_state(stack, example, resource, name, jsonpath, wanted):
    assert stack.wait_for(resource, name, jsonpath, wanted) == wanted, stack.explain(resource, name)
    if resource == "hpw":
        best = stack.kubectl("get", "hpw", name, "-o", "jsonpath={.status.bestTrial}")
        if "objective" in yaml.safe_load((EXAMPLES / example).read_text())["spec"]:
            assert float(json.loads(best)["metric"]) >= 0, (
                "the simulator reported the objective as the header says"
            )
        else:
            assert best == "", "a sweep without an objective has no best trial"


def test_kubectl_describe_shows_the_events_the_controller_recorded(stack):
    assert stack.wait_for("tfjob", "mnist-ps", "{.status.conditions[-1:].type}", "Succeeded") == "Succeeded"
    events = stack.kubectl("describe", "tfjob", "mnist-ps").split("Events:", 1)[1]
    assert "<none>" not in events
    assert "SuccessfulCreatePod" in events
    assert "argoml.io/" in events  # From: the recording controller
    assert "mnist-ps" in stack.kubectl("get", "events")


def test_the_tensorboard_example_opens_a_tensorboard_for_its_workflow(stack):
    assert stack.wait_for("workflow", "mnist-tb", "{.status.phase}", "Succeeded") == "Succeeded"
    created = stack.manage(".venv/bin/python manage.py drf_create_token admin", DEBUG="true")
    assert created.returncode == 0, created.stderr
    token = created.stdout.split()[2]
    curl = header_command(EXAMPLES / "tensorboard-workflow.yaml", "curl -X POST")
    body = json.loads(re.search(r"-d '(\{.*\})'", curl).group(1))
    request = urllib.request.Request(
        f"{stack.base_url}/api/tensorboards/",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        name = json.load(response)["name"]
    assert stack.wait_for("tensorboard", name, "{.status.phase}", "Ready") == "Ready"


def test_the_pipeline_example_is_submitted_and_succeeds(stack, tmp_path):
    command = header_command(EXAMPLES / "pipeline" / "pipeline.yaml", "DEBUG=true .venv/bin/python")
    submitted = stack.manage(command)
    assert submitted.returncode == 0, submitted.stderr
    name = re.search(r"submitted workflow (\S+) in namespace team-a", submitted.stderr).group(1)
    assert stack.wait_for("workflow", name, "{.status.phase}", "Succeeded") == "Succeeded"


@pytest.mark.parametrize(("example", "model", "key"), [
    ("injection-rule.yaml", "webhooks.injectionrule", "wandb-key"),
    ("gc-namespace-policy.yaml", "garbage.gcnamespacepolicy", "team-archive"),
])  # fmt: skip
def test_a_fixture_example_loads_into_the_stacks_database(stack, example, model, key):
    loaded = stack.manage(header_command(EXAMPLES / example, "DEBUG=true .venv/bin/python"))
    assert loaded.returncode == 0, loaded.stderr
    dumped = stack.manage(f".venv/bin/python manage.py dumpdata {model}", DEBUG="true")
    assert key in [
        row["fields"].get("name") or row["fields"].get("namespace") for row in json.loads(dumped.stdout)
    ]


def job_seconds(stack: Stack, resource: str, name: str) -> float:
    """How long the job ran, from its status (`startTime` to `completionTime`): the figure docs/training.md
    cites, printed with `-s`."""
    times = stack.kubectl(
        "get", resource, name, "-o", "jsonpath={.status.startTime} {.status.completionTime}"
    )
    started, completed = (datetime.fromisoformat(value.replace("Z", "+00:00")) for value in times.split())
    seconds = (completed - started).total_seconds()
    print(f"{resource}/{name}: {seconds:.0f} s from start to completion")
    return seconds


def training_results(stack: Stack, *pods: str) -> dict[str, dict]:
    """The closing `RESULT {json}` line each pod's training script printed, as `kubectl logs` shows it."""
    found = {}
    for pod in pods:
        lines = [line for line in stack.kubectl("logs", pod).splitlines() if line.startswith("RESULT ")]
        assert lines, f"{pod} printed no RESULT line:\n{stack.kubectl('logs', pod)[-3000:]}"
        found[pod] = json.loads(lines[-1].removeprefix("RESULT "))
    return found


def test_the_tfjob_trains_one_keras_model_for_real(stack):
    """TF_CONFIG as the operator wrote it, read by TensorFlow's MultiWorkerMirroredStrategy in real pods."""
    wanted = "Succeeded"
    assert stack.wait_for("tfjob", "tf-train", "{.status.conditions[-1:].type}", wanted) == wanted, (
        stack.explain("tfjob", "tf-train")
    )
    results = training_results(stack, "tf-train-chief-0", "tf-train-worker-0", "tf-train-worker-1")
    assert sorted(result["task"] for result in results.values()) == ["chief:0", "worker:0", "worker:1"]
    for result in results.values():
        assert result["replicas_in_sync"] == 3, "MultiWorkerMirroredStrategy found every replica in TF_CONFIG"
        assert result["loss_last"] < result["loss_first"] / 2
    assert len({result["weights_sha256"] for result in results.values()}) == 1, results
    assert job_seconds(stack, "tfjob", "tf-train") > 0


def test_the_jaxjob_sums_across_its_processes_for_real(stack):
    wanted = "Succeeded"
    assert stack.wait_for("jaxjob", "jax-train", "{.status.conditions[-1:].type}", wanted) == wanted, (
        stack.explain("jaxjob", "jax-train")
    )
    results = list(training_results(stack, "jax-train-worker-0", "jax-train-worker-1").values())
    assert sorted(result["process"] for result in results) == [0, 1]
    for result in results:
        assert result["processes"] == 2
        assert result["psum"] == result["expected_psum"] == 1.0 + 2.0
    assert len({result["weights_sha256"] for result in results}) == 1, results
    assert job_seconds(stack, "jaxjob", "jax-train") > 0


def test_the_xgboostjob_builds_one_model_through_the_tracker_for_real(stack):
    wanted = "Succeeded"
    assert stack.wait_for("xgboostjob", "xgb-train", "{.status.conditions[-1:].type}", wanted) == wanted, (
        stack.explain("xgboostjob", "xgb-train")
    )
    results = list(
        training_results(stack, "xgb-train-master-0", "xgb-train-worker-0", "xgb-train-worker-1").values()
    )
    assert sorted(result["rank"] for result in results) == [0, 1, 2]
    for result in results:
        assert result["world_size"] == 3
        assert result["logloss_last"] < result["logloss_first"]
    assert len({result["model_sha256"] for result in results}) == 1, results
    assert job_seconds(stack, "xgboostjob", "xgb-train") > 0


def test_a_tensorboard_serves_the_scalars_the_tfjob_wrote_through_port_forward(stack):
    """The chief's event files on the claim, the real TensorBoard of examples/tensorboard-train.yaml on
    them, opened as its header says: `kubectl port-forward`, then TensorBoard's own JSON API."""
    assert stack.wait_for("tfjob", "tf-train", "{.status.conditions[-1:].type}", "Succeeded") == "Succeeded"
    chief = training_results(stack, "tf-train-chief-0")["tf-train-chief-0"]
    assert stack.wait_for("tensorboard", "tf-train", "{.status.phase}", "Ready") == "Ready"
    forward = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", stack.kubeconfig, "-n", NAMESPACE,
         "port-forward", "svc/tb-tf-train", ":80"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = int(forward.stdout.readline().split("127.0.0.1:")[1].split()[0])
        base = f"http://127.0.0.1:{port}/tensorboards/{NAMESPACE}/tf-train"
        deadline = time.monotonic() + 60
        runs: list[str] = []
        while "tf-train/train" not in runs and time.monotonic() < deadline:  # it reloads every few seconds
            with urllib.request.urlopen(f"{base}/data/runs", timeout=30) as response:
                runs = json.load(response)
            time.sleep(1)
        assert "tf-train/train" in runs, runs
        query = "run=tf-train%2Ftrain&tag=loss"
        with urllib.request.urlopen(f"{base}/data/plugin/scalars/scalars?{query}", timeout=30) as response:
            scalars = {step: value for _wall, step, value in json.load(response)}
    finally:
        forward.terminate()
        forward.wait(timeout=10)
    assert sorted(scalars) == [1, 2, 3, 4, 5]
    assert scalars[1] == pytest.approx(chief["loss_first"], rel=1e-6)
    assert scalars[5] == pytest.approx(chief["loss_last"], rel=1e-6)


def test_the_training_sweeps_best_trial_is_the_one_computed_directly(stack):
    """Real trials, their metric read from the file each wrote: the best is what the closed form says."""
    assert stack.wait_for("hpw", "ridge-grid", "{.status.phase}", "Succeeded") == "Succeeded"
    best = json.loads(stack.kubectl("get", "hpw", "ridge-grid", "-o", "jsonpath={.status.bestTrial}"))
    parameters = {name: float(value) for name, value in best["parameters"].items()}
    assert parameters == {"lr": 0.1, "l2": 0.0}
    assert float(best["metric"]) == pytest.approx(validation_loss(0.1, 0.0, 50), rel=1e-9)


# --- the dashboard a person meets on `make run`, with every example's objects in it -------------------------

#: Pages the walk requests at most: every example's objects and their tabs, events, logs and plots fit.
MAX_PAGES = 800
#: What a person's browser requests of a page: its links, the fragments htmx loads (a job's events) and the
#: figures its scripts fetch (`data-plots-url`).
LINK = re.compile(r'(?:href|hx-get|data-[\w-]+)="(/[^"]*)"')
#: Where the walk goes: the dashboard, and the admin's index and each model's list.
WALKED = re.compile(r"^/dashboard/|^/admin/$|^/admin/\w+/\w+/$")
#: Pages the walk must reach (pk: any object's), so that each kind of object was seen with its data.
MUST_WALK = (
    "jobs/{pk}/", "jobs/{pk}/events/", "jobs/{pk}/replicas/{pk}/logs/",
    "sweeps/{pk}/", "sweeps/{pk}/plots.json", "sweeps/{pk}/trials/",
    "trainjobs/{pk}/", "trainjobs/{pk}/events/", "trainjobs/{pk}/plots.json", "tensorboards/", "gc/",
)  # fmt: skip


def signed_in(stack: Stack) -> urllib.request.OpenerDirector:
    """A browser's session: the sign-in form posted with the admin's password `make run` saved."""
    credentials = dict(
        line.split(": ", 1) for line in (stack.dev_dir / "admin-credentials").read_text().splitlines() if line
    )
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    with opener.open(f"{stack.base_url}/dashboard/login/", timeout=30) as response:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode()).group(1)
    form = {"username": credentials["username"], "password": credentials["password"]}
    body = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": token}).encode()
    with opener.open(f"{stack.base_url}/dashboard/login/", data=body, timeout=30) as response:
        assert urllib.parse.urlsplit(response.url).path == "/dashboard/", f"not signed in: {response.url}"
    return opener


def links(page: str) -> set[str]:
    """The site's own paths a page links to or loads, without their #fragment."""
    found = {html.unescape(link).split("#", 1)[0] for link in LINK.findall(page)}
    return {link for link in found if WALKED.match(link)}


def test_every_dashboard_page_answers_on_the_stack_make_run_starts(stack):
    """Issue 29: the stack people meet is the one tests run. Once the examples ran, a signed-in person
    follows every link of the dashboard (and the admin's lists) on the stack's SQLite: no page is a 5xx."""
    for _example, resource, name, jsonpath, wanted in APPLIED:
        assert stack.wait_for(resource, name, jsonpath, wanted) == wanted, stack.explain(resource, name)
    opener = signed_in(stack)
    seen, queue, failures = set(), ["/dashboard/", "/admin/"], []
    while queue and len(seen) < MAX_PAGES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            with opener.open(stack.base_url + path, timeout=60) as response:
                page = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:  # a link of ours that fails, whatever the status
            failures.append(f"{path}: {error.code}")
            continue
        queue += sorted(links(page) - seen)
    print(f"walked {len(seen)} pages of the stack's dashboard and admin")
    assert failures == [], failures
    assert not set(queue) - seen, f"more than {MAX_PAGES} pages: raise MAX_PAGES"
    walked = " ".join(seen)
    for page in MUST_WALK:
        assert re.search("/dashboard/" + page.replace("{pk}", r"\d+") + "( |$)", walked), f"{page} not walked"
