"""Culling against the simulator: object ages from the simulator's clock, `now` injected into the decision."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kube.client import get_client
from kubesim.simulator import Simulator
from tensorboard import actions, tasks
from tensorboard.conf import TensorboardConf

from .cluster import event_reasons, tensorboard
from .conftest import T0
from .workflows import NAMESPACE


def create(sim: Simulator, name: str, *, opened: str | None = None, idle_timeout: str | None = None) -> None:
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    if opened:
        metadata["annotations"] = {"argoml.io/last-access": opened}
    spec: dict[str, Any] = {"logdirs": [{"name": "a", "path": "s3://ml/a"}]}
    if idle_timeout:
        spec["idleTimeout"] = idle_timeout
    sim.store.create(
        {"apiVersion": "argoml.io/v1alpha1", "kind": "Tensorboard", "metadata": metadata, "spec": spec}
    )


def test_instances_idle_longer_than_their_timeout_are_deleted_and_the_others_kept(sim):
    create(sim, "never-opened")
    create(sim, "opened-lately", opened="2025-03-01T10:30:00Z")
    create(sim, "short-timeout", opened="2025-03-01T10:30:00Z", idle_timeout="30m")
    now = T0 + timedelta(hours=2, minutes=5)

    culled = actions.cull_idle(get_client(), TensorboardConf(), now)

    assert sorted(culled) == [f"{NAMESPACE}/never-opened", f"{NAMESPACE}/short-timeout"]
    assert tensorboard(sim, "never-opened", NAMESPACE) is None
    assert tensorboard(sim, "opened-lately", NAMESPACE) is not None
    assert event_reasons(sim, NAMESPACE, "never-opened") == ["IdleTimeout"]


def test_nothing_is_culled_before_its_time_and_a_later_run_catches_up(sim):
    create(sim, "fresh")
    assert actions.cull_idle(get_client(), TensorboardConf(), T0 + timedelta(hours=1)) == []
    sim.advance(3 * 3600)  # time passes in the cluster; the instance stays unopened
    assert actions.cull_idle(get_client(), TensorboardConf(), sim.clock.now()) == [f"{NAMESPACE}/fresh"]


def test_the_beat_task_culls_with_the_settings_default_timeout(sim, settings):
    settings.TENSORBOARD_IDLE_TIMEOUT_SECONDS = 3600
    create(sim, "ancient")  # created at T0, long before the real now the task uses
    assert tasks.cull_idle() == [f"{NAMESPACE}/ancient"]
