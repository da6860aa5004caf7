"""Every kind kubesim accepts protobuf for keeps every field: an object with every field of its OpenAPI
schema set, encoded as kubectl encodes it, decodes to itself (issue 28: `kubectl create job --from=cronjob`
lost the template's volumes, mounts, env `valueFrom` and owner references when only part of the message was
decoded)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.builtins import builtin_types
from kubesim.server import protobuf
from kubesim.tests import protobuf_wire as wire

ACCEPTED = sorted(tuple(key.rsplit("/", 1)) for key in protobuf.table()["kinds"])  # type: ignore[misc]


def test_every_kind_kubesim_serves_is_accepted_as_protobuf_except_crds() -> None:
    """The kinds kubectl's typed clients may send; CustomResourceDefinitions (apiextensions, not k8s.io/api)
    are the one built-in kind without a protobuf form here (docs/kubesim.md `D-protobuf-crds`)."""
    served = {(f"{r.group}/{v}" if r.group else v, r.kind) for r in builtin_types() for v in r.versions}
    missing = {kind for kind in served if not protobuf.accepts(*kind)}
    assert missing == {("apiextensions.k8s.io/v1", "CustomResourceDefinition")}


@pytest.mark.parametrize(("api_version", "kind"), ACCEPTED, ids=[f"{v}/{k}" for v, k in ACCEPTED])
def test_a_full_object_round_trips_through_protobuf(api_version: str, kind: str) -> None:
    full = wire.full_object(api_version, kind)
    assert protobuf.decode(wire.encode(full)) == full


def _fields(value: Any, path: str = "") -> set[str]:
    """Every leaf path of a JSON value (list items as [0], map keys as [key])."""
    if isinstance(value, dict):
        return {p for key, item in value.items() for p in _fields(item, f"{path}.{key}")} or {path}
    if isinstance(value, list):
        return {p for item in value for p in _fields(item, f"{path}[0]")} or {path}
    return {path}


def test_the_full_objects_are_full() -> None:
    """The builder reaches deep: a Pod sets its volumes' sources, its containers' env `valueFrom`, probes
    and mounts, and its owner references — what `create job --from` used to drop."""
    paths = _fields(wire.full_object("v1", "Pod"))
    for expected in (
        ".metadata.ownerReferences[0].uid",
        ".spec.volumes[0].configMap.items[0].key",
        ".spec.containers[0].env[0].valueFrom.secretKeyRef.key",
        ".spec.containers[0].volumeMounts[0].mountPath",
        ".spec.containers[0].livenessProbe.httpGet.port",
        ".spec.initContainers[0].resources.limits[key-a]",
        ".spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ):
        assert expected.replace("[key-a]", ".key-a") in paths
    assert len(paths) > 1000


def test_a_key_the_table_cannot_place_is_refused_by_the_encoder() -> None:
    """The encoder is the check of completeness: it must refuse what it cannot place, or the round trip
    above proves nothing."""
    with pytest.raises(wire.Unplaced):
        wire.encode_message("k8s.io.api.core.v1.Container", {"image": "x", "imaginary": 1}, "c")


def test_the_known_gaps_are_still_gaps() -> None:
    """Fields 1.37.0's OpenAPI has that the table's sources lack (KNOWN_GAPS): a body with one cannot be
    placed. When the table is regenerated from sources that have them, this fails: drop them from the set."""
    info = {"runningInUserNamespace": True}
    with pytest.raises(wire.Unplaced):
        wire.encode_message("k8s.io.api.core.v1.NodeSystemInfo", info, "Node.status.nodeInfo")
    assert {"Node.status.nodeInfo.runningInUserNamespace"} == wire.KNOWN_GAPS


def test_zero_values_follow_go_json() -> None:
    """Go always sends non-pointer fields; JSON drops them where the field is `omitempty` (hostPort,
    imagePullPolicy) and keeps them where it is a pointer (replicas: 0, suspend: false) or not omitempty
    (containerPort)."""
    port = wire.field(2, 0) + wire.field(3, 0) + wire.field(4, "TCP")
    container = wire.field(1, "main") + wire.field(6, port) + wire.field(14, "")
    spec = wire.field(1, 0) + wire.field(3, wire.field(2, wire.field(2, container)))
    body = wire.envelope("apps/v1", "Deployment", wire.field(2, spec))
    decoded = protobuf.decode(body)
    assert decoded is not None
    assert decoded["spec"]["replicas"] == 0
    assert decoded["spec"]["template"]["spec"]["containers"] == [
        {"name": "main", "ports": [{"containerPort": 0, "protocol": "TCP"}]}
    ]
