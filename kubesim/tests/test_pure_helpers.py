"""Edge cases of the simulator's pure helpers (JSONPath, durations, patches, schemas, selectors, SSA)."""

from __future__ import annotations

import pytest

from kubesim import apply, jsonpath, patch, schema, selectors, table
from kubesim.builtins import POD_SPEC_META
from kubesim.errors import ApiError

CONDITIONS = {
    "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Done", "status": "True"}]}
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('.status.conditions[?(@.type=="Done")].status', ["True"]),
        ('.status.conditions[?(@.type!="Done")].type', ["Ready"]),
        (".status.conditions[1].type", ["Done"]),
        (".status.conditions[-1:].type", ["Done"]),
        (".status.conditions[0:1].type", ["Ready"]),
        (".status.conditions[*].type", ["Ready", "Done"]),
        ("{.status.conditions[0].status}", ["False"]),
        (".status.missing", []),
    ],
)
def test_jsonpath_subset(expression: str, expected: list[str]) -> None:
    assert jsonpath.find(CONDITIONS, expression) == expected


def test_jsonpath_quoted_keys() -> None:
    assert jsonpath.find({"metadata": {"labels": {"a.b/c": "x"}}}, ".metadata.labels['a.b/c']") == ["x"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 7200, "3d2h"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_durations_match_kubectl(seconds: int, text: str) -> None:
    assert table.human_duration(seconds) == text


def test_json_patch_pointer_escapes_and_move() -> None:
    doc = {"metadata": {"annotations": {"a/b": "1", "c~d": "2"}}}
    moved = patch.json_patch(
        doc, [{"op": "move", "from": "/metadata/annotations/a~1b", "path": "/metadata/annotations/c~0d"}]
    )
    assert moved == {"metadata": {"annotations": {"c~d": "1"}}}
    assert doc["metadata"]["annotations"]["a/b"] == "1"


def test_json_patch_add_appends_with_a_dash() -> None:
    assert patch.json_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}]) == {"a": [1, 2]}


def test_json_patch_out_of_range_is_422() -> None:
    with pytest.raises(ApiError) as caught:
        patch.json_patch({"a": [1]}, [{"op": "remove", "path": "/a/3"}])
    assert caught.value.code == 422


def test_strategic_merge_retain_keys_and_primitive_deletes() -> None:
    live = {
        "spec": {
            "containers": [{"name": "a", "args": ["x", "y"]}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        }
    }
    change = {
        "spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/d"}}]}
    }
    merged = patch.strategic_merge_patch(live, change, {"spec": POD_SPEC_META})
    assert merged["spec"]["volumes"] == [{"name": "v", "hostPath": {"path": "/d"}}]
    finalizers = patch.strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
        {},
    )
    assert finalizers == {"metadata": {"finalizers": ["b"]}}


def test_strategic_merge_replace_directive_on_a_list() -> None:
    live = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    merged = patch.strategic_merge_patch(
        live, {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}, {"spec": POD_SPEC_META}
    )
    assert merged["spec"]["containers"] == [{"name": "c"}]


def test_schema_int_or_string_additional_properties_and_nullable() -> None:
    spec_schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "port": {"x-kubernetes-int-or-string": True},
                    "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "note": {"type": "string", "nullable": True},
                },
            }
        },
    }
    good = schema.check({"spec": {"port": "http", "limits": {"cpu": 2}, "note": None}}, spec_schema)
    assert good.causes == []
    assert good.obj["spec"]["note"] is None
    bad = schema.check({"spec": {"port": 1.5, "limits": {"cpu": "two"}}}, spec_schema)
    assert {c.field for c in bad.causes} == {"spec.port", "spec.limits.cpu"}


def test_schema_whole_floats_are_the_integers_the_apiserver_stores() -> None:
    spec_schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cpu": {"x-kubernetes-int-or-string": True},
                    "replicas": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    body = {"spec": {"cpu": 2.0, "replicas": 3.0, "ratio": 0.5, "free": {"n": [1.0, 1e21]}}}
    checked = schema.check(body, spec_schema)
    assert checked.causes == []
    assert checked.obj["spec"] == {"cpu": 2, "replicas": 3, "ratio": 0.5, "free": {"n": [1, 1e21]}}
    assert type(checked.obj["spec"]["cpu"]) is int
    assert [type(n) for n in checked.obj["spec"]["free"]["n"]] == [int, float]


