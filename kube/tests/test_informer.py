"""The informer against kubesim over real HTTP: paged list, watch, resume, relist on 410, the watchdog."""

from __future__ import annotations

import random
import threading
import time

import pytest

from kube.controller.informer import Informer, strip_bookkeeping
from kube.resources import CONFIGMAP
from kube.tests.controller_harness import (
    NAMESPACE,
    Recorder,
    cached_state,
    client_for,
    configmap,
    running,
    server_state,
)
from kube.tests.queue_harness import wait_for
from kubesim.testing import running_simulator


@pytest.fixture
def sim():
    with running_simulator() as simulator:
        yield simulator


@pytest.fixture
def client(sim):
    return client_for(sim.kubeconfig_path)


def informer_for(client, recorder, **options) -> Informer:
    options.setdefault("watch_timeout_seconds", 1)  # streams cycle often, so faults reach new watches
    return Informer(client, CONFIGMAP, recorder, namespace=NAMESPACE, **options)


def test_it_lists_in_pages_then_watches_and_reports_every_change(sim, client):
    for index in range(12):
        client.create(CONFIGMAP, configmap(f"cm-{index}", {"v": "0"}))
    recorder = Recorder()
    with running(informer_for(client, recorder, page_size=5)) as informer:
        assert informer.synced.wait(5)
        assert sim.counters.count(verb="list", resource="configmaps") == 3
        client.patch(CONFIGMAP, "cm-1", {"data": {"v": "1"}}, NAMESPACE)
        client.delete(CONFIGMAP, "cm-2", NAMESPACE)
        client.create(CONFIGMAP, configmap("cm-new"))
        wait_for(lambda: len(recorder.events) == 15, 5, "the three watch events")

        assert [event[:2] for event in recorder.events[12:]] == [
            ("MODIFIED", "cm-1"),
            ("DELETED", "cm-2"),
            ("ADDED", "cm-new"),
        ]
        assert cached_state(informer) == server_state(client, CONFIGMAP)


class ChangesBetweenPages:
    """The real client, except that a ConfigMap is updated right after the first page of a list."""

    def __init__(self, client, name: str) -> None:
        self._client = client
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(self._client, attribute)

    def list_pages(self, *args, **kwargs):
        for number, page in enumerate(self._client.list_pages(*args, **kwargs)):
            yield page
            if number == 0:
                self._client.patch(CONFIGMAP, self._name, {"data": {"v": "changed"}}, NAMESPACE)


def test_a_change_made_while_the_list_is_paged_is_not_lost(client):
    for index in range(10):
        client.create(CONFIGMAP, configmap(f"paged-{index}", {"v": "0"}))
    recorder = Recorder()
    informer = informer_for(ChangesBetweenPages(client, "paged-0"), recorder, page_size=5)
    with running(informer):
        assert informer.synced.wait(5)  # the list, and the change between its pages, are done
        expected = server_state(client, CONFIGMAP)
        wait_for(lambda: recorder.believed_state() == expected, 5, "the change to reach the handler")
        assert informer.get(NAMESPACE, "paged-0")["data"] == {"v": "changed"}


class Writer:
    """Creates, updates and deletes ConfigMaps on a thread until stopped; remembers every name it touched."""

    def __init__(self, client, seed: int) -> None:
        self.client = client
        self.random = random.Random(seed)  # noqa: S311 - a reproducible workload
        self.touched: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        live: set[str] = set()
        serial = 0
        while not self._stop.is_set():
            action = self.random.random()
            if action < 0.4 or not live:
                serial += 1
                name = f"w-{serial}"
                self.client.create(CONFIGMAP, configmap(name, {"v": "0"}))
                live.add(name)
            elif action < 0.8:
                name = self.random.choice(sorted(live))
                self.client.patch(CONFIGMAP, name, {"data": {"v": str(serial)}}, NAMESPACE)
            else:
                name = self.random.choice(sorted(live))
                self.client.delete(CONFIGMAP, name, NAMESPACE)
                live.discard(name)
            self.touched.add(name)
            time.sleep(0.005)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


