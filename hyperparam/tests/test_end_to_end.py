"""Sweeps end to end with real processes: kubesim with its Argo simulation (in this process, over HTTP) →
the informers of a leading `celery worker --controllers` → the reconcile queue on Redis → the worker's
reconcile creates Workflows → Argo runs them with scripted metrics → trials mirrored into PostgreSQL.

Needs PostgreSQL (the worker shares the test database) and Redis database HYPERPARAM_E2E_REDIS_DB (11),
which is flushed. The simulator runs on the real clock; each trial's pod runs for 50 ms.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from django.db import connection

from argoml_site.crds import CUSTOM_RESOURCES
from hyperparam.models import Sweep, Trial
from hyperparam.reconcile import HPW
from hyperparam.tests.conftest import make_hpw, make_spec
from kube.controller.queue import QueueStore
from kube.crds.install import install
from kube.errors import NotFound
from kube.resources import WORKFLOW
from kube.tests.controller_harness import client_for, controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker, wait_for
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator

REPO_ROOT = Path(__file__).resolve().parents[2]
REDIS_DB = int(os.environ.get("HYPERPARAM_E2E_REDIS_DB", "11"))
NAMESPACE = "team-a"
GRID_LOSS = {("0.1", "16"): 0.9, ("0.2", "32"): 0.15, ("0.3", "128"): 0.4}

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="the worker process shares the test database: PostgreSQL only",
    ),
]


def loss(node: Any) -> dict[str, str]:
    """The metric each trial reports: a table for the grid, a quadratic for sampled sweeps."""
    lr, size = node.inputs["lr"], node.inputs["batch-size"]
    if node.workflow.startswith("grid"):
        return {"loss": str(GRID_LOSS.get((lr, size), 0.5))}
    return {"loss": repr((float(lr) - 0.3) ** 2 + (float(size) + 0.2) ** 2)}


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator(argo=True) as simulator:
        simulator.argo.script("train", run={"duration": 0.05}, parameters=loss)
        simulator.store.ensure_namespace(NAMESPACE)
        yield simulator


@pytest.fixture(scope="module")
def client(sim):
    kube = client_for(sim.kubeconfig_path)
    install(kube, CUSTOM_RESOURCES)  # every kind: each app's informer lists its own
    return kube


def database_url() -> str:
    """The test database (pytest-django's), for the worker process."""
    settings = connection.settings_dict
    auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings.get("PASSWORD") else "")
    return f"postgres://{auth}@{settings['HOST']}:{settings['PORT'] or 5432}/{settings['NAME']}"


@pytest.fixture(scope="module")
def worker(sim, client, tmp_path_factory, django_db_setup, django_db_blocker) -> Iterator[Worker]:
    connection_ = redis.Redis.from_url(f"redis://{REDIS_HOST}/{REDIS_DB}")
    connection_.flushdb()
    with django_db_blocker.unblock():
        url = database_url()
    logdir = tmp_path_factory.mktemp("hyperparam-worker")
    logfile = logdir / "worker.log"
    env = {
        **os.environ,
        **controller_worker_env("argoml-controllers-test"),
        "DATABASE_URL": url,
        "REDIS_URL": f"redis://{REDIS_HOST}/{REDIS_DB}",
        "KUBECONFIG": str(sim.kubeconfig_path),
    }
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker",
               "--controllers", "-Q", "reconcile", "-n", "hyperparam-e2e@%h", "-c", "1", "--without-gossip",
               "--without-mingle", "--without-heartbeat", "-l", "INFO",
               "--logfile", str(logfile)]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, start_new_session=True)
    started = Worker("hyperparam-e2e", process, logfile)
    try:
        started.wait_ready(60)
        yield started
    finally:
        started.stop()
        connection_.flushdb()


@pytest.fixture(autouse=True)
def _worker_done_writing(sim, worker) -> Iterator[None]:
    """After each test, wait until the worker has nothing left to write: no reconcile owed and the cluster
    unchanged for a moment (so the mirror caught up). pytest-django empties the tables after a test; a
    mirror write still in flight then deadlocked against that TRUNCATE (make test, 2026-12-08)."""
    yield
    queue = QueueStore(redis.Redis.from_url(f"redis://{REDIS_HOST}/{REDIS_DB}"))
    last = [sim.store.resource_version, 0]

    def quiet() -> bool:
        sim.store.wait_idle()
        if sim.store.resource_version != last[0] or queue.status(HPW.kind).owed_now:
            last[:] = [sim.store.resource_version, 0]
            return False
        last[1] += 1
        return last[1] >= 10  # ~0.2 s without a change, as jobs' operator tests wait (leases renew often)

    wait_for(quiet, 60, "the worker to finish its writes")


