"""Trial rows from a Workflow's status: two statements per Workflow whatever its size, unchanged trials
never rewritten, and the counts and best trial read back through the indexes."""

from __future__ import annotations

import pytest

from hyperparam.batching import BatchPlan
from hyperparam.manifests import build_batch
from hyperparam.models import Trial
from hyperparam.sweep import Objective
from hyperparam.tests import fake_argo
from hyperparam.tests.conftest import make_hpw
from hyperparam.tests.test_api import mirrored_sweep
from hyperparam.trialsync import finished_batches, summarize_stored, sync_workflow

pytestmark = pytest.mark.django_db
MINIMIZE = Objective("loss", "minimize")


def batch(outcome=None, phase: str = "Running"):
    workflow = build_batch(make_hpw(), 0)
    outcome = outcome or (lambda position, arguments: fake_argo.Outcome(metric=str(position / 10)))
    return fake_argo.run(workflow, outcome, workflow_phase=phase)


def test_a_workflow_becomes_one_row_per_trial_in_two_statements(django_assert_num_queries):
    sweep = mirrored_sweep()
    with django_assert_num_queries(2):  # read the stored rows, one upsert
        assert sync_workflow(sweep, batch(), "loss") == 12
    rows = list(Trial.objects.filter(sweep=sweep).order_by("index"))
    assert [row.metric for row in rows] == [position / 10 for position in range(12)]
    assert rows[0].params == {"lr": "0.1", "batch-size": "16"}


def test_only_trials_that_changed_are_written_again(django_assert_num_queries):
    sweep = mirrored_sweep()
    half = lambda position, arguments: fake_argo.Outcome(metric="0.5") if position < 6 else None  # noqa: E731
    sync_workflow(sweep, batch(half), "loss")
    assert Trial.objects.filter(sweep=sweep, phase="Pending").count() == 6

    with django_assert_num_queries(1):  # nothing changed: only the read
        assert sync_workflow(sweep, batch(half), "loss") == 0
    # Trial 5 already reported 0.5; the other five finished ones changed metric, the six pending ones ran.
    assert sync_workflow(sweep, batch(), "loss") == 11
    assert not Trial.objects.filter(sweep=sweep, phase="Pending").exists()


def test_counts_and_best_come_from_the_stored_rows():
    sweep = mirrored_sweep()
    failed = fake_argo.Outcome(phase="Failed", metric=None)
    sync_workflow(
        sweep, batch(lambda p, a: failed if p == 0 else fake_argo.Outcome(metric=str(1 - p / 20))), "loss"
    )
    summary = summarize_stored(sweep, MINIMIZE)
    assert summary.counts["Failed"] == 1
    assert summary.counts["Succeeded"] == 11
    assert (summary.total, summary.finished, summary.failed) == (12, 12, 1)
    assert summary.best.index == 11
    assert summarize_stored(sweep, Objective("loss", "maximize")).best.index == 1


def test_a_batch_counts_as_done_once_every_trial_of_it_is_stored_finished():
    sweep = mirrored_sweep()
    sync_workflow(sweep, batch(), "loss")
    plan = BatchPlan(trial_count=24, trials_per_batch=12, parallelism=4)
    assert finished_batches(sweep, plan, exclude=set()) == {0}
    assert finished_batches(sweep, plan, exclude={0}) == set()
    Trial.objects.filter(sweep=sweep, index=3).update(phase="Running")
    assert finished_batches(sweep, plan, exclude=set()) == set()
