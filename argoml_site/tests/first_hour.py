"""The README's first hour, walked by a machine on the examples' dev stack (issue 29): the steps of
test_examples.test_a_newcomer_walks_the_first_hour, each with the real kubectl, the real browser or the
commands and curl lines the README gives, each failing with the step's name and what a person would look at.

`stack` is test_examples.Stack (not imported: that module imports this one).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from dashboard.tests.browser import sign_in

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: How long a dashboard row may lag the cluster (the mirror follows within seconds) or a TensorBoard take
#: to be Ready (its fetcher, then TensorBoard itself starting on 2 busy cores).
ROW_SECONDS = 120.0


@contextmanager
def step(name: str) -> Iterator[None]:
    """A step of the walk: whatever fails in it says which step it was."""
    try:
        yield
    except Exception as error:
        raise AssertionError(f"first hour, step “{name}”: {error}") from error


def record_responses(page: Any) -> list[tuple[int, str, str]]:
    """Every response the browser sees from now on: (status, method, URL)."""
    seen: list[tuple[int, str, str]] = []
    page.on(
        "response", lambda response: seen.append((response.status, response.request.method, response.url))
    )
    return seen


def credentials(stack: Any) -> dict[str, str]:
    """The admin's name and password, from the file `make run` saved them in (README, "What `make run`
    starts")."""
    return yaml.safe_load((stack.dev_dir / "admin-credentials").read_text())


def sign_in_as_the_admin(stack: Any, page: Any) -> None:
    found = credentials(stack)
    sign_in(page, stack.base_url, found["username"], found["password"])


def row_of(page: Any, name: str) -> Any:
    """A dashboard table's row whose heading cell is `name`."""
    return page.locator("tr", has=page.locator("th", has_text=re.compile(f"^{re.escape(name)}$")))


def wait_for_row(page: Any, url: str, name: str, wanted: str) -> str:
    """Reload `url` until `name`'s row shows `wanted`; the row's text."""
    row, text = row_of(page, name), ""
    deadline = time.monotonic() + ROW_SECONDS
    while time.monotonic() < deadline:
        page.goto(url)
        text = row.inner_text() if row.count() else ""
        if wanted in text:
            break
        time.sleep(2)
    return text


def the_tfjob_on_the_jobs_page(stack: Any, page: Any) -> None:
    """Step 3: tf-train (applied as step 2 says) finished, and the Jobs page lists it with its replicas."""
    wanted = "Succeeded"
    assert stack.wait_for("tfjob", "tf-train", "{.status.conditions[-1:].type}", wanted) == wanted, (
        stack.explain("tfjob", "tf-train")
    )
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Jobs", exact=True).click()
    listed = f"{stack.base_url}/dashboard/jobs/?namespace=team-a&name=tf-train"
    # The job succeeds when its chief does (Kubeflow's success policy); its workers exit a moment later.
    text = wait_for_row(page, listed, "tf-train", "Worker 2/2 succeeded")
    assert "Succeeded" in text, f"tf-train's row: {text!r}"
    assert "Chief 1/1 succeeded" in text, f"tf-train's row: {text!r}"
    assert "Worker 2/2 succeeded" in text, f"tf-train's row: {text!r}"


def a_kubeflow_manifest_unchanged(stack: Any, page: Any) -> None:
    """Kubeflow's TFJob as Kubeflow writes it (namespace `kubeflow`), applied as its header says, with no
    `-n`: it ends as Kubeflow's do, `kubectl get` lists it, and so does the dashboard."""
    example = "examples/kubeflow/tfjob.yaml"
    assert f"kubectl apply -f {example}" in (EXAMPLES / "kubeflow" / "tfjob.yaml").read_text()
    applied = stack.run_kubectl("apply", "-f", example)
    assert re.fullmatch(r"tfjob\.kubeflow\.org/tfjob-simple (created|unchanged|configured)\n", applied), (
        applied
    )
    wanted = "Created Running Succeeded"
    found = stack.wait_for(
        "tfjobs.kubeflow.org", "tfjob-simple", "{.status.conditions[*].type}", wanted, "kubeflow"
    )
    assert found == wanted, stack.explain("tfjobs.kubeflow.org", "tfjob-simple", namespace="kubeflow")
    listed = stack.run_kubectl("get", "tfjobs.kubeflow.org", "-n", "kubeflow")
    assert re.search(r"^tfjob-simple\s+Succeeded\s", listed, re.MULTILINE), listed
    text = wait_for_row(
        page, f"{stack.base_url}/dashboard/jobs/?namespace=kubeflow", "tfjob-simple", "Succeeded"
    )
    assert "Worker 2/2" in text, f"tfjob-simple's row: {text!r}"


