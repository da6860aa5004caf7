"""The Train jobs pages in a real Chromium (Playwright): the list, a TrainJob's page with progress and each
metric drawn by plotly.js under the page's CSP, and a sweep's trials' TrainJobs side by side. Screenshots
go under .artifacts/dashboard/."""

from __future__ import annotations

from datetime import timedelta

import pytest

from access.models import NamespaceGrant, Role
from dashboard.tests import factories
from dashboard.tests.browser import LAPTOP, sign_in, snap, wait_for_plots
from dashboard.tests.conftest import PASSWORD
from hyperparam.manifests import LABEL_SWEEP_UID

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def user(django_user_model):
    erin = django_user_model.objects.create_user("erin", password=PASSWORD)
    NamespaceGrant.objects.create(user=erin, namespace="team-a", role=Role.EDITOR)
    return erin


def test_a_trainjobs_page_plots_its_progress_and_each_metric(live_server, page, user):
    factories.runtime(generation=1)
    job = factories.train_job("llama-finetune", progress_percentage=60, runtime_generation=1)
    factories.train_job_pod(job, "node", 0, node="gpu-node-1")
    factories.train_job_pod(job, "node", 1, node="gpu-node-2")
    factories.status_updates(job, 30, accuracy="0.8", learning_rate="0.0001")
    page.set_viewport_size(LAPTOP)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)

    sign_in(page, live_server.url, "erin", PASSWORD)
    page.click("nav[aria-label=Main] >> text=Train jobs")
    page.click(f"text={job.name}")
    wait_for_plots(page, "trainjob-plots")

    assert page.locator("#plot-progress .main-svg").count() > 0, "progress was not drawn"
    drawn = page.locator("#metric-plots [data-metric]")
    assert [drawn.nth(i).get_attribute("data-metric") for i in range(drawn.count())] == [
        "loss",
        "accuracy",
        "learning_rate",
    ]
    assert page.locator("#metric-plots [data-metric=loss] .main-svg").count() > 0
    assert page.is_visible("text=Plotted 30 progress reports: 3 numeric metrics.")
    assert page.is_visible("text=generation 1")
    assert not [e for e in errors if "Content Security Policy" in e or "Refused" in e], errors
    snap(page, "trainjob-plots")


def test_a_sweeps_trials_trainjobs_are_plotted_side_by_side(live_server, page, user):
    sweep = factories.sweep("lr-sweep")
    for index in range(3):
        job = factories.train_job(
            f"lr-sweep-trial-{index}",
            labels={LABEL_SWEEP_UID: sweep.uid},
            created_at=factories.T0 + timedelta(minutes=index),
        )
        factories.status_updates(job, 10, accuracy=str(0.5 + index / 10))
    page.set_viewport_size(LAPTOP)

    sign_in(page, live_server.url, "erin", PASSWORD)
    page.goto(f"{live_server.url}/dashboard/sweeps/{sweep.pk}/")
    wait_for_plots(page, "sweep-trainjob-plots")

    accuracy = page.locator("#sweep-metric-plots [data-metric=accuracy]")
    assert accuracy.locator(".main-svg").count() > 0
    assert accuracy.locator(".legendtext").count() == 3
    assert page.is_visible("text=Plotted 2 metrics of 3 TrainJobs.")
    snap(page, "sweep-trainjobs-side-by-side")
