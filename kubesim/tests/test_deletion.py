"""Contract: finalizers and deletionTimestamp, ownerReference cascade, namespace teardown."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes.client import ApiException, CoreV1Api, V1DeleteOptions


def exists(core: CoreV1Api, namespace: str, name: str) -> bool:
    try:
        core.read_namespaced_config_map(name, namespace)
    except ApiException as error:
        if error.status != 404:
            raise
        return False
    return True


def eventually(condition, timeout: float = 5.0) -> bool:
    """Real clusters collect garbage asynchronously; the simulator does it at once. Poll either way."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def owned(core: CoreV1Api, namespace: str, name: str, owner, block: bool = False) -> None:
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }
    core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "ownerReferences": [reference]}})


def test_delete_removes_the_object(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "gone"}})
    status = core.delete_namespaced_config_map("gone", namespace)
    assert status["status"] == "Success"
    assert not exists(core, namespace, "gone")


def test_delete_of_a_missing_object_is_404(core: CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("never", namespace)
    assert caught.value.status == 404


def test_finalizers_hold_the_object_with_a_deletion_timestamp(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "held", "finalizers": ["example.com/cleanup"]}}
    )
    core.delete_namespaced_config_map("held", namespace)
    held = core.read_namespaced_config_map("held", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/cleanup"]
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    assert eventually(lambda: not exists(core, namespace, "held"))


def test_no_finalizer_can_be_added_while_deleting(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "closing", "finalizers": ["a.example/x"]}}
    )
    core.delete_namespaced_config_map("closing", namespace)
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_config_map(
            "closing", namespace, {"metadata": {"finalizers": ["a.example/x", "b.example/y"]}}
        )
    assert caught.value.status == 422
    core.patch_namespaced_config_map("closing", namespace, {"metadata": {"finalizers": None}})


def test_delete_preconditions_on_uid_are_checked(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "pre"}})
    options = V1DeleteOptions(preconditions={"uid": "00000000-0000-0000-0000-000000000000"})
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_config_map("pre", namespace, body=options)
    assert caught.value.status == 409


def test_background_deletion_collects_dependents(core: CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    owned(core, namespace, "child", owner)
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")
    assert eventually(lambda: not exists(core, namespace, "child"))


def test_background_is_the_default_policy(core: CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner2"}})
    owned(core, namespace, "child2", owner)
    core.delete_namespaced_config_map("owner2", namespace)
    assert eventually(lambda: not exists(core, namespace, "child2"))


def test_a_dependent_with_another_live_owner_survives(core: CoreV1Api, namespace: str) -> None:
    first = core.create_namespaced_config_map(namespace, {"metadata": {"name": "first"}})
    second = core.create_namespaced_config_map(namespace, {"metadata": {"name": "second"}})
    references = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid}
        for o in (first, second)
    ]
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "shared", "ownerReferences": references}}
    )
    core.delete_namespaced_config_map("first", namespace)
    assert eventually(
        lambda: [
            r.name
            for r in core.read_namespaced_config_map("shared", namespace).metadata.owner_references or []
        ]
        == ["second"]
    )


def test_orphan_deletion_keeps_dependents_and_drops_the_reference(core: CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "parent"}})
    owned(core, namespace, "orphan", owner)
    core.delete_namespaced_config_map("parent", namespace, propagation_policy="Orphan")
    assert eventually(lambda: not exists(core, namespace, "parent"))
    assert exists(core, namespace, "orphan")
    assert not core.read_namespaced_config_map("orphan", namespace).metadata.owner_references


def test_foreground_deletion_waits_for_dependents(core: CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "front"}})
    core.create_namespaced_config_map(
        namespace,
        {
            "metadata": {
                "name": "slow",
                "finalizers": ["example.com/hold"],
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "front",
                        "uid": owner.metadata.uid,
                        "blockOwnerDeletion": True,
                    }
                ],
            }
        },
    )
    core.delete_namespaced_config_map("front", namespace, propagation_policy="Foreground")
    waiting = core.read_namespaced_config_map("front", namespace)
    assert waiting.metadata.deletion_timestamp is not None
    assert "foregroundDeletion" in waiting.metadata.finalizers
    assert eventually(
        lambda: core.read_namespaced_config_map("slow", namespace).metadata.deletion_timestamp is not None
    )
    core.patch_namespaced_config_map("slow", namespace, {"metadata": {"finalizers": None}})
    assert eventually(lambda: not exists(core, namespace, "slow") and not exists(core, namespace, "front"))


def test_deleting_a_namespace_deletes_its_contents(core: CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "doomed-ns"}})
    core.create_namespaced_config_map("doomed-ns", {"metadata": {"name": "inside"}})
    core.delete_namespace("doomed-ns")

    def namespace_gone() -> bool:
        try:
            core.read_namespace("doomed-ns")
        except ApiException as error:
            return error.status == 404
        return False

    assert eventually(namespace_gone)
    assert not exists(core, "doomed-ns", "inside")


def test_delete_collection_by_label(core: CoreV1Api, namespace: str) -> None:
    for name, team in (("x1", "a"), ("x2", "a"), ("x3", "b")):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"team": team}}})
    core.delete_collection_namespaced_config_map(namespace, label_selector="team=a")
    assert eventually(
        lambda: [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["x3"]
    )


def _dependent(name: str, owner, *, block: bool) -> dict:
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }
    return {"metadata": {"name": name, "finalizers": ["example.com/hold"], "ownerReferences": [reference]}}


def test_kubectl_foreground_deletion_is_held_only_by_blocking_dependents(
    core: CoreV1Api, namespace: str, kubectl
) -> None:
    """`kubectl delete --cascade=foreground`: every dependent is deleted, but the owner waits only for
    those whose reference sets `blockOwnerDeletion: true` (the garbage collector's blockingDependents)."""
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, _dependent("lazy", owner, block=False))
    owned(core, namespace, "plain", owner)
    kubectl("delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
    assert eventually(lambda: not exists(core, namespace, "owner") and not exists(core, namespace, "plain"))
    assert core.read_namespaced_config_map("lazy", namespace).metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("lazy", namespace, {"metadata": {"finalizers": None}})


def test_kubectl_a_dependent_that_stops_blocking_releases_its_owner(
    core: CoreV1Api, namespace: str, kubectl
) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, _dependent("holder", owner, block=True))
    kubectl("delete", "configmap", "owner", "--cascade=foreground", "--wait=false")
    assert eventually(
        lambda: core.read_namespaced_config_map("holder", namespace).metadata.deletion_timestamp is not None
    )
    assert "foregroundDeletion" in core.read_namespaced_config_map("owner", namespace).metadata.finalizers
    released = [{**_dependent("holder", owner, block=False)["metadata"]["ownerReferences"][0]}]
    kubectl(
        "patch",
        "configmap",
        "holder",
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"ownerReferences": released}}),
    )
    assert eventually(lambda: not exists(core, namespace, "owner"))
    assert exists(core, namespace, "holder")
    core.patch_namespaced_config_map("holder", namespace, {"metadata": {"finalizers": None}})
