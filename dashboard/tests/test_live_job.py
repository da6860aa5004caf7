"""A job's whole life in the browser, with real processes: the dashboard's Submit page creates a TFJob in
kubesim → a leading `celery worker --controllers` mirrors it into PostgreSQL and reconciles it → the
simulated kubelet runs its pods → the job page, left open, follows it to Succeeded by htmx polling (no
reload), and a replica's logs are read from kubesim's pod log endpoint.

Needs PostgreSQL (the worker shares the test database) and Redis database DASHBOARD_TEST_REDIS_DB (12),
which is flushed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml
from django.db import connection

from access.models import NamespaceGrant, Role
from dashboard.tests.browser import LAPTOP, sign_in, snap
from dashboard.tests.conftest import PASSWORD
from jobs.tests.cluster import install_crds, job_manifest
from kube.client import reset_client
from kube.tests.controller_harness import controller_worker_env
from kube.tests.queue_harness import REDIS_HOST, Worker
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

REPO = Path(__file__).resolve().parents[2]
REDIS_DB = int(os.environ.get("DASHBOARD_TEST_REDIS_DB", "12"))
NAMESPACE = "team-a"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="the worker process shares the test database: PostgreSQL only",
    ),
]


def database_url() -> str:
    settings = connection.settings_dict
    auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings.get("PASSWORD") else "")
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    return f"postgres://{auth}@{host}:{port}/{settings['NAME']}"


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """kubesim on the real clock with its kubelet (and Argo, whose CRD the sweep controller watches)."""
    with running_simulator(argo=True) as simulator:
        simulator.kubelet.settings.start_delay = 1.0
        install_crds(simulator)
        simulator.store.ensure_namespace(NAMESPACE)
        yield simulator


@pytest.fixture
def worker(sim, tmp_path, django_db_blocker) -> Iterator[Worker]:
    store = redis.Redis.from_url(f"redis://{REDIS_HOST}/{REDIS_DB}")
    store.flushdb()
    with django_db_blocker.unblock():
        url = database_url()
    logfile = tmp_path / "worker.log"
    env = {
        **os.environ,
        **controller_worker_env("argoml-controllers-test"),
        "DATABASE_URL": url,
        "REDIS_URL": f"redis://{REDIS_HOST}/{REDIS_DB}",
        "KUBECONFIG": str(sim.kubeconfig_path),
    }
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker",
               "--controllers", "-Q", "reconcile", "-n", "dashboard-e2e@%h", "-c", "1", "--without-gossip",
               "--without-mingle", "--without-heartbeat", "-l", "INFO",
               "--logfile", str(logfile)]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True)
    started = Worker("dashboard-e2e", process, logfile)
    try:
        started.wait_ready(60)
        yield started
    finally:
        started.stop()
        store.flushdb()


@pytest.fixture
def dashboard_cluster(sim, settings):
    """The live server (this process) talks to the same kubesim."""
    settings.KUBECONFIG = str(sim.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    reset_client()
    yield
    reset_client()


@pytest.fixture
def editor(django_user_model):
    user = django_user_model.objects.create_user("erin", password=PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role=Role.EDITOR)
    return user


def training_job() -> str:
    """A TFJob of two workers that print their epochs over ~6 seconds, then succeed."""
    output = ["loading mnist", "epoch 1 loss=0.41", "epoch 2 loss=0.22"]
    run = {"duration": 6, "exitCode": 0, "output": output}
    scripts = {"Worker": run}
    manifest = job_manifest("TFJob", {"Worker": 2}, name="mnist", namespace=NAMESPACE, scripts=scripts)
    return yaml.safe_dump(manifest, sort_keys=False)


def test_a_submitted_job_is_followed_live_to_succeeded_and_its_logs_are_read(
    live_server, page, editor, sim, worker, dashboard_cluster
):
    page.set_viewport_size(LAPTOP)
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/submit/")
    page.fill("#id_manifest", training_job())
    page.click("button[value=preview]")
    page.wait_for_selector("#preview")
    page.click("button[value=create]")

    # The waiting page opens the job as soon as the mirror has it.
    page.wait_for_url("**/dashboard/jobs/*/", timeout=30_000)
    page.wait_for_selector("#job-phase")
    page.evaluate("window.__stillTheSamePage = true")
    page.wait_for_selector("#job-phase:has-text('Running')", timeout=30_000)
    page.wait_for_selector(".cell .phase:has-text('Running')", timeout=30_000)
    snap(page, "job-running")

    try:
        page.wait_for_selector("#job-phase:has-text('Succeeded')", timeout=60_000)
    except Exception:
        print(worker.logfile.read_text(errors="replace")[-4000:])
        raise
    assert page.evaluate("window.__stillTheSamePage") is True, "the page reloaded instead of updating"
    assert page.locator("#job-status[hx-trigger]").count() == 0, "a finished job's page still polls"
    page.wait_for_selector("#history-title + ol li:has-text('Succeeded')")
    snap(page, "job-succeeded")

    page.locator(".cell").first.click()
    page.wait_for_selector("pre.logs")
    assert "epoch 2 loss=0.22" in page.inner_text("pre.logs")
    snap(page, "job-logs")