def kubectl(sim: Simulator, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    done = subprocess.run(
        [str(KUBECTL), *args], input=stdin, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def status_of(client, name: str) -> dict[str, Any]:
    try:
        return client.get(HPW, name, NAMESPACE).get("status") or {}
    except NotFound:
        return {}


def run_to_the_end(client, worker: Worker, name: str, within: float = 90) -> dict[str, Any]:
    def ended() -> bool:
        return status_of(client, name).get("phase") in ("Succeeded", "Failed")

    try:
        wait_for(ended, within, f"sweep {name} to end")
    except AssertionError:
        log = worker.logfile.read_text(errors="replace")[-4000:]
        raise AssertionError(f"{name}: {status_of(client, name)}\n--- worker log ---\n{log}") from None
    return status_of(client, name)


def sampled_spec(algorithm: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    hyperparams = [
        {"name": "lr", "uniform": {"min": -1, "max": 1}},
        {"name": "batch-size", "uniform": {"min": -1, "max": 1}},
    ]
    return make_spec(hyperparams=hyperparams, algorithm=algorithm, **overrides)


def sweep_row(name: str) -> Sweep:
    wait_for(
        lambda: Sweep.objects.filter(name=name, phase__in=("Succeeded", "Failed")).exists(), 10, "the row"
    )
    return Sweep.objects.get(name=name, deleted_at__isnull=True)


def test_a_3x4_grid_runs_to_completion_with_every_trial_mirrored_and_kubectl_shows_it(sim, client, worker):
    manifest = make_hpw(name="grid-mnist", uid="")
    kubectl(sim, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))

    status = run_to_the_end(client, worker, "grid-mnist")

    assert status["phase"] == "Succeeded", status
    assert status["progress"] == "12/12"
    assert status["bestTrial"]["parameters"] == {"lr": "0.2", "batch-size": "32"}
    assert status["bestTrial"]["metric"] == 0.15
    sweep = sweep_row("grid-mnist")
    trials = list(Trial.objects.filter(sweep=sweep).order_by("index"))
    assert len(trials) == 12
    expected = [(lr, size) for lr in ("0.1", "0.2", "0.3") for size in ("16", "32", "64", "128")]
    assert [(t.params["lr"], t.params["batch-size"]) for t in trials] == expected
    assert all(t.phase == "Succeeded" and t.started_at and t.finished_at and t.node_id for t in trials)
    assert [t.metric for t in trials] == [GRID_LOSS.get(pair, 0.5) for pair in expected]
    assert (sweep.best_trial_index, sweep.best_metric) == (5, 0.15)

    table = kubectl(sim, "get", "hpw", "-n", NAMESPACE)
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "PHASE", "TRIALS", "BEST", "AGE"]
    assert row.split()[:4] == ["grid-mnist", "Succeeded", "12/12", "0.15"]

    # Deleting the sweep deletes its Workflows; the rows and their history stay.
    kubectl(sim, "delete", "hpw", "grid-mnist", "-n", NAMESPACE)
    selector = "argoml.io/hyperparam-workflow=grid-mnist"
    wait_for(
        lambda: not client.list(WORKFLOW, NAMESPACE, label_selector=selector)["items"], 10, "no workflows"
    )
    wait_for(
        lambda: Sweep.objects.filter(name="grid-mnist", deleted_at__isnull=False).exists(), 10, "the mark"
    )
    assert Trial.objects.filter(sweep__name="grid-mnist").count() == 12


def test_a_seeded_random_sweep_is_reproducible(sim, client, worker):
    for name in ("random-a", "random-b"):
        spec = sampled_spec({"name": "random", "samples": 8, "seed": 42}, parallelism=4)
        client.create(HPW, make_hpw(spec, name=name, uid=""))
    for name in ("random-a", "random-b"):
        assert run_to_the_end(client, worker, name)["phase"] == "Succeeded"

    def trials(name: str) -> list[tuple[dict[str, str], float | None]]:
        rows = Trial.objects.filter(sweep=sweep_row(name)).order_by("index")
        return [(row.params, row.metric) for row in rows]

    assert len(trials("random-a")) == 8
    assert trials("random-a") == trials("random-b")


def test_a_tpe_sweep_improves_on_a_quadratic_over_three_rounds(sim, client, worker):
    spec = sampled_spec({"name": "tpe", "seed": 3}, maxTrials=30, parallelism=10)
    client.create(HPW, make_hpw(spec, name="tpe-quadratic", uid=""))

    status = run_to_the_end(client, worker, "tpe-quadratic", within=120)

    assert status["phase"] == "Succeeded", status
    assert status["progress"] == "30/30"
    assert len(status["workflows"]) == 3
    sweep = sweep_row("tpe-quadratic")
    means = []
    for round_number in range(3):
        rows = Trial.objects.filter(
            sweep=sweep, index__gte=10 * round_number, index__lt=10 * round_number + 10
        )
        values = [row.metric for row in rows]
        assert len(values) == 10
        assert None not in values
        means.append(sum(values) / 10)
    assert means[2] < means[0], f"round means {means}: the third round should beat the random first"
    assert sweep.best_metric == min(Trial.objects.filter(sweep=sweep).values_list("metric", flat=True))


def plain_grid(**overrides: Any) -> dict[str, Any]:
    """The 3x4 grid as "run every combination": `algorithm: grid`, no objective."""
    spec = make_spec(algorithm="grid", **overrides)
    del spec["objective"]
    return spec


def test_a_plain_grid_without_an_objective_succeeds_with_no_best(sim, client, worker):
    kubectl(sim, "apply", "-f", "-", stdin=yaml.safe_dump(make_hpw(plain_grid(), name="plain-grid", uid="")))

    status = run_to_the_end(client, worker, "plain-grid")

    assert (status["phase"], status["progress"], status.get("bestTrial")) == ("Succeeded", "12/12", None)
    assert status["message"] == "all 12 trials finished"
    sweep = sweep_row("plain-grid")
    assert (sweep.algorithm, sweep.metric_name, sweep.best_metric) == ("grid", "", None)
    assert set(Trial.objects.filter(sweep=sweep).values_list("phase", flat=True)) == {"Succeeded"}
    row = next(
        line for line in kubectl(sim, "get", "hpw", "-n", NAMESPACE).splitlines() if "plain-grid" in line
    )
    assert row.split()[:3] == ["plain-grid", "Succeeded", "12/12"]
    assert len(row.split()) == 4, "BEST is empty: NAME, PHASE, TRIALS and AGE only"


def test_a_plain_grid_whose_trials_fail_is_failed_and_names_them(sim, client, worker):
    sim.argo.script(
        "train",
        workflow="plain-fail",
        run=lambda node: {"duration": 0.05, "exitCode": 3 if node.inputs["lr"] == "0.2" else 0},
    )
    client.create(HPW, make_hpw(plain_grid(), name="plain-fail", uid=""))

    status = run_to_the_end(client, worker, "plain-fail")

    assert status["phase"] == "Failed"
    assert status["conditions"][-1]["reason"] == "TrialsFailed"
    assert status["message"].startswith("4 of 12 trials failed; trial 4 (Failed): ")
    assert [error["index"] for error in status["trialErrors"]] == [4, 5, 6, 7]
    wide = kubectl(sim, "get", "hpw", "plain-fail", "-n", NAMESPACE, "-o", "wide")
    assert "4 of 12 trials failed" in wide


def test_a_grid_whose_trials_report_no_metric_fails_instead_of_succeeding(sim, client, worker):
    sim.argo.script("train", workflow="lost-metric", parameters={})
    client.create(HPW, make_hpw(make_spec(algorithm="grid"), name="lost-metric", uid=""))

    status = run_to_the_end(client, worker, "lost-metric")

    assert (status["phase"], status.get("bestTrial")) == ("Failed", None)
    assert status["conditions"][-1]["reason"] == "NoTrialReportedTheMetric"
    assert status["message"].startswith("no trial reported the objective's metric 'loss' (12 of 12 failed)")
    assert "no value for output parameter 'loss'" in status["trialErrors"][0]["message"]
    trial = Trial.objects.get(sweep=sweep_row("lost-metric"), index=0)
    assert trial.phase == "Error"
    assert "loss" in trial.message


def documented_sweeps() -> list[dict[str, Any]]:
    """Every HyperparamWorkflow in docs/hyperparam.md, as a reader would copy it."""
    text = (REPO_ROOT / "docs" / "hyperparam.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```yaml\n")[1:]]
    return [doc for doc in map(yaml.safe_load, blocks) if doc.get("kind") == "HyperparamWorkflow"]


