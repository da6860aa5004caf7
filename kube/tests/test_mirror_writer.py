"""The mirror's writer thread: events queued while it writes or within its linger share the next batch,
each model's events go to `apply_events` together and in order, a failing event is logged and never stops
the others."""

from __future__ import annotations

import threading
import time

import pytest

from kube.controller.mirror import mirror_handler
from kube.controller.mirror import writer as mirror_writer
from kube.controller.mirror.writer import MirrorWriter, Pending
from kube.tests.test_mirror import mirrorapp, widget

__all__ = ["mirrorapp"]  # the fixture, shared with test_mirror


def pending(mirror, event_type: str, obj: dict) -> Pending:
    return Pending(mirror, event_type, obj, "widget", f"team-a/{obj['metadata']['name']}")


def run_until_idle(writer: MirrorWriter) -> None:
    thread = threading.Thread(target=writer.run)
    thread.start()
    try:
        assert writer.wait_idle(30)
    finally:
        writer.stop()
        thread.join(30)


def test_the_limits_must_make_sense():
    with pytest.raises(ValueError, match="max_batch: 0 must be at least 1"):
        MirrorWriter(max_batch=0)
    with pytest.raises(ValueError, match=r"max_pending: 5 must be at least max_batch \(10\)"):
        MirrorWriter(max_batch=10, max_pending=5)
    with pytest.raises(ValueError, match=r"linger: -0\.1 must be at least 0"):
        MirrorWriter(linger=-0.1)


def test_events_arriving_within_the_linger_share_one_batch_and_a_lone_one_waits_no_longer():
    batches: list[list[str]] = []
    writer = MirrorWriter(linger=0.5)
    writer.write = lambda batch: batches.append([p.obj["metadata"]["resourceVersion"] for p in batch])
    thread = threading.Thread(target=writer.run)
    thread.start()
    try:
        writer.put(pending(lambda t, o: None, "ADDED", widget("1")))
        time.sleep(0.1)  # well within the linger: the writer is still gathering
        writer.put(pending(lambda t, o: None, "MODIFIED", widget("2")))
        assert writer.wait_idle(5)
        writer.put(pending(lambda t, o: None, "MODIFIED", widget("3")))
        began = time.monotonic()
        assert writer.wait_idle(5)
        alone_after = time.monotonic() - began
    finally:
        writer.stop()
        thread.join(30)
    assert batches == [["1", "2"], ["3"]]
    assert 0.3 < alone_after < 2.0  # the linger, then at once


def test_a_full_batch_is_written_without_waiting_out_the_linger():
    batches: list[int] = []
    writer = MirrorWriter(max_batch=3, max_pending=10, linger=30)
    writer.write = lambda batch: batches.append(len(batch))
    for version in range(1, 4):
        writer.put(pending(lambda t, o: None, "MODIFIED", widget(str(version))))
    run_until_idle(writer)  # waits at most 30 s: a linger waited out would fail it
    assert batches == [3]


@pytest.mark.django_db(transaction=True)
def test_events_queued_meanwhile_are_written_in_batches_of_at_most_max_batch(mirrorapp, monkeypatch):
    Widget, History = mirrorapp
    batches: list[list[tuple[str, str]]] = []
    real_apply = mirror_writer.apply_events

    def recording(model, events, **kwargs):
        batches.append([(event_type, obj["metadata"]["resourceVersion"]) for event_type, obj in events])
        return real_apply(model, events, **kwargs)

    monkeypatch.setattr(mirror_writer, "apply_events", recording)
    writer = MirrorWriter(max_batch=3, max_pending=10)
    handler = mirror_handler(Widget)
    writer.put(pending(handler, "ADDED", widget("1", phase="Pending")))
    for version in range(2, 8):
        writer.put(pending(handler, "MODIFIED", widget(str(version), phase=f"P{version}")))
    run_until_idle(writer)
    assert batches == [
        [("ADDED", "1"), ("MODIFIED", "2"), ("MODIFIED", "3")],
        [("MODIFIED", "4"), ("MODIFIED", "5"), ("MODIFIED", "6")],
        [("MODIFIED", "7")],
    ]
    assert (writer.batches, writer.written, writer.failed) == (3, 7, 0)
    assert Widget.objects.get().phase == "P7"
    assert list(History.objects.order_by("pk").values_list("resource_version", flat=True)) == list("1234567")


