"""The queue's state machine against real Redis, driven in-process step by step (no worker, no Celery).

Each test calls the same code a worker runs (ReconcileQueue.process) with a recording sender, so every
transition and every message the queue would send can be checked exactly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from django.core.exceptions import ImproperlyConfigured
from prometheus_client import REGISTRY

from kube.controller.queue import Enqueued, ObjectKey, QueueConf, QueueStore, ReconcileQueue, Registry, Result
from kube.controller.queue.conf import queue_conf_from_settings
from kube.errors import Conflict
from kube.logging import LogContext
from kube.logging import current as current_log_context

from .queue_harness import RecordingSender, emptied, redis_client

CONF = QueueConf(
    backoff_base=0.001,
    backoff_max=0.008,
    lease=0.3,
    sweep_interval=0.05,
    resend_after=0.2,
    worker_timeout=0.2,
)
KEY = ObjectKey("Widget", "team-a", "w1")


@pytest.fixture
def client() -> Iterator:
    with emptied(redis_client()) as client:
        yield client


@pytest.fixture
def sender() -> RecordingSender:
    return RecordingSender()


@pytest.fixture
def reconcilers() -> Registry:
    return Registry(discover_apps=False)


@pytest.fixture
def queue(client, sender, reconcilers) -> ReconcileQueue:
    return ReconcileQueue(QueueStore(client, fence_ms=QueueConf.ms(CONF.lease)), CONF, sender, reconcilers)


def enqueue(queue: ReconcileQueue, key: ObjectKey = KEY) -> Enqueued:
    return queue.enqueue(key.kind, key.namespace, key.name)


def process(queue: ReconcileQueue, key: ObjectKey = KEY) -> str:
    return queue.process(key.kind, key.namespace, key.name)


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


# --- Enqueue ------------------------------------------------------------------------------------------


def test_enqueue_of_an_idle_key_sends_one_message_now(queue, sender):
    assert enqueue(queue) is Enqueued.ADDED
    assert sender.sent == [(KEY, 0.0)]


def test_enqueues_while_the_key_is_queued_are_no_ops(queue, sender):
    enqueue(queue)
    outcomes = {enqueue(queue) for _ in range(20)}
    assert outcomes == {Enqueued.ALREADY_PENDING}
    assert len(sender.sent) == 1


def test_keys_of_different_objects_are_independent(queue, sender):
    other = ObjectKey("Widget", "team-b", "w1")
    assert enqueue(queue) is Enqueued.ADDED
    assert enqueue(queue, other) is Enqueued.ADDED
    assert [key for key, _ in sender.sent] == [KEY, other]


# --- Running, dirty, no overlap ------------------------------------------------------------------------


def test_enqueues_during_a_run_make_it_run_exactly_once_more(queue, sender, reconcilers):
    during_first_run: list[Enqueued] = []

    def reconcile(namespace: str, name: str) -> None:
        if not during_first_run:
            during_first_run.extend(enqueue(queue) for _ in range(10))

    reconcilers.register("Widget", reconcile)
    enqueue(queue)
    sender.sent.clear()

    assert process(queue) == "success"
    assert during_first_run == [Enqueued.DIRTY] + [Enqueued.ALREADY_PENDING] * 9
    assert sender.sent == [(KEY, 0.0)]
    assert process(queue) == "success"
    assert process(queue) == "stale"
    assert sender.sent == [(KEY, 0.0)]


def test_a_run_without_new_events_leaves_the_key_idle(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    process(queue)
    assert sender.sent == [(KEY, 0.0)]
    assert enqueue(queue) is Enqueued.ADDED


def test_a_second_message_during_a_run_does_not_run_the_key(queue, reconcilers):
    nested: list[str] = []
    reconcilers.register("Widget", lambda ns, name: nested.append(process(queue)))
    enqueue(queue)
    assert process(queue) == "success"
    assert nested == ["busy"]


def test_a_duplicate_message_after_the_run_is_dropped_as_stale(queue, reconcilers):
    calls: list[str] = []
    reconcilers.register("Widget", lambda ns, name: calls.append(name))
    enqueue(queue)
    assert process(queue) == "success"
    assert process(queue) == "stale"
    assert calls == ["w1"]


# --- Failures and backoff ------------------------------------------------------------------------------


def fail(namespace: str, name: str) -> None:
    raise RuntimeError("the cluster said no")


def run_when_due(queue: ReconcileQueue, sender: RecordingSender) -> str:
    """Wait out the countdown of the last message sent, then deliver it."""
    time.sleep(sender.sent[-1][1] + 0.002)
    return process(queue)


def test_failures_back_off_exponentially_up_to_the_cap(queue, sender, reconcilers):
    reconcilers.register("Widget", fail)
    enqueue(queue)
    assert process(queue) == "error"
    for _ in range(5):
        assert run_when_due(queue, sender) == "error"
    countdowns = [countdown for _, countdown in sender.sent[1:]]
    assert countdowns == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.008, 0.008], abs=0.0011)
    assert queue.store.failures(KEY) == 6


def test_success_resets_the_backoff(queue, sender, reconcilers):
    outcomes = iter([fail, fail, lambda ns, name: None, fail])
    reconcilers.register("Widget", lambda ns, name: next(outcomes)(ns, name))
    enqueue(queue)
    process(queue)
    run_when_due(queue, sender)
    assert queue.store.failures(KEY) == 2
    assert run_when_due(queue, sender) == "success"
    assert queue.store.failures(KEY) == 0

    enqueue(queue)
    assert process(queue) == "error"
    assert sender.sent[-1][1] == pytest.approx(0.001, abs=0.0011)


def test_a_failed_key_waits_out_its_backoff_even_when_enqueued_again(queue, sender, reconcilers):
    slow = ReconcileQueue(queue.store, QueueConf(backoff_base=5.0, backoff_max=10.0), sender, reconcilers)
    reconcilers.register("Widget", fail)
    enqueue(slow)
    process(slow)
    assert enqueue(slow) is Enqueued.ALREADY_PENDING
    assert sender.sent[-1][1] == pytest.approx(5.0, abs=0.01)


def test_a_message_arriving_before_its_backoff_ends_is_sent_again_for_the_rest(queue, sender, reconcilers):
    slow = ReconcileQueue(queue.store, QueueConf(backoff_base=2.0, backoff_max=10.0), sender, reconcilers)
    reconcilers.register("Widget", fail)
    enqueue(slow)
    process(slow)
    assert process(slow) == "early"
    assert 1.9 < sender.sent[-1][1] <= 2.0


def test_countdowns_are_capped_by_the_backoff_cap_so_a_message_never_outlives_the_broker(
    queue, sender, reconcilers
):
    reconcilers.register("Widget", lambda ns, name: 3600.0)
    enqueue(queue)
    assert process(queue) == "requeue_after"
    assert sender.sent[-1][1] == CONF.backoff_max


def test_a_reconciler_may_ask_to_run_again_later(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: 0.005)
    enqueue(queue)
    assert process(queue) == "requeue_after"
    assert sender.sent[-1][1] == pytest.approx(0.005, abs=0.0011)
    assert queue.store.failures(KEY) == 0


def test_an_event_during_a_requeue_wait_runs_the_key_now_and_the_timer_message_is_then_stale(
    queue, sender, reconcilers
):
    reconcilers.register("Widget", lambda ns, name: 3600.0)
    enqueue(queue)
    process(queue)
    assert enqueue(queue) is Enqueued.ADDED
    assert sender.sent[-1] == (KEY, 0.0)
    assert process(queue) == "requeue_after"
    assert enqueue(queue) is Enqueued.ADDED  # every event, not only the first


def test_a_conflict_is_retried_with_backoff_and_logged_in_one_line_without_a_traceback(
    queue, sender, reconcilers, caplog
):
    """A Conflict is another writer's newer version (a user, the progress endpoint), not a defect: the
    key backs off and runs again as after any failure, and the log says so in one line, where an
    exception's traceback would fail the dev stack's log scan."""

    def conflicted(namespace: str, name: str) -> None:
        raise Conflict("Operation cannot be fulfilled: the object has been modified")

    reconcilers.register("Widget", conflicted)
    enqueue(queue)
    with caplog.at_level(logging.INFO, logger="kube.queue.core"):
        assert process(queue) == "error"
    assert queue.store.failures(KEY) == 1
    assert sender.sent[-1][1] == pytest.approx(0.001, abs=0.0011)
    [record] = [r for r in caplog.records if "newer version" in r.getMessage()]
    assert record.levelno == logging.INFO
    assert record.exc_info is None
    assert "the object has been modified" in record.getMessage()


@pytest.mark.parametrize("returned", ["soon", -1, True, [1]])
def test_a_reconciler_returning_something_else_fails(queue, reconcilers, returned):
    reconcilers.register("Widget", lambda ns, name: returned)
    enqueue(queue)
    assert process(queue) == "error"
    assert queue.store.failures(KEY) == 1


def test_a_kind_without_a_reconciler_fails_and_backs_off_instead_of_being_dropped(queue, sender):
    enqueue(queue)
    assert process(queue) == "error"
    assert sender.sent[-1][1] == pytest.approx(0.001, abs=0.0011)


# --- Leases and crashes ----------------------------------------------------------------------------------


def claim_and_die(queue: ReconcileQueue, key: ObjectKey = KEY) -> str:
    """What a worker killed mid-reconcile leaves behind: a claimed key whose lease nobody renews."""
    token = "killed-worker"
    assert queue.store.claim(key, token, QueueConf.ms(CONF.lease)).may_run
    return token


def test_a_lease_is_renewed_while_the_reconciler_runs_longer_than_the_lease(queue, reconcilers):
    sweeps: list[int] = []

    def slow(namespace: str, name: str) -> None:
        for _ in range(4):
            time.sleep(CONF.lease / 2)
            sweeps.append(queue.sweep())

    reconcilers.register("Widget", slow)
    enqueue(queue)
    assert process(queue) == "success"
    assert sweeps == [0, 0, 0, 0]


def test_the_sweep_sends_a_key_again_once_its_killed_workers_lease_lapses(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    dead = claim_and_die(queue)
    enqueue(queue)  # an event during the dead run: folded into the run that replaces it
    assert queue.sweep() == 0
    wait_out_the_lease(queue)
    assert queue.sweep() == 1
    assert sender.sent[-1] == (KEY, 0.0)
    assert process(queue) == "success"
    assert queue.store.finish(KEY, dead, Result.SUCCESS, backoff_base_ms=1, backoff_max_ms=8).status == "lost"
    assert process(queue) == "stale"


def test_an_enqueue_after_the_lease_lapsed_recovers_the_key_at_once(queue, sender):
    enqueue(queue)
    claim_and_die(queue)
    wait_out_the_lease(queue)
    assert enqueue(queue) is Enqueued.RECOVERED
    assert sender.sent[-1] == (KEY, 0.0)


def test_a_redelivered_message_takes_over_a_lapsed_lease(queue, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    claim_and_die(queue)
    assert process(queue) == "busy"  # redelivered at once: the dead run's lease still stands
    wait_out_the_lease(queue)
    assert process(queue) == "success"


def test_when_nobody_could_reach_redis_for_half_a_lease_every_running_lease_starts_again(queue, reconcilers):
    """Redis paused or stopped: no run could renew its lease, so none is judged by it."""
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    claim_and_die(queue)
    time.sleep(CONF.lease + 0.02)  # no step at all meanwhile, as while Redis was away
    assert queue.sweep() == 0  # the lease counts from now
    wait_out_the_lease(queue)
    assert queue.sweep() == 1  # its worker really is gone


def wait_out_the_lease(queue: ReconcileQueue) -> None:
    """Sleep past the lease while a live worker keeps stepping every sweep interval, as in a deployment
    (a silence that long would read as Redis being away, and the leases would start again)."""
    deadline = time.monotonic() + CONF.lease + 0.02
    while time.monotonic() < deadline:
        queue.store.status(KEY.kind)
        time.sleep(CONF.sweep_interval)


def test_a_pending_key_whose_message_was_lost_is_sent_again_by_the_sweep(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    assert queue.store.enqueue(KEY).needs_message  # the sender died before publishing
    assert queue.sweep() == 0
    time.sleep(CONF.resend_after + 0.02)
    assert queue.sweep() == 1
    assert sender.sent == [(KEY, 0.0)]
    assert queue.sweep() == 0


def test_a_message_held_by_a_dead_worker_is_sent_again_once_its_heartbeat_lapses(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    queue.heartbeat("w1")
    queue.reserve(KEY.kind, KEY.namespace, KEY.name, "w1")  # prefetched by w1, which is then killed
    assert queue.sweep() == 0  # w1 still counts as alive
    time.sleep(CONF.worker_timeout + 0.02)
    assert queue.sweep() == 1
    assert sender.sent[-1] == (KEY, 0.0)
    assert queue.sweep() == 0  # once per death, not once per sweep


def test_a_countdown_held_by_a_dead_worker_is_sent_again_for_its_remaining_time(client, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    queue = ReconcileQueue(QueueStore(client), replace(CONF, backoff_max=10.0), sender, reconcilers)
    enqueue(queue)
    assert queue.store.claim(KEY, "run", 10_000).may_run
    finished = queue.store.finish(KEY, "run", Result.ERROR, backoff_base_ms=5000, backoff_max_ms=5000)
    assert finished.countdown == 5.0
    queue.reserve(KEY.kind, KEY.namespace, KEY.name, "never-heard-of")  # an unknown worker counts as dead
    assert queue.sweep() == 1
    resent_key, countdown = sender.sent[-1]
    assert resent_key == KEY
    assert 4.0 < countdown <= 5.0  # the backoff is not cut short


def test_a_live_workers_messages_are_left_alone(client, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    queue = ReconcileQueue(QueueStore(client), replace(CONF, resend_after=10.0), sender, reconcilers)
    enqueue(queue)
    queue.heartbeat("w1")
    queue.reserve(KEY.kind, KEY.namespace, KEY.name, "w1")
    for _ in range(3):
        time.sleep(CONF.worker_timeout / 2)
        queue.heartbeat("w1")
        assert queue.sweep() == 0
    assert sender.sent == [(KEY, 0.0)]


def test_a_claimed_message_is_no_longer_held_so_its_workers_death_resends_nothing(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    queue.reserve(KEY.kind, KEY.namespace, KEY.name, "w1")
    assert process(queue) == "success"
    enqueue(queue)  # pending again; its new message is in the broker, not inside the dead w1
    assert queue.sweep() == 0
    assert sender.sent == [(KEY, 0.0), (KEY, 0.0)]


def test_a_dead_workers_message_of_a_key_that_is_no_longer_pending_is_dropped(queue, sender, reconcilers):
    reconcilers.register("Widget", lambda ns, name: None)
    enqueue(queue)
    queue.reserve(KEY.kind, KEY.namespace, KEY.name, "w2")  # a duplicate, received by w2 which then dies
    claim_and_die(queue)  # meanwhile another worker claimed the key's own message
    queue.reserve(KEY.kind, KEY.namespace, KEY.name, "w2")
    assert queue.sweep() == 0  # running, lease alive: nothing to resend


def test_everything_a_reconciler_logs_names_its_controller_and_key(queue, reconcilers):
    seen: list[LogContext] = []
    reconcilers.register("Widget", lambda ns, name: seen.append(current_log_context()))
    enqueue(queue)
    process(queue)
    assert seen == [LogContext(controller="widget", key="team-a/w1")]


# --- Metrics ---------------------------------------------------------------------------------------------


def test_runs_are_counted_under_controller_runtime_names(queue, sender, reconcilers):
    results = iter([fail, lambda ns, name: None])
    reconcilers.register("Widget", lambda ns, name: next(results)(ns, name))
    before = {
        "adds": sample("workqueue_adds_total", name="widget"),
        "errors": sample("controller_runtime_reconcile_errors_total", controller="widget"),
        "ok": sample("controller_runtime_reconcile_total", controller="widget", result="success"),
        "retries": sample("workqueue_retries_total", name="widget"),
        "timed": sample("controller_runtime_reconcile_time_seconds_count", controller="widget"),
    }
    enqueue(queue)
    enqueue(queue)
    process(queue)
    run_when_due(queue, sender)

    assert sample("workqueue_adds_total", name="widget") == before["adds"] + 1
    assert sample("controller_runtime_reconcile_errors_total", controller="widget") == before["errors"] + 1
    assert (
        sample("controller_runtime_reconcile_total", controller="widget", result="success")
        == before["ok"] + 1
    )
    assert sample("workqueue_retries_total", name="widget") == before["retries"] + 1
    assert (
        sample("controller_runtime_reconcile_time_seconds_count", controller="widget") == before["timed"] + 2
    )
    assert sample("workqueue_depth", name="widget") == 0


# --- Keys, registry, settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "field"),
    [
        ("", "a", "b", "kind"),
        ("Bad Kind", "a", "b", "kind"),
        ("TFJob.", "a", "b", "kind"),
        ("TFJob.Kubeflow.org", "a", "b", "kind"),
        ("K", "a/b", "c", "namespace"),
        ("K", "a", "", "name"),
    ],
)
def test_a_bad_key_is_refused_naming_the_field(kind, namespace, name, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        ObjectKey(kind, namespace, name)


def test_a_kind_may_name_its_group_so_one_kind_of_two_groups_has_two_queues():
    key = ObjectKey("TFJob.kubeflow.org", "ml", "mnist")
    assert (str(key), key.controller) == ("TFJob.kubeflow.org/ml/mnist", "tfjob.kubeflow.org")


def test_a_cluster_scoped_key_round_trips_through_its_member():
    key = ObjectKey("Node", "", "node-1")
    assert ObjectKey.from_member("Node", key.member) == key


def test_a_kind_cannot_get_a_second_reconciler(reconcilers):
    def first(namespace: str, name: str) -> None: ...

    reconcilers.register("Widget", first)
    reconcilers.register("Widget", first)
    with pytest.raises(ValueError, match="already reconciled by"):
        reconcilers.register("Widget", lambda ns, name: None)


def test_looking_up_an_unknown_kind_says_how_to_register_it(reconcilers):
    with pytest.raises(LookupError, match=r"kind 'Gadget'.*controllers\.py \(kube\.controller\.registry\)"):
        reconcilers.lookup("Gadget")


def test_a_bad_queue_setting_stops_start_up_naming_it(settings):
    settings.KUBE_QUEUE_LEASE_SECONDS = "soon"
    with pytest.raises(ImproperlyConfigured, match="KUBE_QUEUE_LEASE_SECONDS"):
        queue_conf_from_settings()


def test_a_backoff_cap_beyond_the_broker_visibility_timeout_is_refused(settings):
    settings.KUBE_QUEUE_BACKOFF_MAX_SECONDS = settings.CELERY_VISIBILITY_TIMEOUT
    with pytest.raises(ImproperlyConfigured, match="CELERY_VISIBILITY_TIMEOUT"):
        queue_conf_from_settings()


def test_the_defaults_are_client_gos_backoff():
    conf = queue_conf_from_settings()
    assert (conf.backoff_base, conf.backoff_max) == (0.005, 1000.0)
