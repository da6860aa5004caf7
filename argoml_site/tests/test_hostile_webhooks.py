"""Bounded work at every door of the webhook listener: every pattern of its URLconf is classified
(`doors.WEBHOOKS`); admission reviews carrying each kind's hostile cases go to both webhooks, and hostile
progress reports go to the TrainJob progress endpoint with a real pod token. A review must be answered
for its uid — denied naming the field, or allowed — never with the listener's internal-error or
time-budget answer, never a 5xx, within the budgets of `hostile.measure` (issue 27)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.test.utils import override_settings

import kube.client
from kubesim.testing import running_simulator
from trainer.progress import server as progress_server
from trainer.tests import progress
from webhooks import mutating, validating, views

from .hostile import cluster as hostile_cluster
from .hostile import corpus, doors
from .hostile.checks import Answer, Figures, problems
from .hostile.measure import measured

pytestmark = [pytest.mark.urls("argoml_site.webhook_urls"), pytest.mark.django_db]

#: What the listener answers when a check broke or ran out of time: never a hostile input's fault.
OWN_FAILURES = (views.INTERNAL_ERROR, views.TIMED_OUT, validating.INTERNAL_ERROR, mutating.INJECTION_FAILED)


def review_cases() -> Iterator[Any]:
    documents = corpus.documents()
    for door, endpoint in doors.webhook_doors():
        if door.documents != ("AdmissionReview",):
            continue
        reviews = [corpus.review(documents[kind]) for kind in doors.CLUSTER_KINDS]
        for review, case in corpus.distinct(reviews, text=False):
            yield pytest.param(endpoint, case, id=f"{door.key} | {review.name} | {case.id}")


def report_cases() -> Iterator[Any]:
    document = corpus.documents()["ProgressReport"]
    for case in corpus.cases(document, text=False):
        yield pytest.param(case, id=f"trainer-trainjob-status | {case.id}")


@pytest.fixture
def figures(hostile_figures: dict[str, Figures]) -> Figures:
    return hostile_figures.setdefault("webhooks", Figures("webhooks"))


def test_every_door_of_the_listener_is_classified():
    assert {door.key for door, _ in doors.webhook_doors()} == set(doors.WEBHOOKS)


def _review_answer(response: Any, caplog: pytest.LogCaptureFixture) -> Answer:
    text = response.content.decode("utf-8", "replace")
    logged = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    caplog.clear()
    if response.status_code != 200:
        return Answer(response.status_code, text, refused=400 <= response.status_code < 500)
    verdict = response.json()["response"]
    said = " ".join([json.dumps(verdict.get("status", {})), *verdict.get("warnings", ())])
    own = [failure for failure in OWN_FAILURES if failure in said]
    error = "; ".join(logged + own)
    return Answer(422 if not verdict["allowed"] else 200, said, refused=not verdict["allowed"], error=error)


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """The cluster a review may read (a TrainJob's runtime, a scaled job), kubesim in its own process."""
    with hostile_cluster.separate_simulator("team-a"):
        yield


@pytest.mark.parametrize(("endpoint", "case"), list(review_cases()))
def test_every_review_is_bounded(cluster, figures, caplog, endpoint, case):
    if endpoint.key == "webhooks-mutate":
        # Defaulting refuses nothing: the API server asks the validating webhook next, which does.
        case = dataclasses.replace(case, must_refuse=False)
    path = "/" + endpoint.route
    body = case.as_json()

    def send() -> Answer:
        response = Client().post(path, body, content_type="application/json")
        return _review_answer(response, caplog)

    cost = measured(send)
    figures.record(case.family.value, endpoint.key, cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))


@pytest.fixture(scope="module")
def reporting_pod() -> Iterator[tuple[str, str]]:
    """A TrainJob's own pod with its token, and the job's status path (the one caller the endpoint
    admits: what it sends is the hostile part)."""
    with (
        running_simulator(auth=True) as simulator,
        override_settings(
            KUBECONFIG=str(simulator.kubeconfig_path),
            KUBE_IN_CLUSTER=False,
            TRAINER_STATUS_REPORTS_PER_WINDOW=10**6,
        ),
    ):
        kube.client.reset_client()
        namespace = progress.prepare(simulator)
        _, [pod] = progress.train_job(namespace, "hostile-trainjob")
        token = progress.job_token(namespace, "hostile-trainjob", pod["metadata"]["name"])
        yield token, progress_server.status_path(namespace, "hostile-trainjob")
    kube.client.reset_client()


@pytest.mark.parametrize("case", list(report_cases()))
def test_every_progress_report_is_bounded(figures, caplog, reporting_pod, case):
    token, path = reporting_pod
    body = case.as_json()

    def send() -> Answer:
        response = Client().post(
            path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        logged = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
        caplog.clear()
        text = response.content.decode("utf-8", "replace")
        return Answer(
            response.status_code, text, refused=400 <= response.status_code < 500, error="; ".join(logged)
        )

    cost = measured(send)
    figures.record(case.family.value, "trainer-trainjob-status", cost)
    assert not problems(case, cost), (cost.figures(), problems(case, cost))
