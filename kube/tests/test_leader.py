"""Leader election on a Lease in kubesim, with timings short enough for tests (1.5 s lease)."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

import pytest

from kube.controller.leader import LeaderElector, LeaseConfig
from kube.errors import ServerError
from kube.resources import LEASE
from kube.tests.controller_harness import client_for
from kube.tests.queue_harness import wait_for
from kubesim.testing import running_simulator

LEASE_DURATION = 1.5
RENEW_DEADLINE = 1.0
RETRY_PERIOD = 0.15
SCHEDULING_SLACK = 0.5  # threads of a loaded 2-core machine wake up late


@pytest.fixture(scope="module")
def sim():
    with running_simulator() as simulator:
        yield simulator


class Partitionable:
    """The real client, until `cut()`: then every call fails, or with `hang=True` blocks until `heal()`."""

    def __init__(self, client) -> None:
        self._client = client
        self._cut = False
        self._hang = False
        self._healed = threading.Event()

    def cut(self, *, hang: bool = False) -> None:
        self._healed.clear()
        self._cut, self._hang = True, hang

    def heal(self) -> None:
        self._cut = False
        self._healed.set()

    def _call(self, verb: str, *args, **kwargs):
        if self._cut:
            if self._hang:
                self._healed.wait(30)
            else:
                raise ServerError("partitioned from the API server", status=0)
        return getattr(self._client, verb)(*args, **kwargs)

    def get(self, *args, **kwargs):
        return self._call("get", *args, **kwargs)

    def create(self, *args, **kwargs):
        return self._call("create", *args, **kwargs)

    def replace(self, *args, **kwargs):
        return self._call("replace", *args, **kwargs)


@dataclass
class Candidate:
    """An elector on its own thread that notes when it started and stopped leading (monotonic times)."""

    name: str
    client: Partitionable
    lease_name: str
    started: list[float] = field(default_factory=list)
    stopped: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        config = LeaseConfig(
            "default", self.lease_name, self.name, LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD
        )
        self.elector = LeaderElector(
            self.client,  # type: ignore[arg-type]
            config,
            on_started=lambda: self.started.append(time.monotonic()),
            on_stopped=lambda: self.stopped.append(time.monotonic()),
        )
        self.thread = threading.Thread(target=self.elector.run, daemon=True)

    def start(self) -> Candidate:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.elector.stop()
        self.thread.join(5)

    @property
    def leading(self) -> bool:
        """Leading as the callbacks said: the elector sets its flag just before calling on_started."""
        return len(self.started) > len(self.stopped)


_leases = itertools.count()


@pytest.fixture
def candidates(sim):
    """Candidates for a Lease of the test's own."""
    made: list[Candidate] = []
    lease_name = f"lease-{next(_leases)}"

    def make(count: int) -> list[Candidate]:
        for index in range(count):
            client = Partitionable(client_for(sim.kubeconfig_path, request_timeout=2))
            made.append(Candidate(f"candidate-{index}", client, lease_name).start())
        return made

    yield make
    for candidate in made:
        candidate.client.heal()
        candidate.stop()


def leader_of(candidates: list[Candidate]) -> Candidate:
    wait_for(lambda: any(c.leading for c in candidates), 5, "a leader")
    return next(c for c in candidates if c.leading)


def test_of_two_candidates_exactly_one_leads(candidates):
    both = candidates(2)
    leader_of(both)
    deadline = time.monotonic() + 3 * LEASE_DURATION
    while time.monotonic() < deadline:
        assert sum(c.leading for c in both) <= 1
        time.sleep(0.01)
    assert sum(len(c.started) for c in both) == 1  # the leader kept renewing; nobody else ever started


def test_the_lease_records_its_holder_like_client_go(sim, candidates):
    leader = leader_of(candidates(1))
    client = client_for(sim.kubeconfig_path)
    first = client.get(LEASE, leader.lease_name, "default")["spec"]
    time.sleep(3 * RETRY_PERIOD)
    renewed = client.get(LEASE, leader.lease_name, "default")["spec"]

    assert first["holderIdentity"] == renewed["holderIdentity"] == leader.name
    assert renewed["leaseDurationSeconds"] == 2  # 1.5 s rounded up, never down
    assert renewed["acquireTime"] == first["acquireTime"]
    assert renewed["renewTime"] > first["renewTime"]
    assert renewed["leaseTransitions"] == 0


def test_a_leader_that_stops_releases_the_lease_and_another_takes_over_at_once(candidates):
    both = candidates(2)
    leader = leader_of(both)
    other = next(c for c in both if c is not leader)
    leader.stop()
    stopped = leader.stopped[-1]

    wait_for(lambda: other.leading, 1, "the other candidate to lead")
    assert other.started[-1] - stopped < LEASE_DURATION / 2


@pytest.mark.parametrize("hang", [False, True], ids=["failing calls", "calls stuck on the network"])
def test_a_cut_off_leader_steps_down_before_another_takes_over(candidates, hang):
    both = candidates(2)
    leader = leader_of(both)
    other = next(c for c in both if c is not leader)
    cut_at = time.monotonic()
    leader.client.cut(hang=hang)

    wait_for(lambda: other.leading, 3 * LEASE_DURATION, "the other candidate to lead")
    stepped_down = leader.stopped[-1]
    took_over = other.started[-1]
    # The leader stops by its renew deadline, even while a renewal hangs; the other waits a lease duration
    # from when it first saw the last renewal (up to a retry period late) and takes over at its next try.
    assert stepped_down - cut_at <= RENEW_DEADLINE + SCHEDULING_SLACK
    assert stepped_down < took_over
    assert took_over - cut_at <= LEASE_DURATION + 3 * RETRY_PERIOD + SCHEDULING_SLACK
    assert not leader.leading


def test_a_leader_that_lost_the_lease_campaigns_again(candidates):
    both = candidates(2)
    leader = leader_of(both)
    other = next(c for c in both if c is not leader)
    leader.client.cut()
    wait_for(lambda: other.leading, 3 * LEASE_DURATION, "the other candidate to lead")
    leader.client.heal()
    other.stop()  # releases: the first leader takes the Lease back

    wait_for(lambda: leader.leading, 1, "the first candidate to lead again")
    assert len(leader.started) == 2


def test_lease_timings_must_leave_a_safety_margin():
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaseConfig("default", "x", "me", lease_duration=10, renew_deadline=10, retry_period=2)
