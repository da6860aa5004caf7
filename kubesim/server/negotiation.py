"""Content negotiation: which response format a client accepts, which body formats a verb takes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from kubesim.errors import bad_request, not_acceptable, unsupported_media_type
from kubesim.server import protobuf

PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}
_JSONISH = ("application/json", "application/*", "*/*", "application/yaml", "text/plain", "text/*")


@dataclass(frozen=True)
class Accept:
    table: bool = False
    table_version: str = "v1"
    metadata_only: bool = False  # PartialObjectMetadata(List), as client-go's metadata client asks


def _media(value: str) -> tuple[str, dict[str, str]]:
    pieces = [p.strip() for p in value.split(";")]
    params = {}
    for piece in pieces[1:]:
        key, _, param_value = piece.partition("=")
        params[key.strip().lower()] = param_value.strip()
    return pieces[0].lower(), params


def parse_accept(header: str | None) -> Accept:
    """Pick the first acceptable representation; a Table if the client asks for one first. 406 if none."""
    if not header:
        return Accept()
    for entry in header.split(","):
        media, params = _media(entry)
        if media not in _JSONISH:
            continue
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return Accept(table=True, table_version=params.get("v", "v1"))
        if (
            params.get("as") in ("PartialObjectMetadata", "PartialObjectMetadataList")
            and params.get("g") == "meta.k8s.io"
        ):
            return Accept(metadata_only=True)
        if "as" in params:
            continue  # e.g. aggregated discovery: fall back to the next entry
        return Accept()
    raise not_acceptable(header)


def media_type(header: str | None) -> str:
    return _media(header or "")[0]


@dataclass
class Body:
    """A decoded request body: the document, its patch type ("" for a whole object) and the keys a JSON
    object gave twice (the API server's strict decoding reports them as `duplicate field "key"`)."""

    document: Any
    patch_type: str = ""
    duplicate_fields: list[str] = field(default_factory=list)


def _json_noting_duplicates(text: str) -> tuple[Any, list[str]]:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) != len(items):
            seen: set[str] = set()
            for key, _value in items:
                if key in seen:
                    duplicates.append(key)
                seen.add(key)
        return obj

    return json.loads(text, object_pairs_hook=pairs), duplicates


def decode_body(raw: bytes, content_type: str | None, *, patch: bool = False) -> Body:
    """Parse a request body, or raise 400/415 like the apiserver."""
    media = media_type(content_type)
    if patch:
        if media not in PATCH_TYPES:
            raise unsupported_media_type(media or "(none)")
        kind = PATCH_TYPES[media]
    elif media == protobuf.MEDIA_TYPE:
        document = protobuf.decode(raw)
        if document is None:  # a kind with no protobuf form here (custom resources, CRDs): JSON or YAML
            raise unsupported_media_type(media, ("application/json", "application/yaml"))
        return Body(document)
    else:
        if media not in ("application/json", "application/yaml", ""):
            raise unsupported_media_type(media)
        kind = ""
    if not raw.strip():
        raise bad_request("the request body is empty")
    try:
        text = raw.decode()
        if media in ("application/yaml", "application/apply-patch+yaml"):
            return Body(yaml.safe_load(text), kind)
        document, duplicates = _json_noting_duplicates(text)
        return Body(document, kind, duplicates)
    except (UnicodeDecodeError, ValueError, yaml.YAMLError) as error:
        raise bad_request(
            f"the body of the request could not be decoded: {str(error).splitlines()[0]}"
        ) from None


@dataclass(frozen=True)
class Query:
    """The query string as single values (the last one wins, like most apiserver parameters)."""

    values: dict[str, str]

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def flag(self, name: str) -> bool:
        return self.values.get(name, "").lower() in ("1", "true")

    def integer(self, name: str) -> int | None:
        raw = self.values.get(name)
        if raw is None or raw == "":
            return None
        try:
            return int(raw)
        except ValueError:
            raise bad_request(f"{name}: invalid integer {raw!r}") from None
