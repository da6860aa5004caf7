"""Generates `protobuf_messages.json`, the table kubesim decodes protobuf request bodies with, from the
sources of k8s.io/api and k8s.io/apimachinery at the release kubesim serves.

The kinds are those of the OpenAPI definitions kubesim serves (`kubesim.openapi.catalog`) that these
packages define. Each message's fields come from the package's `generated.proto` (field numbers, wire
types, maps, repeated fields, message references) and from the Go struct it was generated from (`types.go`:
the JSON name from the `json` tag, inline embedding, `omitempty`, pointer or not), matched by message name
and field number;
a field the two disagree on stops the generation, so no field is left out silently. Run by hand when the
release changes (the sources are not needed at run time or in tests):

    git -C <k8s.io/api checkout> archive v0.37.0 | tar -x -C /tmp/api
    git -C <k8s.io/apimachinery checkout> archive v0.37.0 pkg | tar -x -C /tmp/apimachinery
    .venv/bin/python -m kubesim.server.protogen /tmp/api /tmp/apimachinery \
        > kubesim/server/protobuf_messages.json
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from kubesim.openapi import catalog

#: the group-versions whose kinds kubesim serves (and autoscaling/v1, whose Scale the scale subresource
#: speaks)
_SERVED_GROUP_VERSIONS = frozenset(
    {
        ("admissionregistration.k8s.io", "v1"),
        ("apps", "v1"),
        ("authentication.k8s.io", "v1"),
        ("authorization.k8s.io", "v1"),
        ("autoscaling", "v1"),
        ("autoscaling", "v2"),
        ("batch", "v1"),
        ("coordination.k8s.io", "v1"),
        ("", "v1"),
        ("discovery.k8s.io", "v1"),
        ("events.k8s.io", "v1"),
        ("networking.k8s.io", "v1"),
        ("policy", "v1"),
        ("rbac.authorization.k8s.io", "v1"),
        ("scheduling.k8s.io", "v1"),
        ("storage.k8s.io", "v1"),
    }
)
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
#: messages whose JSON is not their fields (custom MarshalJSON upstream)
SPECIAL = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    f"{_META}.Time": "time",
    f"{_META}.MicroTime": "microtime",
    f"{_META}.Duration": "duration",
    f"{_META}.FieldsV1": "json",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "json",
}
_SCALARS = frozenset({"string", "int32", "int64", "bool", "bytes"})
_MESSAGE = re.compile(r"^message (\w+) \{$")
_FIELD = re.compile(r"^\s+(optional|repeated) ([\w.]+) (\w+) = (\d+);$")
_MAP_FIELD = re.compile(r"^\s+map<(\w+), ([\w.]+)> (\w+) = (\d+);$")
_STRUCT = re.compile(r"^type (\w+) struct \{$")
_NAMED_SLICE = re.compile(r"^type (\w+) \[\](\w+)$")
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass(frozen=True)
class ProtoField:
    number: int
    name: str
    type: str  # a scalar, a message's full name, or "map"
    repeated: bool
    map_value: str = ""


@dataclass(frozen=True)
class GoField:
    json_name: str  # "" for an inline (embedded) struct
    omitempty: bool
    pointer: bool


def parse_proto(text: str) -> dict[str, list[ProtoField]]:
    """The top-level messages of one generated.proto by full name, their fields with resolved types."""
    package = re.search(r"^package ([\w.]+);", text, re.MULTILINE)
    if package is None:
        raise ValueError("no package statement")
    prefix = package.group(1)
    messages: dict[str, list[ProtoField]] = {}
    current: list[ProtoField] | None = None
    for line in text.splitlines():
        if (opened := _MESSAGE.match(line)) is not None:
            current = messages.setdefault(f"{prefix}.{opened.group(1)}", [])
        elif line == "}":
            current = None
        elif current is not None and (field := _FIELD.match(line)) is not None:
            label, kind, name, number = field.groups()
            current.append(ProtoField(int(number), name, _resolve(kind, prefix), label == "repeated"))
        elif current is not None and (mapped := _MAP_FIELD.match(line)) is not None:
            key, value, name, number = mapped.groups()
            if key != "string":
                raise ValueError(f"map keys other than strings: {line.strip()}")
            current.append(ProtoField(int(number), name, "map", False, _resolve(value, prefix)))
    return messages


def _resolve(kind: str, package: str) -> str:
    if kind in _SCALARS:
        return kind
    return kind[1:] if kind.startswith(".") else f"{package}.{kind}"


def parse_go(text: str) -> tuple[dict[str, dict[int, GoField]], dict[str, str]]:
    """The structs of Go sources (field number → JSON facts, from the `protobuf` and `json` tags) and the
    named slice types (`type ExtraValue []string`), which protobuf wraps in a message of `items`."""
    structs: dict[str, dict[int, GoField]] = {}
    slices: dict[str, str] = {}
    current: dict[int, GoField] | None = None
    for line in text.splitlines():
        if (opened := _STRUCT.match(line)) is not None:
            current = structs.setdefault(opened.group(1), {})
        elif (named := _NAMED_SLICE.match(line)) is not None:
            slices[named.group(1)] = named.group(2)
        elif line == "}":
            current = None
        elif current is not None and "`" in line and not line.strip().startswith("//"):
            declaration, tags_text = line.split("`", 1)
            tags = dict(_TAG.findall(tags_text))
            if "," not in tags.get("protobuf", ""):  # no protobuf field (`protobuf:"-"`, TypeMeta)
                continue
            number = int(tags["protobuf"].split(",")[1])
            words = declaration.split()
            json_tag = tags.get("json", "").split(",")
            current[number] = GoField(
                json_tag[0],  # "" for a struct Go's JSON inlines (embedded, `json:""` or `json:",inline"`)
                "omitempty" in json_tag[1:] or "omitzero" in json_tag[1:],
                words[-1].startswith("*"),
            )
    return structs, slices


def generate(api: Path, apimachinery: Path) -> dict[str, object]:
    proto: dict[str, list[ProtoField]] = {}
    go: dict[str, dict[int, GoField]] = {}
    slices: dict[str, str] = {}
    kinds: dict[str, str] = {}
    packages = sorted(str(p.parent.relative_to(api)) for p in api.glob("*/*/generated.proto"))
    package_dirs = [(api / p, f"k8s.io.api.{p.replace('/', '.')}") for p in packages]
    package_dirs.append((apimachinery / "pkg/apis/meta/v1", _META))
    for directory, prefix in package_dirs:
        proto.update(parse_proto((directory / "generated.proto").read_text(encoding="utf-8")))
        for source in sorted(directory.glob("*.go")):
            if source.name.endswith("_test.go") or source.name.startswith(("zz_", "generated")):
                continue
            structs, named = parse_go(source.read_text(encoding="utf-8"))
            go.update({f"{prefix}.{name}": fields for name, fields in structs.items()})
            slices.update({f"{prefix}.{name}": item for name, item in named.items()})
    for definition, schema in catalog.definitions().items():
        name = "k8s.io." + definition.removeprefix("io.k8s.")
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            api_version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
            served = (gvk.get("group", ""), gvk["version"]) in _SERVED_GROUP_VERSIONS
            if served and name in proto and not gvk["kind"].endswith("List"):
                kinds[f"{api_version}/{gvk['kind']}"] = name
    messages: dict[str, object] = {}
    pending = sorted(set(kinds.values()))
    while pending:
        name = pending.pop()
        if name in messages or name in SPECIAL:
            continue
        messages[name] = _message_table(name, proto, go, slices)
        for field in proto[name]:
            for referenced in (field.type, field.map_value):
                if (
                    referenced
                    and referenced not in _SCALARS
                    and referenced != "map"
                    and referenced not in messages
                ):
                    pending.append(referenced)
    return {"kinds": dict(sorted(kinds.items())), "messages": dict(sorted(messages.items()))}


def _message_table(
    name: str, proto: dict[str, list[ProtoField]], go: dict[str, dict[int, GoField]], slices: dict[str, str]
) -> object:
    """One message: `{"list": item type}` for a wrapped named slice, else its fields as
    `[number, JSON name ("" inline), type, flags]` with type a scalar, a message, a special or
    `["map", value type]`, and flags `r` (repeated) and `k` (kept when zero: a pointer, or no omitempty)."""
    if name not in proto:
        raise ValueError(f"{name}: no such message in the .proto files")
    if name in slices:
        (items,) = proto[name]
        return {"list": SPECIAL.get(items.type, items.type)}
    struct = go.get(name)
    if struct is None:
        raise ValueError(f"{name}: no Go struct of that name")
    fields = []
    for field in proto[name]:
        facts = struct.get(field.number)
        if facts is None:
            raise ValueError(f"{name}.{field.name} = {field.number}: no Go field with that protobuf number")
        kind: object = SPECIAL.get(field.type, field.type)
        if field.type == "map":
            kind = ["map", SPECIAL.get(field.map_value, field.map_value)]
        flags = ("r" if field.repeated else "") + ("k" if facts.pointer or not facts.omitempty else "")
        fields.append([field.number, facts.json_name, kind, flags])
    return fields


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: python -m kubesim.server.protogen <k8s.io/api dir> <k8s.io/apimachinery dir>",
            file=sys.stderr,
        )
        return 2
    table = generate(Path(argv[0]), Path(argv[1]))
    json.dump(table, sys.stdout, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