def test_schema_one_of_is_a_value_validation() -> None:
    one_of = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            }
        },
    }
    assert schema.check({"spec": {"a": 1}}, one_of).causes == []
    assert [c.field for c in schema.check({"spec": {"a": 1, "b": 2}}, one_of).causes] == ["spec"]


def test_label_selector_greater_and_less_than() -> None:
    selector = selectors.parse_label_selector("priority>5,priority<9")
    assert selector.matches({"metadata": {"labels": {"priority": "7"}}})
    assert not selector.matches({"metadata": {"labels": {"priority": "9"}}})
    assert not selector.matches({"metadata": {"labels": {"priority": "high"}}})


def test_match_labels_selector_from_a_label_selector_object() -> None:
    selector = selectors.match_labels_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
        }
    )
    assert selector.matches({"metadata": {"labels": {"app": "web", "tier": "front"}}})
    assert not selector.matches({"metadata": {"labels": {"app": "web", "tier": "db"}}})


def test_apply_removes_fields_the_manager_stopped_setting() -> None:
    first = apply.server_side_apply(
        None,
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "b": "2"}},
        "m",
        {},
        force=False,
        now="t",
    )
    second = apply.server_side_apply(
        first, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}, "m", {}, force=False, now="t"
    )
    assert second["data"] == {"a": "1"}


def test_apply_keeps_fields_another_manager_also_owns() -> None:
    first = apply.server_side_apply(
        None, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}, "one", {}, force=False, now="t"
    )
    shared = apply.server_side_apply(
        first, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}, "two", {}, force=False, now="t"
    )
    dropped = apply.server_side_apply(
        shared, {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}, "one", {}, force=False, now="t"
    )
    assert dropped["data"] == {"a": "1"}


def test_apply_merges_keyed_lists_item_by_item() -> None:
    meta = {"spec": POD_SPEC_META}
    live = apply.server_side_apply(
        None,
        {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a", "image": "1"}]}},
        "one",
        meta,
        force=False,
        now="t",
    )
    both = apply.server_side_apply(
        live,
        {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "b", "image": "2"}]}},
        "two",
        meta,
        force=False,
        now="t",
    )
    assert [c["name"] for c in both["spec"]["containers"]] == ["a", "b"]


def test_the_legacy_token_controller_fills_only_what_is_missing() -> None:
    from kubesim.auth import legacy

    secret = {"metadata": {"name": "t"}, "data": {"namespace": "bnM="}}
    assert legacy.missing_data(secret, b"PEM") == ["token", "ca.crt"]
    assert legacy.missing_data(secret, None) == ["token"]
    full = {"metadata": {"name": "t"}, "data": {"token": "dA==", "namespace": "bnM=", "ca.crt": "Yw=="}}
    assert legacy.missing_data(full, b"PEM") == []


def test_a_legacy_token_secret_references_only_the_account_whose_uid_it_recorded() -> None:
    from kubesim.auth import legacy

    account = {"metadata": {"name": "bot", "uid": "u1"}}
    unrecorded = {"metadata": {"name": "t"}}
    recorded = {"metadata": {"name": "t", "annotations": {legacy.UID_ANNOTATION: "u0"}}}
    assert legacy.references_account(unrecorded, account)
    assert not legacy.references_account(recorded, account)
    assert not legacy.references_account(unrecorded, None)


def test_a_legacy_token_verifies_without_expiry_or_audience_and_names_its_secret() -> None:
    from kubesim.auth.tokens import TokenSigner

    signer = TokenSigner()
    token = signer.issue_legacy("ns", "bot", "u1", "bot-token")
    claims = signer.verify(token, now=2**40, audiences=("https://elsewhere",))
    assert (claims.namespace, claims.service_account, claims.service_account_uid) == ("ns", "bot", "u1")
    assert (claims.legacy, claims.bound_kind, claims.bound_name) == (True, "secret", "bot-token")
