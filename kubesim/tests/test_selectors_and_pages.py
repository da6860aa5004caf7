"""Contract: label and field selectors, and limit/continue pagination."""

from __future__ import annotations

import pytest
from kubernetes.client import CoreV1Api

from kubesim.tests.conftest import pod


@pytest.fixture
def labelled(core: CoreV1Api, namespace: str) -> str:
    for name, labels in {
        "a": {"app": "web", "tier": "front"},
        "b": {"app": "web", "tier": "back"},
        "c": {"app": "db"},
        "d": {},
    }.items():
        manifest = pod(name, **labels)
        if name == "b":  # bound at creation: a pod's spec.nodeName cannot be patched later
            manifest["spec"]["nodeName"] = "node-1"
        core.create_namespaced_pod(namespace, manifest)
    return namespace


def names(core: CoreV1Api, namespace: str, **kwargs) -> list[str]:
    return [p.metadata.name for p in core.list_namespaced_pod(namespace, **kwargs).items]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("tier in (front,back)", ["a", "b"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=back", ["b"]),
        ("app in (web, db),!tier", ["c"]),
    ],
)
def test_label_selectors(core: CoreV1Api, labelled: str, selector: str, expected: list[str]) -> None:
    assert names(core, labelled, label_selector=selector) == expected


def test_field_selectors_on_name_namespace_phase_and_node(core: CoreV1Api, labelled: str) -> None:
    core.patch_namespaced_pod_status("a", labelled, {"status": {"phase": "Running"}})
    assert names(core, labelled, field_selector="metadata.name=c") == ["c"]
    assert names(core, labelled, field_selector=f"metadata.namespace={labelled}") == ["a", "b", "c", "d"]
    assert names(core, labelled, field_selector="status.phase=Running") == ["a"]
    assert names(core, labelled, field_selector="status.phase!=Running") == ["b", "c", "d"]
    assert names(core, labelled, field_selector="spec.nodeName=node-1") == ["b"]
    assert names(core, labelled, field_selector="spec.nodeName=") == ["a", "c", "d"]


def test_label_and_field_selectors_combine(core: CoreV1Api, labelled: str) -> None:
    assert names(core, labelled, label_selector="app=web", field_selector="metadata.name!=a") == ["b"]


def test_limit_and_continue_walk_every_item_once(core: CoreV1Api, namespace: str) -> None:
    for index in range(7):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"cm-{index}"}})
    seen, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_config_map(namespace, limit=3, _continue=token)
        seen += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(seen)
    assert pages == 3
    assert seen == [f"cm-{i}" for i in range(7)]


def test_limit_with_a_selector_pages_over_matching_items(core: CoreV1Api, labelled: str) -> None:
    first = core.list_namespaced_pod(labelled, label_selector="app=web", limit=1)
    assert [p.metadata.name for p in first.items] == ["a"]
    second = core.list_namespaced_pod(
        labelled, label_selector="app=web", limit=1, _continue=first.metadata._continue
    )
    assert [p.metadata.name for p in second.items] == ["b"]


def test_a_garbled_continue_token_is_400(http, namespace: str) -> None:
    response = http(
        "GET", f"/api/v1/namespaces/{namespace}/configmaps", params={"limit": 1, "continue": "garbage!"}
    )
    assert response.status_code == 400
