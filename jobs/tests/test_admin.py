"""The admin lists jobs by kind, namespace and state with their replica summary, in a fixed number of queries
and without counting the whole table; a job's page shows its replicas and history."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import admin as admin_module
from jobs.admin import CappedCountPaginator
from jobs.models import Replica, TrainingJob
from jobs.tests.test_models import CREATED, RUNNING, pod, tfjob
from kube.controller.mirror import apply_event

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/jobs/trainingjob/"


def mirror_jobs(count: int, *, kind: str = "TFJob") -> None:
    for index in range(count):
        apply_event(TrainingJob, "ADDED", tfjob(str(index), CREATED, RUNNING, name=f"{kind.lower()}-{index}",
                                                uid=f"{kind}-{index}", kind=kind))  # fmt: skip


def changelist_queries(admin_client, query: str = "") -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(f"{CHANGELIST}{query}")
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def test_the_list_shows_kind_namespace_state_and_replica_summary(admin_client):
    mirror_jobs(2)
    mirror_jobs(1, kind="MXJob")

    page = admin_client.get(f"{CHANGELIST}?kind=TFJob").content.decode()

    assert "tfjob-0" in page
    assert "tfjob-1" in page
    assert "mxjob-0" not in page
    assert "PS 2/2 · Worker 3/4 running" in page
    assert "team-a" in page


def test_the_list_costs_the_same_queries_for_3_or_60_jobs_and_never_counts_the_whole_table(admin_client):
    mirror_jobs(3)
    few = changelist_queries(admin_client)
    mirror_jobs(60, kind="MXJob")
    many = changelist_queries(admin_client, "?state=Running")

    assert len(many) == len(few)
    counts = [sql for sql in many if "COUNT(" in sql.upper()]
    assert counts
    assert all("LIMIT" in sql.upper() for sql in counts), counts


def test_name_search_and_state_filters_narrow_the_list(admin_client):
    mirror_jobs(3)
    page = admin_client.get(f"{CHANGELIST}?q=TFJOB-1&state=Running").content.decode()
    assert "tfjob-1" in page
    assert "tfjob-2" not in page
    assert "tfjob-0" not in page
    assert "tfjob-1" not in admin_client.get(f"{CHANGELIST}?state=Failed").content.decode()


def test_a_jobs_page_shows_its_replicas_and_history_and_cannot_be_changed(admin_client):
    mirror_jobs(1)
    apply_event(Replica, "ADDED", pod("mnist-worker-0", "1", owner_uid="TFJob-0", phase="Running",
                                      podIP="10.0.0.9"))  # fmt: skip
    job = TrainingJob.objects.get()

    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()

    assert "mnist-worker-0" in page
    assert "10.0.0.9" in page
    assert "TFJobRunning" in page  # the history row
    assert 'name="_save"' not in page
    assert admin_client.get("/admin/jobs/trainingjob/add/").status_code == 403


def test_past_the_cap_the_paginator_reports_the_planners_estimate_or_the_cap_plus_one(monkeypatch):
    monkeypatch.setattr(admin_module, "COUNT_CAP", 2)
    mirror_jobs(5)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE jobs_trainingjob")

    # The paginator reads PostgreSQL's row estimate (pg_class, kept by autovacuum). SQLite's would exist only
    # after an ANALYZE, which `make run` never runs, so there it says the cap plus one: "more than 2".
    estimate = 5 if connection.vendor == "postgresql" else 3
    assert CappedCountPaginator(TrainingJob.objects.order_by("id"), 2).count == estimate
    filtered = TrainingJob.objects.filter(phase="Running").order_by("id")
    assert CappedCountPaginator(filtered, 2).count == 3  # "more than 2"
    assert CappedCountPaginator(TrainingJob.objects.filter(kind="MXJob").order_by("id"), 2).count == 0
