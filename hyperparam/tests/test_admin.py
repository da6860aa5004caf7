"""The admin: the sweep list and a sweep's trials with its hyperparameters as columns, best first, paged
from the sweep's counts (no COUNT(*) over trials) with a fixed number of queries per page."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hyperparam.models import Trial
from hyperparam.tests.test_api import add_trials, mirrored_sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client, django_user_model):
    user = django_user_model.objects.create_superuser("root", password="x")
    client.force_login(user)
    return client


def test_the_sweep_list_shows_phase_counts_and_best_metric(admin):
    best = {"index": 2, "parameters": {"lr": "0.1"}, "metric": 0.125, "workflow": "w-0"}
    mirrored_sweep(trials={"Succeeded": 7, "Failed": 2, "Running": 3}, progress="9/12", bestTrial=best)
    page = admin.get("/admin/hyperparam/sweep/").content.decode()
    assert "mnist-sweep" in page
    assert "9 / 12" in page
    assert "0.125" in page


def test_the_sweep_page_shows_its_best_trials_and_links_to_all(admin):
    sweep = mirrored_sweep(trials={"Succeeded": 3})
    add_trials(sweep, [0.5, 0.1, 0.3])
    page = admin.get(f"/admin/hyperparam/sweep/{sweep.pk}/change/").content.decode()
    assert page.index("<td>0.1</td>") < page.index("<td>0.3</td>") < page.index("<td>0.5</td>")
    assert f"/admin/hyperparam/trial/?sweep__id__exact={sweep.pk}" in page


def test_a_sweeps_trials_have_a_column_per_hyperparameter_best_first(admin):
    sweep = mirrored_sweep(trials={"Succeeded": 3, "Running": 1})
    add_trials(sweep, [0.5, None, 0.1, 0.3])
    page = admin.get(f"/admin/hyperparam/trial/?sweep__id__exact={sweep.pk}").content.decode()
    assert "column-param_lr" in page
    assert "column-param_batch-size" in page
    rows = [page.index(f'<td class="field-metric">{value}</td>') for value in ("0.1", "0.3", "0.5")]
    assert rows == sorted(rows)
    assert "4 trials" in page


def test_a_page_of_trials_costs_the_same_queries_for_10_or_2000_trials_and_never_counts_them(admin):
    small = mirrored_sweep("small", trials={"Succeeded": 10})
    add_trials(small, [float(index) for index in range(10)])
    large = mirrored_sweep("large", trials={"Succeeded": 2000})
    add_trials(large, [float(index) for index in range(2000)])

    def queries(sweep_pk: int) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            response = admin.get(f"/admin/hyperparam/trial/?sweep__id__exact={sweep_pk}&o=3")
        assert response.status_code == 200
        return [query["sql"] for query in captured.captured_queries]

    few, many = queries(small.pk), queries(large.pk)
    assert len(few) == len(many)
    assert not [sql for sql in many if "COUNT(" in sql.upper() and "hyperparam_trial" in sql]
    assert Trial.objects.filter(sweep=large).count() == 2000


def test_a_sweep_without_an_objective_shows_its_failed_trials_and_no_metric(admin):
    errors = [{"index": 1, "phase": "Failed", "message": "exit code 3"}]
    sweep = mirrored_sweep(trials={"Succeeded": 1, "Failed": 1}, trialErrors=errors)
    sweep.spec.pop("objective")
    sweep.metric_name = sweep.goal = ""
    sweep.save()
    add_trials(sweep, [None, None])
    page = admin.get(f"/admin/hyperparam/sweep/{sweep.pk}/change/").content.decode()
    assert "#1: Failed — exit code 3" in page
    assert "no objective: the sweep runs every combination" in page
    trials = admin.get(f"/admin/hyperparam/trial/?sweep__id__exact={sweep.pk}").content.decode()
    assert "column-param_lr" in trials
    assert "field-metric" not in trials
