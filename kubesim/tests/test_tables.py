"""Contract: `Accept: application/json;as=Table` answers with printer columns (what kubectl get prints)."""

from __future__ import annotations

from kubesim.tests.conftest import WIDGET_GROUP, pod

TABLE = ",".join(
    [
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        "application/json",
    ]
)


def test_a_crd_list_as_table_uses_its_printer_columns(http, custom, widgets: str, namespace: str) -> None:
    body = {
        "apiVersion": f"{WIDGET_GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "tab"},
        "spec": {"color": "red", "size": 4},
    }
    custom.create_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", body)
    custom.patch_namespaced_custom_object_status(
        WIDGET_GROUP, "v1", namespace, "widgets", "tab", {"status": {"phase": "Ready"}}
    )
    table = http(
        "GET", f"/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/widgets", headers={"Accept": TABLE}
    ).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Phase", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:3] == ["tab", 4, "Ready"]
    assert cells[3].endswith("s")
    assert table["rows"][0]["object"]["metadata"]["name"] == "tab"


def test_a_single_object_as_table(http, core, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("one"))
    table = http("GET", f"/api/v1/namespaces/{namespace}/pods/one", headers={"Accept": TABLE}).json()
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:4] == ["Name", "Ready", "Status", "Restarts"]
    assert table["rows"][0]["cells"][:3] == ["one", "0/1", "Pending"]


def test_include_object_returns_the_full_object(http, core, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "full"}, "data": {"k": "v"}})
    table = http(
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        headers={"Accept": TABLE},
        params={"includeObject": "Object"},
    ).json()
    assert table["rows"][0]["object"]["data"] == {"k": "v"}


def test_metadata_only_lists_as_client_go_metadata_clients_ask(http, core, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "meta"}, "data": {"k": "v"}})
    accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
    listed = http("GET", f"/api/v1/namespaces/{namespace}/configmaps", headers={"Accept": accept}).json()
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["items"][0]["metadata"]["name"] == "meta"
    assert "data" not in listed["items"][0]
