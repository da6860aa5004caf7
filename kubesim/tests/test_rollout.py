"""The Deployment and ReplicaSet controllers' decisions (kubesim.kubelet.rollout, .replicasets), with no
cluster: each case is an upstream controller's rule (pkg/controller/deployment, .../replicaset)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesim.kubelet import progress, replicasets, rollout
from kubesim.kubelet.rollout import Rollout

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
STAMP = "2026-01-01T12:00:00Z"


def deployment(replicas: int = 4, **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {})
    annotations = spec.pop("annotations", {})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "uid": "d-1",
            "generation": 1,
            "annotations": annotations,
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]},
            },
            "progressDeadlineSeconds": 600,
            **spec,
        },
        "status": status,
    }


def replica_set(
    name: str,
    size: int,
    *,
    available: int | None = None,
    created: str = STAMP,
    revision: int = 1,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    count = size if available is None else available
    return {
        "metadata": {
            "name": name,
            "uid": name,
            "creationTimestamp": created,
            "generation": 1,
            "annotations": {rollout.REVISION: str(revision), **(annotations or {})},
        },
        "spec": {"replicas": size},
        "status": {
            "replicas": size,
            "readyReplicas": count,
            "availableReplicas": count,
            "observedGeneration": 1,
        },
    }


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    found = progress.get_condition(status, kind)
    assert found is not None, f"no {kind} condition in {status}"
    return found


def strategy(surge: Any, unavailable: Any) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}


# --- parsing -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "up", "expected"),
    [
        (3, 10, True, 3),
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("0%", 7, True, 0),
        ("100%", 3, False, 3),
    ],
)
def test_int_or_percent_is_scaled_as_intstr_does(value: Any, total: int, up: bool, expected: int) -> None:
    assert rollout.scaled_value(value, total, round_up=up) == expected


def test_surge_rounds_up_and_unavailability_down() -> None:
    plan = Rollout.parse(deployment(10, strategy=strategy("25%", "25%")))
    assert (plan.max_surge, plan.max_unavailable) == (3, 2)


def test_a_rollout_that_could_not_move_may_lose_one_pod() -> None:
    """ResolveFenceposts: 'if both are 0, maxUnavailable is 1' (a 0%/0% rollout on 3 replicas)."""
    plan = Rollout.parse(deployment(3, strategy=strategy("0%", "0%")))
    assert (plan.max_surge, plan.max_unavailable) == (0, 1)


def test_recreate_neither_surges_nor_counts_unavailability() -> None:
    plan = Rollout.parse(deployment(3, strategy={"type": "Recreate"}))
    assert (plan.rolling, plan.max_surge, plan.max_unavailable) == (False, 0, 0)


def test_the_max_int32_deadline_means_none() -> None:
    assert Rollout.parse(deployment(progressDeadlineSeconds=2**31 - 1)).progress_deadline is None
    assert Rollout.parse(deployment(progressDeadlineSeconds=30)).progress_deadline == 30


# --- the new ReplicaSet ------------------------------------------------------------------------------------


def test_the_new_replica_set_carries_the_hash_in_name_labels_and_selector() -> None:
    owner = {"kind": "Deployment", "uid": "d-1", "controller": True}
    made = rollout.new_replica_set(deployment(), owner)
    pod_hash = made["spec"]["template"]["metadata"]["labels"][rollout.POD_TEMPLATE_HASH]
    assert made["metadata"]["name"] == f"web-{pod_hash}"
    assert made["spec"]["selector"]["matchLabels"] == {"app": "web", rollout.POD_TEMPLATE_HASH: pod_hash}
    assert made["metadata"]["labels"] == {"app": "web", rollout.POD_TEMPLATE_HASH: pod_hash}
    assert made["metadata"]["ownerReferences"] == [owner]
    assert set(pod_hash) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_a_collision_count_changes_the_hash() -> None:
    template = deployment()["spec"]["template"]
    assert rollout.template_hash(template) != rollout.template_hash(template, 1)


def test_the_new_replica_set_is_the_oldest_with_the_template_ignoring_the_hash() -> None:
    template = deployment()["spec"]["template"]
    labelled = {**template, "metadata": {"labels": {"app": "web", rollout.POD_TEMPLATE_HASH: "x"}}}
    other = {**template, "spec": {"containers": [{"name": "c", "image": "i:2"}]}}
    sets = [
        {**replica_set("c", 1, created="2026-01-01T12:00:03Z"), "spec": {"template": labelled}},
        {**replica_set("b", 1, created="2026-01-01T12:00:02Z"), "spec": {"template": labelled}},
        {**replica_set("a", 1, created="2026-01-01T12:00:01Z"), "spec": {"template": other}},
    ]
    found = rollout.find_new(deployment(), sets)
    assert found is not None
    assert found["metadata"]["name"] == "b"


def test_empty_and_missing_fields_compare_equal() -> None:
    """apiequality.Semantic: an empty map or list equals a missing one."""
    bare = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}
    padded = {
        "metadata": {"labels": {"app": "web"}, "annotations": {}},
        "spec": {"containers": [{"name": "c", "env": []}]},
    }
    assert rollout.equal_ignoring_hash(bare, padded)


def test_a_new_replica_set_takes_the_deployments_annotations_but_the_skipped_ones() -> None:
    owner = deployment(
        3,
        annotations={
            "kubernetes.io/change-cause": "image 2",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            rollout.REVISION: "4",
        },
        strategy=strategy(1, 0),
    )
    annotations = rollout.new_annotations(owner, {"metadata": {}}, 5, exists=False)
    assert annotations == {
        "kubernetes.io/change-cause": "image 2",
        rollout.REVISION: "5",
        rollout.DESIRED_REPLICAS: "3",
        rollout.MAX_REPLICAS: "4",
    }


def test_a_rolled_back_replica_set_keeps_its_old_revisions() -> None:
    older = replica_set("a", 0, revision=1, annotations={rollout.REVISION_HISTORY: "0"})
    annotations = rollout.new_annotations(deployment(), older, 3, exists=True)
    assert annotations[rollout.REVISION] == "3"
    assert annotations[rollout.REVISION_HISTORY] == "0,1"


def test_a_lower_revision_is_never_written() -> None:
    newest = replica_set("a", 1, revision=7)
    assert rollout.new_annotations(deployment(), newest, 3, exists=True)[rollout.REVISION] == "7"


# --- scaling -----------------------------------------------------------------------------------------------


def test_the_new_replica_set_grows_within_the_surge() -> None:
    plan = Rollout.parse(deployment(4, strategy=strategy(1, 0)))
    old, new = replica_set("old", 4), replica_set("new", 0)
    assert rollout.new_rs_replicas(plan, [old, new], new) == 1
    assert (
        rollout.new_rs_replicas(plan, [replica_set("old", 4), replica_set("new", 1)], replica_set("new", 1))
        == 1
    )
    assert (
        rollout.new_rs_replicas(plan, [replica_set("old", 2), replica_set("new", 2)], replica_set("new", 2))
        == 3
    )


def test_recreate_asks_for_every_replica_at_once() -> None:
    plan = Rollout.parse(deployment(4, strategy={"type": "Recreate"}))
    assert rollout.new_rs_replicas(plan, [replica_set("new", 0)], replica_set("new", 0)) == 4


def test_old_replica_sets_shrink_oldest_first_keeping_the_minimum_available() -> None:
    plan = Rollout.parse(deployment(4, strategy=strategy(1, 1)))
    older = replica_set("older", 2, created="2026-01-01T11:00:00Z")
    old = replica_set("old", 2)
    new = replica_set("new", 1, available=1)
    assert rollout.rolling_scale_down(plan, [older, old, new], [old, older]) == {"older": 0}


def test_old_replica_sets_do_not_shrink_below_the_minimum() -> None:
    plan = Rollout.parse(deployment(4, strategy=strategy(1, 1)))
    old, new = replica_set("old", 4), replica_set("new", 1, available=0)
    assert rollout.rolling_scale_down(plan, [old, new], [old]) == {"old": 3}
    assert rollout.old_scale_down_room(plan, [old, new], new) == 1


def test_unavailable_old_pods_go_first() -> None:
    stuck = replica_set("stuck", 3, available=1)
    fine = replica_set("fine", 2)
    assert rollout.unhealthy_cleanup([stuck, fine], 5) == {"stuck": 1}
    assert rollout.unhealthy_cleanup([stuck, fine], 1) == {"stuck": 2}


def test_one_active_replica_set_takes_a_new_size() -> None:
    plan = Rollout.parse(deployment(6))
    sizes, annotate = rollout.proportional_sizes(plan, replica_set("new", 4), [replica_set("old", 0)], 4)
    assert (sizes, annotate) == ({"new": 6}, False)


def test_with_no_active_replica_set_the_new_one_takes_the_size() -> None:
    plan = Rollout.parse(deployment(2))
    sizes, _ = rollout.proportional_sizes(plan, replica_set("new", 0), [replica_set("old", 0)], 0)
    assert sizes == {"new": 2}


def test_a_scale_during_a_rollout_is_shared_in_proportion() -> None:
    """The upstream example: 10 replicas, maxSurge 3, a rollout at old=8/new=5, scaled to 15: the 5 new
    (allowed 18 - 13) are split 8:5 by the size each set was made for (13), the largest set first."""
    plan = Rollout.parse(deployment(15, strategy=strategy(3, 2)))
    made_for = {rollout.MAX_REPLICAS: "13", rollout.DESIRED_REPLICAS: "10"}
    old = replica_set("old", 8, created="2026-01-01T11:00:00Z", annotations=made_for)
    new = replica_set("new", 5, annotations=made_for)
    sizes, annotate = rollout.proportional_sizes(plan, new, [old], 13)
    assert annotate
    assert sizes == {"old": 11, "new": 7}
    assert sum(sizes.values()) == 18


def test_a_saturated_new_replica_set_zeroes_the_old_ones() -> None:
    plan = Rollout.parse(deployment(3))
    new = replica_set("new", 3, annotations={rollout.DESIRED_REPLICAS: "3"})
    sizes, _ = rollout.proportional_sizes(plan, new, [replica_set("old", 1)], 4)
    assert sizes == {"old": 0}


def test_a_replica_set_made_for_other_replicas_is_a_scaling_event() -> None:
    plan = Rollout.parse(deployment(5))
    assert rollout.is_scaling_event(plan, [replica_set("a", 4, annotations={rollout.DESIRED_REPLICAS: "4"})])
    assert not rollout.is_scaling_event(
        plan, [replica_set("a", 5, annotations={rollout.DESIRED_REPLICAS: "5"})]
    )
    assert not rollout.is_scaling_event(
        plan, [replica_set("a", 0, annotations={rollout.DESIRED_REPLICAS: "4"})]
    )


def test_history_beyond_the_limit_goes_oldest_revision_first_if_it_runs_nothing() -> None:
    plan = Rollout.parse(deployment(revisionHistoryLimit=1))
    sets = [
        replica_set("r1", 0, revision=1),
        replica_set("r2", 1, revision=2),
        replica_set("r3", 0, revision=3),
    ]
    assert [rs["metadata"]["name"] for rs in rollout.history_to_delete(plan, sets)] == ["r1"]
    assert rollout.history_to_delete(Rollout.parse(deployment(revisionHistoryLimit=5)), sets) == []


# --- status ------------------------------------------------------------------------------------------------


def test_status_counts_the_replica_sets() -> None:
    plan = Rollout.parse(deployment(4, strategy=strategy(1, 1)))
    old, new = replica_set("old", 2), replica_set("new", 3, available=1)
    status = progress.rollout_status(plan, deployment(4, strategy=strategy(1, 1)), [old, new], new, NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 5,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "unavailableReplicas": 2,
    }
    assert condition(status, progress.AVAILABLE)["reason"] == progress.MIN_AVAILABLE


def test_a_complete_rollout_has_successfully_progressed() -> None:
    owner = deployment(2)
    new = replica_set("web-abc", 2)
    status = progress.rollout_status(Rollout.parse(owner), owner, [new], new, NOW)
    progressing = condition(status, progress.PROGRESSING)
    assert (progressing["status"], progressing["reason"]) == ("True", progress.NEW_RS_AVAILABLE)
    assert progressing["message"] == 'ReplicaSet "web-abc" has successfully progressed.'
    assert "unavailableReplicas" not in status  # omitempty


def test_progress_refreshes_the_update_time_but_not_the_transition() -> None:
    earlier = "2026-01-01T11:00:00Z"
    before = {
        "type": "Progressing",
        "status": "True",
        "reason": progress.NEW_RS_CREATED,
        "lastUpdateTime": earlier,
        "lastTransitionTime": earlier,
    }
    owner = deployment(2, status={"replicas": 1, "updatedReplicas": 1, "conditions": [before]})
    new = replica_set("web-abc", 2, available=1)
    status = progress.rollout_status(Rollout.parse(owner), owner, [new], new, NOW)
    progressing = condition(status, progress.PROGRESSING)
    assert (progressing["reason"], progressing["lastUpdateTime"], progressing["lastTransitionTime"]) == (
        progress.RS_UPDATED,
        STAMP,
        earlier,
    )


def test_no_progress_past_the_deadline_times_out() -> None:
    started = (NOW - timedelta(seconds=31)).strftime("%Y-%m-%dT%H:%M:%SZ")
    before = {
        "type": "Progressing",
        "status": "True",
        "reason": progress.RS_UPDATED,
        "lastUpdateTime": started,
        "lastTransitionTime": started,
    }
    owner = deployment(
        1, progressDeadlineSeconds=30, status={"replicas": 1, "updatedReplicas": 1, "conditions": [before]}
    )
    new = replica_set("web-abc", 1, available=0)
    plan = Rollout.parse(owner)
    status = progress.rollout_status(plan, owner, [new], new, NOW)
    progressing = condition(status, progress.PROGRESSING)
    assert (progressing["status"], progressing["reason"]) == ("False", progress.TIMED_OUT)
    assert progressing["message"] == 'ReplicaSet "web-abc" has timed out progressing.'
    assert progress.recheck_after(plan, status, NOW) is None


def test_a_rollout_within_its_deadline_is_checked_again_when_it_would_pass() -> None:
    started = (NOW - timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "conditions": [
            {
                "type": "Progressing",
                "status": "True",
                "reason": progress.RS_UPDATED,
                "lastUpdateTime": started,
            }
        ]
    }
    plan = Rollout.parse(deployment(1, progressDeadlineSeconds=30))
    assert progress.recheck_after(plan, status, NOW) == 21.0


def test_without_a_deadline_there_is_no_progressing_condition() -> None:
    owner = deployment(1)
    owner["spec"].pop("progressDeadlineSeconds", None)
    new = replica_set("web-abc", 1)
    assert (
        progress.get_condition(
            progress.rollout_status(Rollout.parse(owner), owner, [new], new, NOW), "Progressing"
        )
        is None
    )


def test_a_replica_set_that_cannot_create_pods_fails_the_deployment() -> None:
    failure = {
        "type": "ReplicaFailure",
        "status": "True",
        "reason": "FailedCreate",
        "message": "forbidden",
        "lastTransitionTime": STAMP,
    }
    new = {**replica_set("web-abc", 1, available=0), "status": {"conditions": [failure]}}
    owner = deployment(1)
    status = progress.rollout_status(Rollout.parse(owner), owner, [new], new, NOW)
    copied = condition(status, "ReplicaFailure")
    assert (copied["reason"], copied["message"]) == ("FailedCreate", "forbidden")


# --- the ReplicaSet controller -----------------------------------------------------------------------------


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: str | None = STAMP,
    created: str = STAMP,
    restarts: int = 0,
) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready}] if ready else []
    return {
        "metadata": {"name": name, "uid": name, "creationTimestamp": created, "labels": {"app": "web"}},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def test_surplus_pods_are_deleted_in_the_upstream_order() -> None:
    pods = [
        pod("ready-old", created="2026-01-01T11:00:00Z", ready="2026-01-01T11:00:00Z"),
        pod("ready-new", created="2026-01-01T11:30:00Z", ready="2026-01-01T11:30:00Z"),
        pod("restarted", created="2026-01-01T11:00:00Z", ready="2026-01-01T11:00:00Z", restarts=3),
        pod("not-ready", ready=None),
        pod("pending", phase="Pending", ready=None),
        pod("unscheduled", node="", phase="Pending", ready=None),
    ]
    order = [p["metadata"]["name"] for p in replicasets.deletion_order(pods)]
    assert order == ["unscheduled", "pending", "not-ready", "ready-new", "restarted", "ready-old"]


def test_doubled_up_pods_go_before_lone_ones() -> None:
    pods = [pod("alone", node="n2"), pod("a", node="n1"), pod("b", node="n1")]
    assert replicasets.deletion_order(pods)[-1]["metadata"]["name"] == "alone"


def test_replica_set_status_counts_available_only_after_min_ready_seconds() -> None:
    owner = {
        "metadata": {"generation": 3},
        "spec": {"minReadySeconds": 10, "template": {"metadata": {"labels": {"app": "web"}}}},
    }
    now = NOW.timestamp()
    pods = [
        pod("old-enough", ready="2026-01-01T11:59:00Z"),
        pod("just-ready", ready="2026-01-01T11:59:55Z"),
        pod("starting", ready=None),
    ]
    status = replicasets.replica_set_status(owner, pods, now, None)
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 1,
        "observedGeneration": 3,
    }


def test_an_empty_replica_set_still_reports_replicas() -> None:
    assert replicasets.replica_set_status({"metadata": {"generation": 1}, "spec": {}}, [], 0.0, None) == {
        "replicas": 0,
        "observedGeneration": 1,
    }


def test_a_pod_is_made_from_the_template() -> None:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "namespace": "ns", "uid": "rs-1"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["f"]},
                "spec": {"containers": []},
            }
        },
    }
    made = replicasets.pod_for(owner)
    assert made["metadata"] == {
        "generateName": "web-abc-",
        "namespace": "ns",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "finalizers": ["f"],
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-abc",
                "uid": "rs-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