def test_every_sweep_in_the_documentation_runs_as_written(sim, client, worker):
    sweeps = documented_sweeps()
    assert [sweep["metadata"]["name"] for sweep in sweeps] == [
        "mnist-sweep",
        "shard-grid",
        "lr-random",
        "lr-tpe",
    ]
    for manifest in sweeps:
        kubectl(sim, "apply", "-f", "-", stdin=yaml.safe_dump(manifest))

    ended = {manifest["metadata"]["name"]: run_to_the_end(client, worker, manifest["metadata"]["name"], 120)
             for manifest in sweeps}  # fmt: skip

    assert {name: status["phase"] for name, status in ended.items()} == dict.fromkeys(ended, "Succeeded")
    mnist = ended["mnist-sweep"]
    assert (mnist["progress"], mnist["bestTrial"]["index"], mnist["bestTrial"]["metric"]) == ("12/12", 0, 0.1)
    assert mnist["bestTrial"]["parameters"] == {"lr": "0.1", "batch-size": "16"}
    assert (ended["shard-grid"]["progress"], ended["shard-grid"].get("bestTrial")) == ("6/6", None)
    assert ended["lr-random"]["progress"] == "6/6"
    assert ended["lr-random"]["bestTrial"]["metric"] < 0.1
    assert ended["lr-tpe"]["bestTrial"]["metric"] < 1