@pytest.mark.django_db(transaction=True)
def test_a_failing_event_is_logged_under_its_key_and_the_others_are_written(mirrorapp, caplog):
    Widget, _ = mirrorapp
    seen: list[str] = []

    def fussy(event_type: str, obj: dict) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("no thanks")

    no_uid = widget("1", name="anonymous")
    del no_uid["metadata"]["uid"]
    writer = MirrorWriter()
    handler = mirror_handler(Widget)
    for event in (
        pending(fussy, "ADDED", widget("1", name="bad")),
        pending(handler, "ADDED", no_uid),
        pending(fussy, "ADDED", widget("1", name="good")),
        pending(handler, "ADDED", widget("1", uid="u2", name="kept")),
    ):
        writer.put(event)
    run_until_idle(writer)
    assert seen == ["bad", "good"]
    assert list(Widget.objects.values_list("name", flat=True)) == ["kept"]
    assert writer.failed == 2
    failures = [r.getMessage() for r in caplog.records if r.name == "kube.mirror.writer"]
    assert failures == [
        "mirroring a ADDED event failed: no thanks [controller=widget key=team-a/bad]",
        "mirroring a ADDED event failed: metadata.uid is missing: a Widget cannot be mirrored without it"
        " [controller=widget key=team-a/anonymous]",
    ]


def test_once_stopped_queued_and_new_events_are_dropped():
    written: list[str] = []
    writer = MirrorWriter()
    writer.put(pending(lambda t, o: written.append(t), "ADDED", widget("1")))
    writer.stop()
    writer.put(pending(lambda t, o: written.append(t), "MODIFIED", widget("2")))
    writer.run()  # returns at once
    assert (written, writer.waiting) == ([], 0)


def test_a_handler_mirrors_one_event_at_once_outside_the_writer(mirrorapp, db):
    Widget, _ = mirrorapp
    mirror_handler(Widget)("ADDED", widget("1"))
    assert Widget.objects.get().resource_version == "1"


class Outage(MirrorWriter):
    """A writer whose thread reaches the database only once `back` is set: until then its connection points
    at a closed port, so every query is refused, as when PostgreSQL is down (other threads are unaffected)."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.back = threading.Event()
        self.refused = threading.Event()

    def write(self, batch: list[Pending]) -> list[Pending]:
        from django.db import connection

        closed_port = "1"
        if not self.back.is_set() and connection.settings_dict["PORT"] != closed_port:
            connection.close()
            self._real = connection.settings_dict
            connection.settings_dict = {**connection.settings_dict, "PORT": closed_port}
        elif self.back.is_set() and connection.settings_dict["PORT"] == closed_port:
            connection.close()
            connection.settings_dict = self._real
        unwritten = super().write(batch)
        if unwritten:
            self.refused.set()
        return unwritten


@pytest.mark.django_db(transaction=True)
def test_events_refused_while_the_database_is_unreachable_are_all_written_once_it_is_back(mirrorapp):
    Widget, History = mirrorapp
    writer = Outage(max_batch=2)
    handler = mirror_handler(Widget)
    for version, phase in ((1, "Pending"), (2, "Running"), (3, "Succeeded")):
        writer.put(
            pending(handler, "ADDED" if version == 1 else "MODIFIED", widget(str(version), phase=phase))
        )
    thread = threading.Thread(target=writer.run)
    thread.start()
    try:
        assert writer.refused.wait(10)
        time.sleep(1.0)  # two tries more, backing off
        assert writer.failed == 0
        assert not Widget.objects.exists()
        writer.back.set()
        assert writer.wait_idle(15)
    finally:
        writer.stop()
        thread.join(30)
    assert Widget.objects.get().phase == "Succeeded"
    assert list(History.objects.order_by("pk").values_list("resource_version", flat=True)) == ["1", "2", "3"]
    assert writer.failed == 0
    assert writer.retried >= 2


@pytest.mark.django_db(transaction=True)
def test_an_event_the_database_keeps_refusing_while_it_answers_is_logged_after_a_few_tries(
    mirrorapp, monkeypatch, caplog
):
    from django.db import OperationalError

    Widget, _ = mirrorapp
    calls: list[int] = []

    def refusing(model, events, **kwargs):
        calls.append(len(events))
        return [OperationalError("canceling statement due to statement timeout")] * len(events)

    monkeypatch.setattr(mirror_writer, "apply_events", refusing)
    writer = MirrorWriter()
    writer.put(pending(mirror_handler(Widget), "ADDED", widget("1")))
    run_until_idle(writer)
    assert len(calls) == mirror_writer.MAX_TRIES_WHILE_ANSWERING
    assert writer.failed == 1
    assert "statement timeout" in caplog.text
