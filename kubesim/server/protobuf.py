"""Request bodies in the apiserver's protobuf encoding (`application/vnd.kubernetes.protobuf`), what
kubectl's typed clients send for built-in kinds (`kubectl create job --from=cronjob/x`, `debug --copy-to`,
`create token`, `auth can-i`…).

A body is the magic `k8s\\0` and a runtime.Unknown (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2) whose
`raw` is the kind's message. Every message is decoded in full from `protobuf_messages.json`, which
`kubesim.server.protogen` generates from k8s.io/api's generated.proto and Go types: each field becomes the
JSON the same object would be sent as (its JSON name, inline structs merged, zero values dropped where Go's
`omitempty` drops them, Quantity, IntOrString, Time, MicroTime, Duration and raw JSON as their JSON forms).
A field number the table does not know is a 400, never dropped; a kind it does not describe is a 415 (the
caller's) whose message does not offer protobuf.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
from pathlib import Path
from typing import Any

from kubesim.errors import bad_request

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_TABLE = Path(__file__).with_name("protobuf_messages.json")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ZERO_SCALARS: tuple[Any, ...] = ("", 0, False)


@functools.cache
def table() -> dict[str, Any]:
    """The generated table: `kinds` ("apps/v1/Deployment" → message) and `messages` (name → fields)."""
    with _TABLE.open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def accepts(api_version: str, kind: str) -> bool:
    """Whether a body of this kind can be decoded (and so whether a 415 may offer protobuf)."""
    return f"{api_version}/{kind}" in table()["kinds"]


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one message: ints for varints, bytes for everything else."""
    found: list[tuple[int, int | bytes]] = []
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, position = _varint(data, position)
            found.append((number, value))
        elif wire == 2:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise ValueError("truncated field")
            found.append((number, data[position : position + length]))
            position += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            found.append((number, data[position : position + size]))
            position += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return found


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _bytes(value: int | bytes, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise ValueError(f"expected {what}, got a number")
    return value


def _number(value: int | bytes) -> int:
    if isinstance(value, bytes):
        raise ValueError("expected a number, got bytes")
    return _signed(value)


def _timestamp(data: bytes, micro: bool) -> str | None:
    parts = dict(fields(data))
    seconds, nanos = _number(parts.get(1, 0)), _number(parts.get(2, 0))
    if not seconds and not nanos:
        return None  # Go's zero time, which its JSON writes as null
    moment = _EPOCH + datetime.timedelta(seconds=seconds, microseconds=nanos // 1000)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def go_duration(nanoseconds: int) -> str:
    """Go's `time.Duration.String()`: `1h2m3.5s`, `1.5ms`, `0s`."""
    if nanoseconds == 0:
        return "0s"
    sign, rest = ("-", -nanoseconds) if nanoseconds < 0 else ("", nanoseconds)
    if rest < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if rest >= size:
                return sign + _decimal(rest, size) + unit
    hours, rest = divmod(rest, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _special(kind: str, data: bytes) -> Any:
    if kind == "quantity":  # resource.Quantity {string = 1}: "500m", "1Gi"
        text = dict(fields(data)).get(1, b"")
        return _bytes(text, "a quantity").decode()
    if kind == "intorstring":  # intstr.IntOrString {type = 1 (0 int, 1 string), intVal = 2, strVal = 3}
        parts = dict(fields(data))
        if _number(parts.get(1, 0)) == 1:
            return _bytes(parts.get(3, b""), "a string").decode()
        return _number(parts.get(2, 0))
    if kind in ("time", "microtime"):
        return _timestamp(data, kind == "microtime")
    if kind == "duration":
        return go_duration(_number(dict(fields(data)).get(1, 0)))
    raw = _bytes(dict(fields(data)).get(1, b""), "raw JSON")  # RawExtension, FieldsV1: JSON as bytes
    return json.loads(raw) if raw.strip() else None


def _value(kind: Any, value: int | bytes) -> Any:
    """One field value as JSON: a scalar, a nested message, or a special type's JSON form."""
    if kind == "string":
        return _bytes(value, "a string").decode()
    if kind == "bytes":
        return base64.b64encode(_bytes(value, "bytes")).decode()
    if kind == "bool":
        return bool(_number(value))
    if kind in ("int32", "int64"):
        return _number(value)
    if kind in ("quantity", "intorstring", "time", "microtime", "duration", "json"):
        return _special(kind, _bytes(value, f"a {kind}"))
    return message(_bytes(value, f"a {kind} message"), kind)


def message(data: bytes, name: str) -> Any:
    """Message `name` as the JSON object (or, for a wrapped named slice such as ExtraValue, the list) the
    same value would be sent as."""
    layout = table()["messages"][name]
    if isinstance(layout, dict):
        return [_value(layout["list"], value) for number, value in fields(data) if number == 1]
    by_number = {entry[0]: entry for entry in layout}
    document: dict[str, Any] = {}
    for number, value in fields(data):
        if number not in by_number:
            raise ValueError(f"field {number} of {name} is not in the Kubernetes 1.37 schema kubesim decodes")
        _, json_name, kind, flags = by_number[number]
        if isinstance(kind, list):  # a map: entries of key = 1, value = 2
            entry = dict(fields(_bytes(value, "a map entry")))
            key = _bytes(entry.get(1, b""), "a map key").decode()
            document.setdefault(json_name, {})[key] = (
                _value(kind[1], entry[2]) if 2 in entry else _empty(kind[1])
            )
        elif "r" in flags:
            items = document.setdefault(json_name, [])
            if isinstance(value, bytes) and kind in ("int32", "int64", "bool"):  # packed
                items += [_value(kind, item) for _, item in fields(_packed(value))]
            else:
                items.append(_value(kind, value))
        elif json_name == "":  # an embedded struct: its fields at this level (Volume's VolumeSource)
            document.update(_value(kind, value))
        else:
            decoded = _value(kind, value)
            if decoded is None or ("k" not in flags and decoded in _ZERO_SCALARS):
                document.pop(json_name, None)
                continue
            document[json_name] = decoded
    return document


def _packed(data: bytes) -> bytes:
    """Packed varints re-tagged as field 1 so `fields` can read them."""
    out, position = bytearray(), 0
    while position < len(data):
        start = position
        _, position = _varint(data, position)
        out += b"\x08" + data[start:position]
    return bytes(out)


def _empty(kind: Any) -> Any:
    if kind == "string":
        return ""
    if kind in ("int32", "int64"):
        return 0
    return _value(kind, b"")


def decode(raw: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf body; None when its kind is not described (the caller answers 415)."""
    if not raw.startswith(MAGIC):
        return None
    try:
        envelope = dict(fields(raw[len(MAGIC) :]))
        type_meta = _bytes(envelope.get(1, b""), "a typeMeta")
        payload = _bytes(envelope.get(2, b""), "a raw object")
        meta = {k: v.decode() for k, v in fields(type_meta) if isinstance(v, bytes)}
        api_version, kind = meta.get(1, ""), meta.get(2, "")
        name = table()["kinds"].get(f"{api_version}/{kind}")
        if name is None:
            return None
        return {"apiVersion": api_version, "kind": kind, **message(payload, name)}
    except (ValueError, UnicodeDecodeError) as error:
        raise bad_request(f"the body of the request could not be decoded: {error}") from None