# Each fault hits the next few watches: the informer restarts a watch every 1-2 s (watch_timeout_seconds=1).
FAULTS = {
    "dropped streams": lambda faults: faults.drop_watch(after_events=3, times=6),
    "410 expired": lambda faults: faults.expire_watch(times=3),
    "429 too many requests": lambda faults: faults.fail(429, verb="watch", times=4, retry_after=0),
    "500 server error": lambda faults: faults.fail(500, verb="watch", times=4),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_under_watch_faults_the_cache_converges_and_no_key_is_missed(sim, client, fault):
    for index in range(20):
        client.create(CONFIGMAP, configmap(f"pre-{index}", {"v": "0"}))
    recorder = Recorder()
    with running(informer_for(client, recorder, page_size=7)) as informer:
        assert informer.synced.wait(5)
        FAULTS[fault](sim.faults)
        with Writer(client, seed=len(fault)) as writer:
            wait_for(lambda: not sim.faults.active(), 15, "every injected fault to fire")
            time.sleep(1.0)
        expected = server_state(client, CONFIGMAP)
        wait_for(lambda: recorder.believed_state() == expected, 10, "the handler to converge")

        assert cached_state(informer) == expected
        if fault == "410 expired":
            # Events while a watch is expired are gone for good; the relist diff still reports every object
            # that changed, and the handler's view equals the server's (asserted above).
            assert sim.counters.count(verb="list", resource="configmaps") >= 2
        else:
            assert writer.touched <= recorder.seen()
        assert len(writer.touched) > 30


def test_the_watchdog_restarts_a_silent_watch():
    recorder = Recorder()
    # Without bookmarks a quiet watch sends nothing at all: only the watchdog ends it.
    with running_simulator(bookmark_interval=3600) as quiet:
        client = client_for(quiet.kubeconfig_path)
        informer = informer_for(client, recorder, watch_timeout_seconds=3600, silence_timeout_seconds=0.3)
        with running(informer):
            wait_for(lambda: informer.watches >= 4, 5, "the silent watch to be restarted three times")
            client.create(CONFIGMAP, configmap("after-silence"))
            wait_for(lambda: "after-silence" in recorder.seen(), 5, "an event on the restarted watch")
        assert informer.relists == 1  # each restart resumed from its resourceVersion


def test_stop_ends_a_blocked_watch_at_once(client):
    informer = informer_for(client, Recorder(), watch_timeout_seconds=3600)
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    assert informer.synced.wait(5)
    wait_for(lambda: informer.watches == 1, 5, "the watch to start")
    started = time.monotonic()
    informer.stop()
    thread.join(2)
    assert not thread.is_alive()
    assert time.monotonic() - started < 1


def test_bookkeeping_fields_are_not_cached():
    obj = {
        "metadata": {
            "name": "x",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"},
        }
    }
    assert strip_bookkeeping(obj) == {"metadata": {"name": "x", "annotations": {"keep": "me"}}}


def labelled(name: str, owner: str | None, resource_version: str) -> dict:
    labels = {"owner": owner} if owner else {}
    return {
        "metadata": {
            "namespace": NAMESPACE,
            "name": name,
            "labels": labels,
            "resourceVersion": resource_version,
        }
    }


def by_owner(obj: dict) -> list[str]:
    owner = obj["metadata"]["labels"].get("owner")
    return [owner] if owner else []


def names(objects: list[dict]) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in objects)


def test_an_index_follows_every_event_without_scanning_the_cache():
    informer = Informer(None, CONFIGMAP, lambda *event: None, indexers={"owner": by_owner})  # type: ignore[arg-type]
    assert informer.by_index("owner", "a") == []  # before any list or event

    informer.apply({"type": "ADDED", "object": labelled("x", "a", "1")})
    informer.apply({"type": "ADDED", "object": labelled("y", "a", "2")})
    informer.apply({"type": "ADDED", "object": labelled("z", None, "3")})
    assert names(informer.by_index("owner", "a")) == ["x", "y"]

    informer.apply({"type": "MODIFIED", "object": labelled("y", "b", "4")})  # moves to another owner
    assert names(informer.by_index("owner", "a")) == ["x"]
    assert names(informer.by_index("owner", "b")) == ["y"]
    assert informer.by_index("owner", "b")[0]["metadata"]["resourceVersion"] == "4"

    informer.apply({"type": "DELETED", "object": labelled("x", "a", "5")})
    assert informer.by_index("owner", "a") == []
    with pytest.raises(KeyError, match="'size' is not one of this informer's indexes"):
        informer.by_index("size", 1)


def test_a_relist_rebuilds_the_indexes_and_tells_whoever_waits_on_the_cache(client):
    relists = []
    informer = Informer(
        client, CONFIGMAP, lambda *event: None, namespace=NAMESPACE, indexers={"owner": by_owner},
        on_relist=lambda: relists.append(len(informer)),
    )  # fmt: skip
    informer.apply({"type": "ADDED", "object": labelled("gone", "a", "1")})
    client.create(
        CONFIGMAP, {**configmap("kept", {"v": "0"}), "metadata": {"name": "kept", "labels": {"owner": "a"}}}
    )

    informer.relist()

    assert names(informer.by_index("owner", "a")) == ["kept"]
    assert relists == [1]
