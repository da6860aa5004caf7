"""The dashboard in a real Chromium (Playwright) against the live test server: sign-in, filtering, the
job and sweep pages, the plots, submitting YAML. Each test keeps screenshots under .artifacts/dashboard/."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from dashboard.tests.browser import LAPTOP, PHONE, sign_in, snap, wait_for_plots
from dashboard.tests.conftest import PASSWORD
from hyperparam.models import Sweep, Trial
from jobs.models import TrainingJob, TrainingJobHistory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def user(django_user_model):
    erin = django_user_model.objects.create_user("erin", password=PASSWORD)
    NamespaceGrant.objects.create(user=erin, namespace="team-a", role=Role.EDITOR)
    NamespaceGrant.objects.create(user=erin, namespace="team-c", role=Role.VIEWER)
    return erin


@pytest.fixture
def jobs():
    rows = []
    for i in range(24):
        rows.append(
            factories.job(
                f"{('mnist', 'resnet', 'bert')[i % 3]}-{i:02d}",
                ("team-a", "team-c")[i % 2],
                kind=("TFJob", "PyTorchJob", "MXJob")[i % 3],
                phase=("Running", "Succeeded", "Failed", "Succeeded")[i % 4],
                created_at=factories.T0 + timedelta(minutes=i),
                state_reason="BackoffLimitExceeded" if i % 4 == 2 else "",
                state_message="worker-0 exited with code 1" if i % 4 == 2 else "",
                save=False,
            )
        )
    TrainingJob.objects.bulk_create(rows)
    factories.job("hidden-team-b", "team-b")


@pytest.fixture
def sweep():
    row = factories.sweep(
        "lr-sweep",
        algorithm="tpe",
        phase="Succeeded",
        trial_counts={"Succeeded": 380, "Failed": 20},
        trials_total=400,
        trials_finished=400,
        trials_planned=400,
    )
    trials = factories.trial_rows(row, 400)
    for trial in trials[380:]:
        trial.phase, trial.metric, trial.message = "Failed", None, "Error (exit code 1)"
    Trial.objects.bulk_create(trials)
    best = min((t for t in trials if t.metric is not None), key=lambda t: t.metric)
    Sweep.objects.filter(pk=row.pk).update(
        best_metric=best.metric, best_trial_index=best.index, best_parameters=best.params
    )
    return row


def condition(type_: str, status: str, reason: str, at: str, message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": at, "message": message}


def test_a_user_signs_in_and_sees_the_overview_of_their_namespaces(live_server, page, user, jobs, sweep):
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/dashboard/jobs/")
    assert "/dashboard/login/" in page.url
    page.fill("#id_username", "erin")
    page.fill("#id_password", "wrong password")
    page.click("button[type=submit]")
    assert page.is_visible("text=did not match")
    snap(page, "sign-in-error")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Training jobs')")  # back where the user was going
    page.click("nav[aria-label=Main] >> text=Overview")
    page.wait_for_selector("h2:has-text('Recent failures')")
    assert page.is_visible("text=BackoffLimitExceeded")
    assert not page.is_visible("text=hidden-team-b")
    snap(page, "overview")


def test_filters_narrow_the_job_list_and_stay_in_the_url(live_server, page, user, jobs):
    page.set_viewport_size(LAPTOP)
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/jobs/")
    assert page.locator("#job-table tbody tr").count() == 24
    page.select_option("#id_namespace", "team-c")
    page.select_option("#id_phase", "Succeeded")
    page.fill("#id_name", "res")
    page.click("form[role=search] button[type=submit]")
    page.wait_for_url("**/dashboard/jobs/?*")
    for kept in ("namespace=team-c", "phase=Succeeded", "name=res"):
        assert kept in page.url
    names = page.locator("#job-table tbody th").all_inner_texts()
    assert names == ["resnet-19", "resnet-13", "resnet-07", "resnet-01"]
    snap(page, "jobs-filtered")
    page.reload()  # the filters survive a reload: they live in the URL
    assert page.input_value("#id_name") == "res"


def test_the_job_list_is_usable_by_keyboard_and_at_phone_width(live_server, page, user, jobs):
    page.set_viewport_size(PHONE)
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/jobs/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, "the page scrolls sideways at phone width"
    snap(page, "jobs-phone", full_page=False)
    page.click("#job-table tbody th a >> nth=0")
    page.wait_for_selector("#job-phase")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"] + 1
    snap(page, "job-phone", full_page=False)


def test_a_job_page_shows_replicas_conditions_history_and_yaml(live_server, page, user):
    page.set_viewport_size(LAPTOP)
    job = factories.job(
        "mnist",
        phase="Failed",
        state_reason="BackoffLimitExceeded",
        state_message="Worker 1 failed 3 times (exit code 1).",
        replica_summary="Worker 1/2 failed",
        completion_time=factories.T0 + timedelta(minutes=12),
        conditions=[
            condition("Created", "True", "JobCreated", "2026-06-01T08:00:00Z"),
            condition("Running", "False", "JobRunning", "2026-06-01T08:00:05Z"),
            condition("Failed", "True", "BackoffLimitExceeded", "2026-06-01T08:12:00Z",
                      "Worker 1 failed 3 times (exit code 1)."),
        ],
    )  # fmt: skip
    factories.replica(job, "worker", 0, phase="Succeeded", exit_code=0)
    factories.replica(job, "worker", 1, phase="Failed", exit_code=1, restarts=3)
    transitions = (
        (0, "Created", "JobCreated"),
        (1, "Running", "JobRunning"),
        (12, "Failed", "BackoffLimitExceeded"),
    )
    for minute, phase, reason in transitions:
        at = factories.T0 + timedelta(minutes=minute)
        TrainingJobHistory.objects.create(resource=job, at=at, phase=phase, reason=reason)
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/jobs/{job.pk}/")
    assert page.inner_text("#job-phase") == "Failed"
    assert page.is_visible("text=exit 1 · ↻ 3")
    page.click("text=The job as submitted")
    assert page.is_visible("text=tfReplicaSpecs:")
    page.wait_for_selector("#events-title + div :is(.error, .empty, table)")
    snap(page, "job-failed")


def test_a_sweep_shows_its_plots_and_its_trials_best_first(live_server, page, user, sweep):
    page.set_viewport_size(LAPTOP)
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/sweeps/")
    page.click(f"text={sweep.name}")
    wait_for_plots(page, "sweep-plots")
    for plot in ("#plot-parallel", "#plot-history", "#plot-importances"):
        assert page.locator(f"{plot} .main-svg").count() > 0, f"{plot} was not drawn"
    assert page.is_visible("text=Plotted 380 trials")
    snap(page, "sweep-overview")
    page.click("nav[aria-label='Sweep views'] >> text=Trials")
    page.wait_for_selector("#trial-table")
    first_row = page.locator("#trial-table tbody tr").first
    assert "best" in first_row.get_attribute("class")
    snap(page, "sweep-trials")
    page.click("nav[aria-label='Sweep views'] >> text=YAML")
    assert page.is_visible("text=kind: HyperparamWorkflow")


def test_invalid_yaml_shows_its_problems_inline_then_a_valid_one_is_previewed(live_server, page, user):
    page.set_viewport_size(LAPTOP)
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/submit/")
    broken = {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "Bad_Name", "namespace": "team-a"},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": -2, "template": {"spec": {"containers": []}}}}},
    }
    page.fill("#id_manifest", yaml.safe_dump(broken))
    page.click("button[value=preview]")
    page.wait_for_selector("#problems")
    problems = page.inner_text("#problems")
    assert "metadata.name" in problems
    assert "replicas" in problems
    assert page.get_attribute("#id_manifest", "aria-invalid") == "true"
    assert "Bad_Name" in page.input_value("#id_manifest")  # the user's text is kept to fix
    snap(page, "submit-invalid")
    valid = {**broken, "metadata": {"name": "mnist", "namespace": "team-a"}, "spec": factories.job_spec(3)}
    page.fill("#id_manifest", yaml.safe_dump(valid))
    page.click("button[value=preview]")
    page.wait_for_selector("#preview")
    assert page.is_visible("text=3 pod(s) and 3 headless service(s)")
    assert page.is_visible("button:has-text('Create TFJob mnist')")
    snap(page, "submit-preview")


def test_the_tensorboards_and_gc_pages(live_server, page, user):
    page.set_viewport_size(LAPTOP)
    factories.tensorboard("lr-sweep-hpw")
    factories.tensorboard("mnist-tfjob", source_kind="TFJob", source_name="mnist", phase="Pending")
    factories.gc_run(deletions=[("team-a", f"wf-pod-{i}") for i in range(5)])
    factories.gc_run(dry_run=True, deletions=[("team-a", "wf-pod-9")])
    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/tensorboards/")
    assert page.locator("tbody tr").count() == 2
    snap(page, "tensorboards")
    page.goto(f"{live_server.url}/dashboard/gc/")
    assert page.locator("tbody tr").count() == 2
    snap(page, "gc")
    page.locator("tbody tr th a").last.click()
    page.wait_for_selector("text=wf-pod-4")
    snap(page, "gc-run")
