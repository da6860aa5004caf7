"""Every file in examples/ runs on the dev stack (`make run`) as its header says and reaches its end state.

The stack is the real one (kubesim with its kubelet and Argo, the worker, the web server) in a folder of its
own; examples go in through the real kubectl and the commands their headers name.
"""

from __future__ import annotations

import html
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from argoml_site.tests import first_hour
from argoml_site.tests.stack_logs import offending_lines, report
from argoml_site.tests.test_devstack import (
    STACK_VARIABLES,
    free_port,
    interrupt,
    processes_started_with,
    start_stack,
)
from argoml_site.tests.trainjob_progress import forger_pod, signed_in
from dashboard.tests.browser import sign_in
from examples.tests.closed_form import validation_loss
from kubesim.testing import KUBECTL
from web.tests.test_csp import REPORT_VIOLATIONS

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
    ("trainjob-train.yaml", "trainjob", "xgb-progress", "{.status.conditions[-1:].type}", "Complete"),
    ("hyperparam-grid.yaml", "hpw", "mnist-grid", "{.status.phase}", "Succeeded"),
    ("hyperparam-plain-grid.yaml", "hpw", "shard-grid", "{.status.phase}", "Succeeded"),
    ("hyperparam-random.yaml", "hpw", "mnist-random", "{.status.phase}", "Succeeded"),
    ("hyperparam-tpe.yaml", "hpw", "mnist-tpe", "{.status.phase}", "Succeeded"),
    ("hyperparam-train.yaml", "hpw", "ridge-grid", "{.status.phase}", "Succeeded"),
    ("hyperparam-tensorboard.yaml", "hpw", "ridge-tb", "{.status.phase}", "Succeeded"),
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
    tensorboard_url: str = ""  # the TensorBoard origin (a port of its own), as `make run` prints it

    def env(self) -> dict[str, str]:
        """What a user's shell beside `make run` has: nothing of ours but the dev folder the test chose."""
        env = {key: value for key, value in os.environ.items() if key not in STACK_VARIABLES}
        env["ARGOML_DEV_DIR"] = str(self.dev_dir)
        return env

    def kubectl(self, *args: str, stdin: str | None = None, namespace: str = NAMESPACE) -> str:
        return self.run_kubectl("-n", namespace, *args, stdin=stdin)

    def run_kubectl(self, *args: str, stdin: str | None = None) -> str:
        """kubectl as a user's shell runs it beside `make run` (KUBECONFIG exported, in the checkout)."""
        result = subprocess.run(
            [str(KUBECTL), *args], capture_output=True, text=True, timeout=60, cwd=REPO, input=stdin,
            env={**self.env(), "KUBECONFIG": self.kubeconfig},
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

    def explain(
        self, resource: str, name: str, pods: str = "argoml.io/job-name", namespace: str = NAMESPACE
    ) -> str:
        """What a person would look at when a job did not end as expected: it, and its pods' last lines
        (its pods carry the label `pods` with its name)."""
        found = self.kubectl("get", resource, name, "-o", "yaml", namespace=namespace)
        logs = subprocess.run(
            [str(KUBECTL), "--kubeconfig", self.kubeconfig, "-n", namespace, "logs", "--prefix", "--tail=40",
             "--all-containers", "-l", f"{pods}={name}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return f"{found}\n--- its pods' logs ---\n{logs.stdout}{logs.stderr}"

    def wait_for(
        self, resource: str, name: str, jsonpath: str, wanted: str, namespace: str = NAMESPACE
    ) -> str:
        deadline = time.monotonic() + END_STATE_TIMEOUT_SECONDS
        state = ""
        while time.monotonic() < deadline:
            state = self.kubectl("get", resource, name, "-o", f"jsonpath={jsonpath}", namespace=namespace)
            if state == wanted or state in ("Failed", "Error"):
                break
            time.sleep(2)
        return state


def namespace_of(example: str) -> str:
    """The namespace the example's first document names (Kubeflow's own say `kubeflow`, as Kubeflow writes
    them)."""
    first = next(doc for doc in yaml.safe_load_all((EXAMPLES / example).read_text()) if doc)
    return first["metadata"].get("namespace", NAMESPACE)


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
    started = time.monotonic()
    dev_dir = tmp_path_factory.mktemp("dev")
    port = free_port()
    process, output = start_stack(dev_dir, port)
    try:
        kubeconfig = output.wait_for(r"export KUBECONFIG=(\S+)").group(1)
        output.wait_for(r"Argo-ML is up", timeout=180)
        tensorboards = output.wait_for(r"TensorBoards open on their own origin: (\S+)").group(1)
        stack = Stack(f"http://127.0.0.1:{port}", dev_dir, kubeconfig, tensorboards)
        # the training examples' code, as their headers say, before the jobs that mount it
        create_code = header_command(EXAMPLES / "tfjob-train.yaml", "kubectl create configmap").split()
        assert create_code[:3] == ["kubectl", "create", "configmap"], create_code
        stack.kubectl(*[word for word in create_code[1:] if word not in ("-n", NAMESPACE)])
        for example, *_ in APPLIED:
            assert f"kubectl apply -f examples/{example}" in (EXAMPLES / example).read_text()
            stack.kubectl("apply", "-f", str(EXAMPLES / example), namespace=namespace_of(example))
        yield stack
    finally:
        if process.poll() is None:
            interrupt(process)
        for pid in processes_started_with(f"ARGOML_DEV_DIR={dev_dir}"):
            os.kill(pid, signal.SIGKILL)
        print(f"the examples' dev stack, from its start to its stop: {time.monotonic() - started:.0f} s")
    # Issue 29: after every test, and the stack stopped (its shutdown too), no process of it printed a
    # traceback or served a 5xx; pytest reports this as an error at the module's last test's teardown.
    output.wait_for(r"^Stopped\.", timeout=30)
    found = offending_lines(list(output.lines))
    assert found == [], report(found)


def test_every_example_is_covered_here():
    covered = {example for example, *_ in APPLIED} | {
        "pipeline/pipeline.yaml", "pipeline/config.yaml", "injection-rule.yaml", "gc-namespace-policy.yaml",
    }  # fmt: skip
    assert {str(path.relative_to(EXAMPLES)) for path in EXAMPLES.rglob("*.yaml")} == covered


@pytest.mark.parametrize(
    ("example", "resource", "name", "jsonpath", "wanted"), APPLIED, ids=[a[0] for a in APPLIED]
)
def test_an_applied_example_reaches_its_end_state(stack, example, resource, name, jsonpath, wanted):
    namespace = namespace_of(example)
    assert stack.wait_for(resource, name, jsonpath, wanted, namespace) == wanted, stack.explain(
        resource, name, namespace=namespace
    )
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


def spawn_as_the_header_says(stack: Stack, example: str) -> str:
    """POST the example header's curl body to /api/tensorboards/ with the admin's token; the name made."""
    created = stack.manage(".venv/bin/python manage.py drf_create_token admin", DEBUG="true")
    assert created.returncode == 0, created.stderr
    token = created.stdout.split()[2]
    curl = header_command(EXAMPLES / example, "curl -X POST")
    body = json.loads(re.search(r"-d '(\{.*\})'", curl).group(1))
    request = urllib.request.Request(
        f"{stack.base_url}/api/tensorboards/",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        return json.load(response)["name"]


def test_the_tensorboard_example_opens_a_tensorboard_for_its_workflow(stack):
    assert stack.wait_for("workflow", "mnist-tb", "{.status.phase}", "Succeeded") == "Succeeded"
    name = spawn_as_the_header_says(stack, "tensorboard-workflow.yaml")
    assert stack.wait_for("tensorboard", name, "{.status.phase}", "Ready") == "Ready"
    assert fetch_report(stack, name) == {"runs": 1, "failed": []}, "the step's plain files, fetched over S3"


def fetch_report(stack: Stack, tensorboard: str) -> dict:
    """What the TensorBoard pod's `fetch-logs` init container (our image, run for real) reported."""
    selector = f"argoml.io/tensorboard={tensorboard}"
    [pod] = json.loads(stack.kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
    [fetcher] = pod["status"]["initContainerStatuses"]
    return json.loads(fetcher["state"]["terminated"]["message"])


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


def seconds_between(start: str, end: str) -> float:
    """Seconds between two RFC 3339 times as the API server writes them."""
    started, ended = (datetime.fromisoformat(value.replace("Z", "+00:00")) for value in (start, end))
    return (ended - started).total_seconds()


def job_seconds(stack: Stack, resource: str, name: str) -> float:
    """How long the job ran, from its status (`startTime` to `completionTime`): the figure docs/training.md
    cites, printed with `-s`."""
    times = stack.kubectl(
        "get", resource, name, "-o", "jsonpath={.status.startTime} {.status.completionTime}"
    )
    seconds = seconds_between(*times.split())
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


@contextmanager
def port_forward(stack: Stack, tensorboard: str) -> Iterator[str]:
    """`kubectl port-forward svc/tb-<name> :80` as the headers say; yields the instance's base URL."""
    forward = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", stack.kubeconfig, "-n", NAMESPACE,
         "port-forward", f"svc/tb-{tensorboard}", ":80"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = int(forward.stdout.readline().split("127.0.0.1:")[1].split()[0])
        yield f"http://127.0.0.1:{port}/tensorboards/{NAMESPACE}/{tensorboard}"
    finally:
        forward.terminate()
        forward.wait(timeout=10)


def wait_for_runs(base: str, complete: Callable[[list[str]], bool], within: float = 60) -> list[str]:
    """TensorBoard's `/data/runs` once `complete` says so (it reloads its logdir every few seconds)."""
    deadline = time.monotonic() + within
    runs: list[str] = []
    while not complete(runs) and time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/data/runs", timeout=30) as response:
            runs = json.load(response)
        time.sleep(1)
    return runs


def scalars_of(base: str, run: str, tag: str) -> dict[int, float]:
    query = urllib.parse.urlencode({"run": run, "tag": tag})
    with urllib.request.urlopen(f"{base}/data/plugin/scalars/scalars?{query}", timeout=30) as response:
        return {step: value for _wall, step, value in json.load(response)}


def test_a_tensorboard_serves_the_scalars_the_tfjob_wrote_through_port_forward(stack):
    """The chief's event files on the claim, the real TensorBoard of examples/tensorboard-train.yaml on
    them, opened as its header says: `kubectl port-forward`, then TensorBoard's own JSON API."""
    assert stack.wait_for("tfjob", "tf-train", "{.status.conditions[-1:].type}", "Succeeded") == "Succeeded"
    chief = training_results(stack, "tf-train-chief-0")["tf-train-chief-0"]
    assert stack.wait_for("tensorboard", "tf-train", "{.status.phase}", "Ready") == "Ready"
    with port_forward(stack, "tf-train") as base:
        runs = wait_for_runs(base, lambda runs: "tf-train/train" in runs)
        assert "tf-train/train" in runs, runs
        scalars = scalars_of(base, "tf-train/train", "loss")
    assert sorted(scalars) == [1, 2, 3, 4, 5]
    assert scalars[1] == pytest.approx(chief["loss_first"], rel=1e-6)
    assert scalars[5] == pytest.approx(chief["loss_last"], rel=1e-6)


def admin_password(stack: Stack) -> str:
    """The local admin's password, as `make run` saved it for the person at the terminal."""
    lines = (stack.dev_dir / "admin-credentials").read_text().splitlines()
    return next(line.split(": ", 1)[1] for line in lines if line.startswith("password: "))


def open_tensorboard_from_its_page(stack: Stack, page: Any, name: str) -> dict[str, Any]:
    """Sign in, go to the TensorBoards page, click Open on `name`, and wait for TensorBoard's own page to
    list the run. What the browser saw: where it landed, the answers to TensorBoard's `data/…` requests,
    the console's errors and any CSP violation."""
    seen: dict[str, Any] = {"errors": [], "data": [], "failed": []}
    page.on(
        "console",
        lambda message: (
            seen["errors"].append((message.text, message.location.get("url", "")))
            if message.type == "error"
            else None
        ),
    )
    page.on("response", lambda r: seen["data"].append((r.status, r.url)) if "/data/" in r.url else None)
    page.on("response", lambda r: seen["failed"].append((r.status, r.url)) if r.status >= 400 else None)
    page.add_init_script(REPORT_VIOLATIONS)
    sign_in(page, stack.base_url, "admin", admin_password(stack))
    listed = f"{stack.base_url}/dashboard/tensorboards/?namespace={NAMESPACE}"
    row = page.locator("tr", has=page.locator("th", has_text=re.compile(f"^{re.escape(name)}$")))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the mirror row follows the cluster within a few seconds
        page.goto(listed)
        if row.count() and "Ready" in row.inner_text():
            break
        time.sleep(1)
    row.get_by_role("button", name=re.compile("^Open")).click()
    landing = re.compile(re.escape(f"{stack.tensorboard_url}/tensorboards/{NAMESPACE}/{name}/") + "(#.*)?$")
    page.wait_for_url(landing, timeout=30_000)  # TensorBoard then adds its dashboard's name (#timeseries)
    page.get_by_text(f"{name}/train").first.wait_for(timeout=90_000)  # the run, in TensorBoard's runs list
    page.get_by_text("loss").first.wait_for(timeout=60_000)  # its scalar, drawn from data/…
    page.wait_for_load_state("networkidle")
    seen["landed"] = page.url
    seen["violations"] = page.evaluate("window.__csp || []")
    seen["cookies"] = page.context.cookies()
    return seen


@pytest.mark.browser
def test_the_open_button_opens_the_tensorboard_on_its_own_origin(stack, page):
    """Issues 28 and 29: on `make run` the TensorBoards page's Open button lands on the real TensorBoard of
    examples/tensorboard-train.yaml (the web's proxy to it: the in-cluster address is out of a browser's
    reach), which lists the run the TFJob wrote and draws its loss from its `data/…` requests. It lands on
    the TensorBoard origin, another port than the dashboard's, with a pass for that instance alone: a
    TensorBoard's pages never run on the dashboard's origin (docs/security.md, "The TensorBoard proxy")."""
    assert stack.tensorboard_url.startswith("http://127.0.0.1:")
    assert stack.tensorboard_url != stack.base_url
    assert stack.wait_for("tensorboard", "tf-train", "{.status.phase}", "Ready") == "Ready"
    seen = open_tensorboard_from_its_page(stack, page, "tf-train")
    assert seen["landed"].split("#")[0] == f"{stack.tensorboard_url}/tensorboards/{NAMESPACE}/tf-train/"
    assert "ticket=" not in seen["landed"]  # exchanged for the pass, and dropped from the address
    passes = [cookie for cookie in seen["cookies"] if cookie["name"] == "argoml_tensorboard"]
    assert [(c["path"], c["httpOnly"], c["sameSite"]) for c in passes] == [
        (f"/tensorboards/{NAMESPACE}/tf-train/", True, "Lax")
    ]
    assert seen["violations"] == []
    # TensorBoard's page asks for its Roboto fonts at /font-roboto/… from the root, whatever its
    # --path_prefix (behind any prefix: an Ingress, port-forward); the browser falls back to another font.
    # The dashboard's pages name no icon, so the browser asks for /favicon.ico. Nothing else may fail.
    explained = tuple(
        f"{origin}/{path}"
        for origin in (stack.base_url, stack.tensorboard_url)
        for path in ("font-roboto/", "favicon.ico")
    )
    failed = [url for _status, url in seen["failed"] if not url.startswith(explained)]
    assert failed == [], failed
    errors = [(text, url) for text, url in seen["errors"] if not url.startswith(explained)]
    assert errors == [], errors
    statuses = {url.split("/data/", 1)[1].split("?")[0]: status for status, url in seen["data"]}
    assert statuses.get("runs") == 200, statuses
    assert all(status == 200 for status in statuses.values()), statuses
    # The TensorBoard origin serves TensorBoards only: the dashboard is not there, even to a signed-in
    # browser; and the dashboard's origin serves no TensorBoard.
    assert page.goto(f"{stack.tensorboard_url}/dashboard/").status == 404
    assert page.goto(f"{stack.base_url}/tensorboards/{NAMESPACE}/tf-train/").status == 404


def test_the_training_sweeps_best_trial_is_the_one_computed_directly(stack):
    """Real trials, their metric read from the file each wrote: the best is what the closed form says."""
    assert stack.wait_for("hpw", "ridge-grid", "{.status.phase}", "Succeeded") == "Succeeded"
    best = json.loads(stack.kubectl("get", "hpw", "ridge-grid", "-o", "jsonpath={.status.bestTrial}"))
    parameters = {name: float(value) for name, value in best["parameters"].items()}
    assert parameters == {"lr": 0.1, "l2": 0.0}
    assert float(best["metric"]) == pytest.approx(validation_loss(0.1, 0.0, 50), rel=1e-9)


def test_a_sweeps_tensorboard_fetches_every_trials_artifact_from_the_dev_repository(stack):
    """The sweep of examples/hyperparam-tensorboard.yaml: each trial's event files saved by argoexec as its
    `tensorboard` artifact in the dev repository, a TensorBoard opened for the sweep as the header says,
    its fetcher (our own image, for real) pulling every trial's .tgz over S3, and TensorBoard listing one
    run per trial with the scalars the closed form predicts."""
    started = time.monotonic()
    assert stack.wait_for("hpw", "ridge-tb", "{.status.phase}", "Succeeded") == "Succeeded", stack.explain(
        "hpw", "ridge-tb"
    )
    stored = sorted(p.relative_to(stack.dev_dir / "pods" / "artifacts").as_posix()
                    for p in (stack.dev_dir / "pods" / "artifacts").rglob("tensorboard.tgz"))  # fmt: skip
    assert len([key for key in stored if key.startswith("ridge-tb")]) == 2, stored
    name = spawn_as_the_header_says(stack, "hyperparam-tensorboard.yaml")
    assert stack.wait_for("tensorboard", name, "{.status.phase}", "Ready") == "Ready", stack.kubectl(
        "get", "tensorboard", name, "-o", "yaml"
    )
    assert fetch_report(stack, name) == {"runs": 2, "failed": []}, "both trials' .tgz, fetched over S3"
    with port_forward(stack, name) as base:
        runs = wait_for_runs(base, lambda runs: len(runs) == 2)
        assert len(runs) == 2, runs
        losses = {run: scalars_of(base, run, "validation_loss") for run in runs}
        train = {run: scalars_of(base, run, "train_loss") for run in runs}
    assert all(sorted(steps) == list(range(1, 21)) for steps in train.values()), train
    expected = sorted(validation_loss(lr, 0.0, 20) for lr in (0.02, 0.1))
    assert sorted(value for scalars in losses.values() for value in scalars.values()) == pytest.approx(
        expected, rel=1e-5
    )
    print(f"sweep ridge-tb to its TensorBoard's runs: {time.monotonic() - started:.0f} s")


def test_the_trainjob_on_kubeflows_xgboost_runtime_reports_its_real_progress_and_metrics(stack):
    """Kubeflow's xgboost-distributed runtime, unchanged; rank 0 reports as Kubeflow's SDK does, with the
    URL, CA and token the operator injected, to the webhook listener through its Service; what the
    TrainJob's status, `kubectl get` and the dashboard show are the numbers the script computed, and a pod
    that is not the TrainJob's cannot report for it."""
    started = time.monotonic()
    wanted = "Complete"
    assert stack.wait_for("trainjob", "xgb-progress", "{.status.conditions[-1:].type}", wanted) == wanted, (
        stack.explain("trainjob", "xgb-progress", pods="jobset.sigs.k8s.io/jobset-name")
    )
    first, second = training_results(stack, "xgb-progress-node-0-0", "xgb-progress-node-0-1").values()
    assert (first["rank"], second["rank"]) == (0, 1)
    assert first["model_sha256"] == second["model_sha256"]
    assert first["metrics"] == second["metrics"], "each evaluation is reduced over both ranks' rows"
    assert float(first["metrics"]["val_accuracy"]) > 0.85
    assert second["reports"] == 0, "rank 0 alone reports"
    assert first["reports"] >= 2
    assert first["progress_reported"][0] == 0
    assert first["progress_reported"][-1] == 100
    assert first["progress_reported"] == sorted(first["progress_reported"])

    def trainer_status() -> dict:
        return json.loads(
            stack.kubectl("get", "trainjob", "xgb-progress", "-o", "jsonpath={.status.trainerStatus}")
        )

    status = trainer_status()
    assert status == first["reported"], "the status holds the last report as the endpoint answered it"
    assert status["progressPercentage"] == 100
    assert status["estimatedRemainingSeconds"] == 0
    assert {metric["name"]: metric["value"] for metric in status["metrics"]} == first["metrics"]
    header, row = stack.kubectl("get", "trainjob", "xgb-progress").splitlines()
    assert dict(zip(header.split(), row.split(), strict=True))["PROGRESS"] == "100"

    node = json.loads(stack.kubectl("get", "pod", "xgb-progress-node-0-0", "-o", "json"))
    [env] = [c["env"] for c in node["spec"]["containers"] if c["name"] == "node"]
    url = next(e["value"] for e in env if e["name"] == "KUBEFLOW_TRAINER_SERVER_URL")
    assert url.startswith("https://argoml-webhooks.argoml.svc:443/apis/trainer.kubeflow.org/")
    [volume] = [v for v in node["spec"]["volumes"] if v["name"] == "kubeflow-trainer-token"]
    token_source, ca_source = volume["projected"]["sources"]
    audience = token_source["serviceAccountToken"]["audience"]
    stack.kubectl(
        "apply", "-f", "-", stdin=forger_pod(NAMESPACE, url, audience, ca_source["configMap"]["name"])
    )
    assert stack.wait_for("pod", "xgb-progress-forger", "{.status.phase}", "Succeeded") == "Succeeded", (
        stack.kubectl("logs", "xgb-progress-forger")
    )
    assert training_results(stack, "xgb-progress-forger")["xgb-progress-forger"] == {
        "none": [401, "Unauthorized"],
        "garbage": [401, "Unauthorized"],
        "service_account": [401, "Unauthorized"],
        "job_audience_other_pod": [403, "Forbidden"],
    }
    assert trainer_status() == status

    credentials = yaml.safe_load((stack.dev_dir / "admin-credentials").read_text())
    session = signed_in(stack.base_url, credentials["username"], credentials["password"])
    listing = session.open(f"{stack.base_url}/dashboard/trainjobs/", timeout=30).read().decode()
    pk = re.search(r'href="/dashboard/trainjobs/(\d+)/">xgb-progress<', listing).group(1)
    page = session.open(f"{stack.base_url}/dashboard/trainjobs/{pk}/", timeout=30).read().decode()
    assert re.search(r'id="trainjob-progress"><progress max="100" value="100"', page)
    for name, value in first["metrics"].items():
        assert f'<span class="mono">{name}={value}</span>' in page
    plots = json.load(session.open(f"{stack.base_url}/dashboard/trainjobs/{pk}/plots.json", timeout=30))
    assert plots["reports"] == first["reports"], "every accepted report, and none of the forger's"
    assert plots["progress"]["data"][0]["y"] == [float(p) for p in first["progress_reported"]]
    assert {m["name"]: m["figure"]["data"][0]["y"][-1] for m in plots["metrics"]} == {
        name: float(value) for name, value in first["metrics"].items()
    }
    # A TrainJob's status has no start and completion times (Trainer's has none): from its creation to its
    # Complete condition, and rank 0's process from start to exit.
    complete = '{.status.conditions[?(@.type=="Complete")].lastTransitionTime}'
    created, completed = stack.kubectl(
        "get", "trainjob", "xgb-progress", "-o", f"jsonpath={{.metadata.creationTimestamp}} {complete}"
    ).split()
    ran = node["status"]["containerStatuses"][0]["state"]["terminated"]
    print(
        f"trainjob/xgb-progress: {seconds_between(created, completed):.0f} s from creation to Complete, "
        f"rank 0 ran {seconds_between(ran['startedAt'], ran['finishedAt']):.0f} s and made "
        f"{first['reports']} reports; this test's wall time {time.monotonic() - started:.0f} s"
    )


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


def links(page: str) -> set[str]:
    """The site's own paths a page links to or loads, without their #fragment."""
    found = {html.unescape(link).split("#", 1)[0] for link in LINK.findall(page)}
    return {link for link in found if WALKED.match(link)}


def test_every_dashboard_page_answers_on_the_stack_make_run_starts(stack):
    """Issue 29: the stack people meet is the one tests run. Once the examples ran, a signed-in person
    follows every link of the dashboard (and the admin's lists) on the stack's SQLite: no page is a 5xx."""
    for example, resource, name, jsonpath, wanted in APPLIED:
        namespace = namespace_of(example)
        assert stack.wait_for(resource, name, jsonpath, wanted, namespace) == wanted, stack.explain(
            resource, name, namespace=namespace
        )
    credentials = yaml.safe_load((stack.dev_dir / "admin-credentials").read_text())
    opener = signed_in(stack.base_url, credentials["username"], credentials["password"])
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


# --- the README's first hour, walked in its order (issue 29) ----------------------------------------------


@pytest.mark.browser
def test_a_newcomer_walks_the_first_hour(stack, page):
    """README "The first hour" and "Access" on the stack `make run` starts, with the real kubectl and a real
    browser: sign in; the TFJob on the Jobs page with its replicas; a Kubeflow manifest unchanged in its own
    namespace; a sweep's best trial and its TensorBoard opened on its own origin; the pipeline; the API with
    a token and a YAML body. Every response the browser saw is below 500 (the stack's own logs are checked
    once it stopped: the `stack` fixture)."""
    started = time.monotonic()
    responses = first_hour.record_responses(page)
    with first_hour.step("sign in with the admin's saved password"):
        first_hour.sign_in_as_the_admin(stack, page)
    with first_hour.step("the TFJob on the Jobs page"):
        first_hour.the_tfjob_on_the_jobs_page(stack, page)
    with first_hour.step("a Kubeflow manifest, unchanged, in namespace kubeflow"):
        first_hour.a_kubeflow_manifest_unchanged(stack, page)
    with first_hour.step("a sweep's best trial, and all its trials opened in TensorBoard"):
        first_hour.the_sweeps_best_trial_and_its_tensorboard(stack, page)
    with first_hour.step("the pipeline, submitted as its header says"):
        command = header_command(EXAMPLES / "pipeline" / "pipeline.yaml", "DEBUG=true .venv/bin/python")
        first_hour.the_pipeline_as_its_header_says(stack, command)
    with first_hour.step("the API with a token and a YAML body"):
        first_hour.the_api_with_a_token_and_a_yaml_body(stack)
    server_errors = [response for response in responses if response[0] >= 500]
    assert server_errors == [], f"the browser saw 5xx answers: {server_errors}"
    assert len(responses) > 20, responses  # the walk did go through the browser
    print(
        f"the first hour, walked: {time.monotonic() - started:.0f} s; the browser saw {len(responses)} "
        "responses"
    )
