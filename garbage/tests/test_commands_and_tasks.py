"""`manage.py gc`, the Celery task (called directly) and the beat schedule the migration creates."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from garbage.lock import RunLock, redis_client
from garbage.models import GCRun
from garbage.tasks import collect_pods

from .factories import DAY, HOUR, put, workflow_pod

pytestmark = pytest.mark.django_db


@pytest.fixture
def old_and_young(cluster, gc_settings):
    """The command and the task measure ages on the wall clock, so the pods are timed by it too."""
    now = timezone.now()
    put(cluster.store, workflow_pod("old", finished_ago=2 * HOUR, now=now))
    put(cluster.store, workflow_pod("young", finished_ago=60, now=now))
    put(cluster.store, workflow_pod("elsewhere", "team-b", finished_ago=DAY, now=now))
    return cluster


def pod_names(sim) -> set[str]:
    return {item["metadata"]["name"] for item in sim.store.list("pods")["items"]}


def test_the_command_prints_a_summary_of_what_a_dry_run_would_delete(old_and_young, capsys):
    call_command("gc", "--dry-run")
    out = capsys.readouterr().out
    assert "(dry run)" in out
    assert "scanned 3, would delete 2, kept 1, errors 0." in out
    assert "would delete 2 (workflow_succeeded)" in out
    assert "kept 1 (within_retention)" in out
    assert pod_names(old_and_young) == {"old", "young", "elsewhere"}


def test_the_command_deletes_in_one_namespace(old_and_young, capsys):
    call_command("gc", "--namespace", "team-b")
    out = capsys.readouterr().out
    assert "in team-b: scanned 1, deleted 1, kept 0, errors 0." in out
    assert pod_names(old_and_young) == {"old", "young"}


def test_the_command_says_so_and_fails_when_another_run_holds_the_lock(old_and_young):
    holder = RunLock(redis_client(), 60)
    holder.acquire()
    with pytest.raises(CommandError, match="Another garbage collection held the lock"):
        call_command("gc")
    assert pod_names(old_and_young) == {"old", "young", "elsewhere"}
    holder.release()


def test_the_command_refuses_a_bad_namespace(cluster):
    with pytest.raises(CommandError, match="namespace"):
        call_command("gc", "--namespace", "No_Such")


def test_the_task_runs_one_collection_and_returns_its_summary(old_and_young):
    summary = collect_pods()
    run = GCRun.objects.get()
    assert summary == {"run": run.pk, "status": "succeeded", "deleted": 2, "errors": 0}
    assert pod_names(old_and_young) == {"young"}


def test_the_task_is_scheduled_every_ten_minutes_on_the_default_queue():
    task = PeriodicTask.objects.get(name="garbage.collect_pods")
    assert task.task == "garbage.collect_pods"
    assert (task.interval.every, task.interval.period) == (600, "seconds")
    assert task.queue == "default"
    assert task.enabled
