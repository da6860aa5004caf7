"""The injectable clock: timestamps, ages and token expiry move only when the test says so."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import requests
from kubernetes import client, config
from kubernetes.client import ApiException

from kubesim.clock import Clock

START = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture
def frozen(kubesim_factory):
    return kubesim_factory(frozen_clock=True, start_time=START)


def core_for(simulator) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(simulator.kubeconfig_path)))


def test_creation_timestamps_come_from_the_clock(frozen) -> None:
    created = core_for(frozen).create_namespaced_config_map("default", {"metadata": {"name": "t"}})
    assert created.metadata.creation_timestamp == START
    frozen.clock.advance(90)
    later = core_for(frozen).create_namespaced_config_map("default", {"metadata": {"name": "u"}})
    assert (later.metadata.creation_timestamp - START).total_seconds() == 90


def test_deletion_timestamps_come_from_the_clock(frozen) -> None:
    core = core_for(frozen)
    core.create_namespaced_config_map("default", {"metadata": {"name": "f", "finalizers": ["x.example/y"]}})
    frozen.clock.advance(3600)
    core.delete_namespaced_config_map("f", "default")
    assert (
        core.read_namespaced_config_map("f", "default").metadata.deletion_timestamp - START
    ).total_seconds() == 3600


def test_table_ages_follow_the_clock(frozen) -> None:
    core_for(frozen).create_namespaced_config_map("default", {"metadata": {"name": "aged"}})
    frozen.clock.advance(3 * 3600 + 600)
    table = requests.get(
        f"{frozen.url}/api/v1/namespaces/default/configmaps", headers={"Accept": TABLE}, timeout=5
    ).json()
    assert table["rows"][0]["cells"][-1] == "3h10m"


def test_continue_tokens_expire_after_five_minutes_of_simulated_time(frozen) -> None:
    core = core_for(frozen)
    for index in range(3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"p{index}"}})
    token = core.list_namespaced_config_map("default", limit=1).metadata._continue
    frozen.clock.advance(299)
    assert core.list_namespaced_config_map("default", limit=1, _continue=token).items
    frozen.clock.advance(2)
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("default", limit=1, _continue=token)
    assert caught.value.status == 410


def test_timers_fire_in_order_when_the_clock_is_advanced() -> None:
    clock = Clock(START, frozen=True)
    fired: list[str] = []
    clock.call_later(10, lambda: fired.append("ten"))
    clock.call_later(5, lambda: fired.append("five"))
    cancelled = clock.call_later(7, lambda: fired.append("cancelled"))
    cancelled.cancel()
    clock.advance(6)
    assert fired == ["five"]
    clock.advance(4)
    assert fired == ["five", "ten"]
    assert clock.now() == datetime(2030, 1, 1, 12, 0, 10, tzinfo=UTC)


def test_a_real_time_clock_fires_timers_by_itself() -> None:
    clock = Clock()
    fired = []
    clock.call_later(0.05, lambda: fired.append(True))
    deadline = clock.time() + 3
    while not fired and clock.time() < deadline:
        pass
    clock.close()
    assert fired


def test_advancing_backwards_is_refused() -> None:
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        Clock(frozen=True).advance(-1)
