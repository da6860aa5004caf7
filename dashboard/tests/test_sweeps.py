"""The sweeps pages: list with counts and best metric, tabs, trial table sorted by metric with the best
trial marked, plots JSON for 10,000 trials, CSV, and constant queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

import limits
from dashboard.tests import factories
from hyperparam.models import Sweep, Trial

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_sweep():
    sweep = factories.sweep(
        "lr-sweep",
        phase="Succeeded",
        trial_counts={"Succeeded": 40},
        trials_total=40,
        trials_finished=40,
        trials_planned=40,
    )
    Trial.objects.bulk_create(factories.trial_rows(sweep, 40))
    best = Trial.objects.filter(sweep=sweep).order_by("metric").first()
    Sweep.objects.filter(pk=sweep.pk).update(best_metric=best.metric, best_trial_index=best.index,
                                             best_parameters=best.params)  # fmt: skip
    sweep.refresh_from_db()
    return sweep


@pytest.mark.parametrize("count", [2, 80])
def test_the_sweep_list_uses_the_same_few_queries_however_many_sweeps_exist(
    as_editor, django_assert_num_queries, count
):
    rows = [
        factories.sweep(f"s-{i}", created_at=factories.T0 + timedelta(minutes=i), save=False)
        for i in range(count)
    ]
    Sweep.objects.bulk_create(rows)
    with django_assert_num_queries(4):
        assert as_editor.get(reverse("dashboard:sweeps")).status_code == 200


def test_the_sweep_list_shows_trial_counts_by_phase_and_the_best_metric(as_viewer, finished_sweep):
    page = as_viewer.get(reverse("dashboard:sweeps")).content.decode()
    assert "Succeeded 40" in page
    assert f"{finished_sweep.best_metric:.6g}" in page


def test_the_trials_tab_is_best_first_and_marks_the_best_trial(
    as_viewer, finished_sweep, django_assert_max_num_queries
):
    url = reverse("dashboard:sweep-tab", args=[finished_sweep.pk, "trials"])
    with django_assert_max_num_queries(5):
        response = as_viewer.get(url)
    trials = [trial for trial, _ in response.context["trials"]]
    assert trials[0].index == finished_sweep.best_trial_index
    assert [t.metric for t in trials] == sorted(t.metric for t in trials)
    assert b'class="best"' in response.content


def test_the_trials_can_be_sorted_by_metric_descending_and_paged(as_viewer, finished_sweep):
    url = reverse("dashboard:sweep-tab", args=[finished_sweep.pk, "trials"])
    response = as_viewer.get(url, {"order": "-metric"})
    metrics = [trial.metric for trial, _ in response.context["trials"]]
    assert metrics == sorted(metrics, reverse=True)
    assert not response.context["has_next"]
    assert b'aria-sort="descending"' in response.content


@pytest.mark.parametrize(
    ("page", "shown"), [(str(2**70), 101), ("7" * 5000, 101), ("102", 101), ("²", 1), ("-3", 1), ("0", 1)]
)
def test_a_page_number_past_the_last_or_not_a_number_shows_a_page_never_an_error(
    as_viewer, finished_sweep, page, shown
):
    """A page past any sweep's last is the last possible one (its offset stays a number the database takes:
    2^70 was a 500, bigint out of range); what is not a page number is page 1 (issue 27)."""
    url = reverse("dashboard:sweep-tab", args=[finished_sweep.pk, "trials"])
    with limits.overridden(trials_per_sweep=5000):
        response = as_viewer.get(url, {"page": page})
    assert response.status_code == 200
    assert response.context["page_number"] == shown


def test_the_yaml_tab_shows_the_spec(as_viewer, finished_sweep):
    page = as_viewer.get(reverse("dashboard:sweep-tab", args=[finished_sweep.pk, "yaml"])).content.decode()
    assert "kind: HyperparamWorkflow" in page
    assert "hyperparams:" in page


def test_an_unknown_tab_is_not_found(as_viewer, finished_sweep):
    assert as_viewer.get(reverse("dashboard:sweep-tab", args=[finished_sweep.pk, "nope"])).status_code == 404


def test_the_overview_tab_polls_only_while_the_sweep_runs(as_viewer, finished_sweep):
    assert b"hx-trigger" not in as_viewer.get(reverse("dashboard:sweep", args=[finished_sweep.pk])).content
    running = factories.sweep("running")
    assert b"hx-trigger" in as_viewer.get(reverse("dashboard:sweep", args=[running.pk])).content


def test_the_csv_export_has_a_column_per_hyperparameter(as_viewer, finished_sweep):
    response = as_viewer.get(reverse("dashboard:sweep-csv", args=[finished_sweep.pk]))
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0].endswith("lr,optimizer")
    assert len(lines) == 41


def test_the_plots_of_10000_trials_are_downsampled_for_the_browser(as_viewer):
    sweep = factories.sweep("big", algorithm="tpe")
    Trial.objects.bulk_create(factories.trial_rows(sweep, 10_000), batch_size=2000)
    body = as_viewer.get(reverse("dashboard:sweep-plots", args=[sweep.pk])).json()
    assert body["trials"] == 10_000
    assert body["parallel"]["shown"] == 2000
    assert len(body["history"]["data"][0]["x"]) == 2000
    assert body["importances"]["data"][0]["y"][-1] == "lr"  # most important drawn on top


def test_a_sweep_without_metrics_has_no_plots_yet(as_viewer):
    sweep = factories.sweep("new")
    assert as_viewer.get(reverse("dashboard:sweep-plots", args=[sweep.pk])).json() == {"trials": 0}


def test_a_sweep_outside_the_users_namespaces_is_not_found(as_outsider, finished_sweep):
    for name in ("dashboard:sweep", "dashboard:sweep-plots", "dashboard:sweep-csv"):
        assert as_outsider.get(reverse(name, args=[finished_sweep.pk])).status_code == 404


def test_a_viewer_may_not_stop_a_sweep_or_open_a_tensorboard_for_it(as_viewer, finished_sweep):
    assert as_viewer.post(reverse("dashboard:sweep-stop", args=[finished_sweep.pk])).status_code == 403
    assert as_viewer.post(reverse("dashboard:sweep-tensorboard", args=[finished_sweep.pk])).status_code == 403


@pytest.fixture
def failed_plain_grid():
    """A grid without an objective whose trials 3 and 7 failed, as the controller leaves it."""
    errors = [
        {"index": 3, "phase": "Error", "message": "OOMKilled (exit code 137)"},
        {"index": 7, "phase": "Failed", "message": "exit code 1"},
    ]
    sweep = factories.sweep(
        "plain-grid",
        phase="Failed",
        goal="",
        metric_name="",
        trial_counts={"Succeeded": 8, "Error": 1, "Failed": 1},
        trials_total=10,
        trials_finished=10,
        trials_planned=10,
        status={"message": "2 of 10 trials failed; trial 3 (Error): OOMKilled (exit code 137)",
                "trialErrors": errors},
    )  # fmt: skip
    rows = factories.trial_rows(sweep, 10)
    for row in rows:
        row.metric = None
    Trial.objects.bulk_create(rows)
    return sweep


def test_a_sweep_without_an_objective_shows_its_errors_and_no_plot_or_best(as_viewer, failed_plain_grid):
    page = as_viewer.get(reverse("dashboard:sweep", args=[failed_plain_grid.pk])).content.decode()
    assert "every trial runs; the sweep succeeds when they do" in page
    assert "2 of 10 trials failed; trial 3 (Error): OOMKilled (exit code 137)" in page
    assert 'id="trial-errors"' in page
    assert "exit code 1" in page
    assert 'id="sweep-plots"' not in page
    assert "plots.js" not in page
    assert "Best " not in page


def test_the_trials_of_a_sweep_without_an_objective_are_in_index_order_with_no_metric_column(
    as_viewer, failed_plain_grid
):
    response = as_viewer.get(reverse("dashboard:sweep-tab", args=[failed_plain_grid.pk, "trials"]))
    assert [trial.index for trial, _ in response.context["trials"]] == list(range(10))
    assert set(response.context["orderings"]) == {"index", "-index"}
    assert b"order=metric" not in response.content
    unsorted = as_viewer.get(
        reverse("dashboard:sweep-tab", args=[failed_plain_grid.pk, "trials"]) + "?order=metric"
    )
    assert unsorted.context["ordering"] == "index"
