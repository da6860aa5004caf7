"""Test helpers for protobuf bodies: an encoder of JSON objects into the apiserver's protobuf form (the one
kubectl sends), driven by kubesim's generated message table, and a builder of "full" objects that set every
field the kind's OpenAPI schema has. The encoder refuses any JSON key the table cannot place, so encoding a
full object proves the table covers every field the schema serves."""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any

from kubesim.openapi import catalog
from kubesim.server import protobuf

_SPECIAL_DEFINITIONS = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "microtime",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "json",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "json",
}
#: fields 1.37.0's OpenAPI has and the k8s.io/api sources the table was generated from lack (a body carrying
#: one is a 400 naming the field number, never a silent drop; docs/kubesim.md `D-protobuf-kinds`)
KNOWN_GAPS = frozenset({"Node.status.nodeInfo.runningInUserNamespace"})
_TIME = "2024-05-06T07:08:09Z"
_MICRO_TIME = "2024-05-06T07:08:09.123456Z"


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: bytes | str | int | bool) -> bytes:
    if isinstance(value, bool | int):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, payload: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, payload) + field(4, protobuf.MEDIA_TYPE)


class Unplaced(AssertionError):
    """A JSON key no protobuf field carries."""


def _encode_special(kind: str, value: Any) -> bytes:
    if kind == "quantity":
        return field(1, str(value))
    if kind == "intorstring":
        return field(1, 1) + field(3, value) if isinstance(value, str) else field(1, 0) + field(2, value)
    if kind in ("time", "microtime"):
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        seconds = int(moment.timestamp())
        return field(1, seconds) + (field(2, moment.microsecond * 1000) if moment.microsecond else b"")
    return field(1, json.dumps(value).encode())


def encode_value(kind: Any, value: Any, path: str) -> bytes:
    if kind == "string":
        return value.encode()
    if kind == "bytes":
        return base64.b64decode(value)
    if kind in ("quantity", "intorstring", "time", "microtime", "duration", "json"):
        return _encode_special(kind, value)
    return encode_message(kind, value, path)


def encode_message(name: str, value: Any, path: str) -> bytes:
    """`value` as message `name`; raises Unplaced for a key the message has no field for."""
    layout = protobuf.table()["messages"][name]
    if isinstance(layout, dict):
        return b"".join(field(1, encode_value(layout["list"], item, path)) for item in value)
    out = bytearray()
    remaining = dict(value)
    for number, json_name, kind, flags in layout:
        if json_name == "":
            inner = {k: remaining.pop(k) for k in list(remaining) if _placed_in(kind, k)}
            out += field(number, encode_message(kind, inner, path))
            continue
        if json_name not in remaining:
            continue
        item = remaining.pop(json_name)
        here = f"{path}.{json_name}"
        if isinstance(kind, list):
            for key, entry in item.items():
                out += field(
                    number, field(1, key) + field(2, _scalar_or_bytes(kind[1], entry, f"{here}[{key}]"))
                )
        elif "r" in flags:
            for index, entry in enumerate(item):
                out += field(number, _scalar_or_bytes(kind, entry, f"{here}[{index}]"))
        else:
            out += field(number, _scalar_or_bytes(kind, item, here))
    if remaining:
        raise Unplaced(f"{path}: no protobuf field for {sorted(remaining)} in {name}")
    return bytes(out)


def _scalar_or_bytes(kind: Any, value: Any, path: str) -> bytes | int | bool:
    if kind in ("int32", "int64", "bool"):
        return value  # type: ignore[no-any-return]
    return encode_value(kind, value, path)


def _placed_in(name: Any, key: str) -> bool:
    """Whether the (inline) message `name` or one it inlines has a field spelled `key` in JSON."""
    layout = protobuf.table()["messages"].get(name)
    if not isinstance(layout, list):
        return False
    return any(
        json_name == key or (json_name == "" and _placed_in(kind, key)) for _, json_name, kind, _ in layout
    )


def encode(obj: dict[str, Any]) -> bytes:
    """A whole object as kubectl sends it: the envelope around its kind's message."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    name = protobuf.table()["kinds"][f"{api_version}/{kind}"]
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return envelope(api_version, kind, encode_message(name, body, kind))


def full_object(api_version: str, kind: str) -> dict[str, Any]:
    """An object of the kind with every field of its OpenAPI schema set to a non-zero value."""
    message = protobuf.table()["kinds"][f"{api_version}/{kind}"]
    definition = "io.k8s." + message.removeprefix("k8s.io.")
    built = _full(catalog.definitions()[definition], kind, 0)
    built.update(apiVersion=api_version, kind=kind)
    return built


def _full(schema: dict[str, Any], path: str, depth: int) -> Any:
    if "$ref" in schema:
        name = catalog.ref_name(schema["$ref"])
        special = _SPECIAL_DEFINITIONS.get(name)
        if special == "quantity":
            return "1500m"
        if special == "intorstring":
            return 8080 if len(path) % 2 else "http-port"
        if special in ("time", "microtime"):
            return _MICRO_TIME if special == "microtime" else _TIME
        if special == "json":
            return {"f:spec": {".": {}}, "n": 1}
        return _full(catalog.definitions()[name], path, depth + 1)
    if depth > 60:
        raise AssertionError(f"{path}: schema nested too deep")
    kinds = schema.get("type") or []
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if "properties" in schema:
        # a kind's own apiVersion and kind travel in the envelope; nested objects (a StatefulSet's claim
        # templates, an Eviction's DeleteOptions) have no protobuf field for them, upstream as here
        typed = "x-kubernetes-group-version-kind" in schema
        return {
            key: _full(sub, f"{path}.{key}", depth + 1)
            for key, sub in schema["properties"].items()
            if not (typed and key in ("apiVersion", "kind")) and f"{path}.{key}" not in KNOWN_GAPS
        }
    if "additionalProperties" in schema and isinstance(schema["additionalProperties"], dict):
        return {"key-a": _full(schema["additionalProperties"], f"{path}[key-a]", depth + 1)}
    if "object" in kinds:  # an empty struct (a Job's `scheduling.disruptionMode.all`)
        return {}
    if "array" in kinds:
        return [_full(schema.get("items") or {}, f"{path}[0]", depth + 1)]
    if "integer" in kinds:
        return 3
    if "boolean" in kinds:
        return True
    if "string" in kinds:
        if schema.get("format") == "byte":
            return "AQID"
        if schema.get("format") == "date-time":
            return _TIME
        return "v-" + path.rsplit(".", 1)[-1]
    raise AssertionError(f"{path}: no value for schema {sorted(schema)}")