def the_sweeps_best_trial_and_its_tensorboard(stack: Any, page: Any) -> None:
    """examples/hyperparam-tensorboard.yaml's sweep: its page shows the best trial the cluster reports;
    "Open all trials in TensorBoard", then Open on the TensorBoards page, lands on the TensorBoard origin,
    whose TensorBoard lists a run per trial."""
    assert stack.wait_for("hpw", "ridge-tb", "{.status.phase}", "Succeeded") == "Succeeded", stack.explain(
        "hpw", "ridge-tb"
    )
    best = json.loads(stack.kubectl("get", "hpw", "ridge-tb", "-o", "jsonpath={.status.bestTrial}"))
    finished, planned = stack.kubectl("get", "hpw", "ridge-tb", "-o", "jsonpath={.status.progress}").split(
        "/"
    )
    assert finished == planned, f"every trial of ridge-tb finished: {finished}/{planned}"
    trials = int(planned)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sweeps", exact=True).click()
    page.goto(f"{stack.base_url}/dashboard/sweeps/?namespace=team-a")
    page.get_by_role("link", name="ridge-tb", exact=True).click()
    status = page.locator("#sweep-status").inner_text()
    assert f"trial #{best['index']}" in status, f"best trial {best} not on the sweep's page:\n{status}"
    for name, value in best["parameters"].items():
        assert f"{name}={value}" in status, f"best parameter {name}={value} not on the page:\n{status}"
    page.get_by_role("button", name="Open all trials in TensorBoard").click()
    message = page.get_by_text(
        re.compile(r"(Started|Refreshed) TensorBoard \S+ with every trial of ridge-tb")
    )
    name = re.search(r"TensorBoard (\S+) with", message.inner_text()).group(1)
    # The landing page lists the new TensorBoard once mirrored; it never refuses the filter it was sent with.
    assert "Select a valid choice" not in page.locator("main").inner_text(), page.locator("main").inner_text()
    row = wait_for_row(page, f"{stack.base_url}/dashboard/tensorboards/?namespace=team-a", name, "Ready")
    assert "Ready" in row, f"{row!r}\n" + stack.kubectl("get", "tensorboard", name, "-o", "yaml")
    row_of(page, name).get_by_role("button", name=re.compile("^Open")).click()
    instance = f"{stack.tensorboard_url}/tensorboards/team-a/{name}/"
    page.wait_for_url(re.compile(re.escape(instance) + "(#.*)?$"), timeout=30_000)
    runs: list[str] = []
    deadline = time.monotonic() + ROW_SECONDS
    while len(runs) < trials and time.monotonic() < deadline:  # TensorBoard reloads its logdir
        runs = page.request.get(f"{instance}data/runs").json()
        time.sleep(1)
    assert len(runs) == trials, f"one run per trial of ridge-tb: {runs}"
    for run in runs:
        page.get_by_text(run).first.wait_for(timeout=60_000)  # in TensorBoard's own runs list


def the_pipeline_as_its_header_says(stack: Any, command: str) -> str:
    """examples/pipeline transpiled and submitted by the command of its header; the workflow succeeds."""
    submitted = stack.manage(command)
    assert submitted.returncode == 0, submitted.stderr
    name = re.search(r"submitted workflow (\S+) in namespace team-a", submitted.stderr).group(1)
    phase = stack.wait_for("workflow", name, "{.status.phase}", "Succeeded")
    assert phase == "Succeeded", stack.kubectl("get", "workflow", name, "-o", "yaml")
    watched = stack.run_kubectl("get", "workflows", "-n", "team-a")  # its header's "Watch it"
    assert re.search(rf"^{re.escape(name)}\s+Succeeded\s", watched, re.MULTILINE), watched
    return name


def api_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def api_get(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def the_api_with_a_token_and_a_yaml_body(stack: Any) -> None:
    """README "Access": a token traded for the admin's password (`curl -d username=… -d password=…`), then
    examples/tfjob.yaml posted as YAML (`Content-Type: application/yaml`, under a name of its own: the
    module applied it already), read back from the API and seen by kubectl."""
    found = credentials(stack)
    form = urllib.parse.urlencode({"username": found["username"], "password": found["password"]}).encode()
    status, answer = api_post(f"{stack.base_url}/api/token/", form, {})
    assert status == 200, f"POST /api/token/: {status} {answer}"
    token = answer["token"]
    reach = api_get(f"{stack.base_url}/api/namespaces/", token)
    assert reach["everywhere"] is True, f"the admin is a superuser: {reach}"
    manifest = (EXAMPLES / "tfjob.yaml").read_text().replace("name: mnist-ps", "name: walk-api", 1)
    assert "name: walk-api" in manifest
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/yaml"}
    status, answer = api_post(f"{stack.base_url}/api/jobs/", manifest.encode(), headers)
    assert status == 202, f"POST /api/jobs/ (YAML): {status} {answer}"
    query = f"{stack.base_url}/api/jobs/?namespace=team-a&name=walk-api"
    rows: list[dict] = []
    deadline = time.monotonic() + ROW_SECONDS
    while not rows and time.monotonic() < deadline:  # the row appears once the controller saw the job
        rows = listed(api_get(query, token))
        time.sleep(1)
    assert [row["kind"] for row in rows] == ["TFJob"], rows
    job = api_get(f"{stack.base_url}/api/jobs/{rows[0]['id']}/", token)
    assert (job["name"], job["namespace"]) == ("walk-api", "team-a"), job
    assert stack.kubectl("get", "tfjob", "walk-api", "-o", "jsonpath={.metadata.name}") == "walk-api"


def listed(answer: Any) -> list[dict]:
    """A list endpoint's rows, paginated (`results`) or not."""
    return answer["results"] if isinstance(answer, dict) else answer
