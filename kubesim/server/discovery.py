"""Discovery documents (/version, /api, /apis, resource lists) and the OpenAPI v3 that kubectl reads.

The OpenAPI v3 lists every resource path with its operations tagged by `x-kubernetes-group-version-kind` and
`fieldValidation` on writes (so kubectl validates server-side), the built-in kinds' upstream schemas
(kubesim.openapi: `kubectl explain pod.spec`, and the patch merge keys kubectl's strategic merge patches use)
and the CRD schemas.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubesim.openapi import catalog, v3
from kubesim.resources import Registry, ResourceType

KUBERNETES_VERSION = {"major": "1", "minor": "37"}
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_WRITE_PARAMS = ["dryRun", "fieldManager", "fieldValidation"]


_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "token": ["create"],
    "log": ["get"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
    "proxy": ["create", "delete", "get", "patch", "update"],
    "eviction": ["create"],
    "ephemeralcontainers": ["get", "patch", "update"],
}
# Subresources whose requests and answers are another kind than their resource's (group, version, kind).
_SUBRESOURCE_KINDS = {"scale": ("autoscaling", "v1", "Scale"), "eviction": ("policy", "v1", "Eviction")}


def version_info() -> dict[str, str]:
    return {
        **KUBERNETES_VERSION,
        "gitVersion": "v1.37.0-kubesim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    served = [r for r in registry.all() if r.group == group and version in r.versions]
    if not served:
        return None
    resources = []
    for resource in sorted(served, key=lambda r: r.plural):
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": list(resource.verbs) or _VERBS,
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        resources.append(entry)
        for sub in resource.subresources:
            verbs = _SUBRESOURCE_VERBS.get(sub, ["update"])
            entry = {
                "name": f"{resource.plural}/{sub}",
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": verbs,
            }
            if sub == "proxy":  # PodProxyOptions, ServiceProxyOptions
                entry["kind"] = f"{resource.kind}ProxyOptions"
            if sub in _SUBRESOURCE_KINDS:  # kubectl's scale client and drain read the kind from here
                group_name, kind_version, kind = _SUBRESOURCE_KINDS[sub]
                entry.update(group=group_name, version=kind_version, kind=kind)
            resources.append(entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": _group_version(group, version),
        "resources": resources,
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group_entry(g, vs) for g, vs in sorted(registry.group_versions().items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def group(registry: Registry, name: str) -> dict[str, Any] | None:
    versions = registry.group_versions().get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(name, versions)}


# --- OpenAPI v3 ---------------------------------------------------------------------------------------


def _prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def openapi_index(registry: Registry) -> dict[str, Any]:
    """`/openapi/v3`: each group-version's document with a hash of its content, as kubectl caches them."""
    paths = {}
    for group_name, versions in registry.group_versions().items():
        for version in versions:
            relative = _prefix(group_name, version).lstrip("/")
            parts = _document_parts(registry, group_name, version)
            if parts is None:
                continue
            own, builtin = parts
            content = hashlib.sha256(json.dumps(own, sort_keys=True).encode())
            content.update(v3.digest(builtin).encode())
            paths[relative] = {
                "serverRelativeURL": f"/openapi/v3/{relative}?hash={content.hexdigest()[:16].upper()}"
            }
    return {"paths": paths}


def _gvk(resource: ResourceType, version: str) -> dict[str, str]:
    return {"group": resource.group, "version": version, "kind": resource.kind}


def _operation(
    resource: ResourceType, version: str, action: str, params: list[str], body_types: list[str] | None = None
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": f"{action}{resource.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(resource, version),
        "parameters": [
            {"name": p, "in": "query", "schema": {"type": "string"}, "uniqueItems": True} for p in params
        ],
        "responses": {
            "200": {
                "description": "OK",
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{_schema_name(resource, version)}"}
                    }
                },
            }
        },
    }
    if body_types:
        operation["requestBody"] = {
            "content": {t: {"schema": {"type": "object"}} for t in body_types},
            "required": True,
        }
    return operation


def _schema_name(resource: ResourceType, version: str) -> str:
    """The kind's component name: the upstream definition's for a built-in kind (`io.k8s.api.apps.v1.
    Deployment`), the reversed group otherwise (`io.argoml.v1alpha1.TFJob`), as the API server names them."""
    if resource.builtin and (known := catalog.definition_name(resource.group, version, resource.kind)):
        return known
    reversed_group = ".".join(reversed(resource.group.split("."))) if resource.group else "io.k8s.api.core"
    return f"{reversed_group}.{version}.{resource.kind}"


def _paths(resource: ResourceType, version: str) -> dict[str, Any]:
    base = _prefix(resource.group, version)
    collection = (
        f"{base}/namespaces/{{namespace}}/{resource.plural}"
        if resource.namespaced
        else f"{base}/{resource.plural}"
    )
    patch_types = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ]
    if resource.builtin:
        patch_types.append("application/strategic-merge-patch+json")
    item = {
        "get": _operation(resource, version, "get", []),
        "put": _operation(resource, version, "put", _WRITE_PARAMS, ["application/json"]),
        "patch": _operation(resource, version, "patch", [*_WRITE_PARAMS, "force"], patch_types),
        "delete": _operation(
            resource, version, "delete", ["dryRun", "propagationPolicy", "gracePeriodSeconds"]
        ),
    }
    listing = {
        "get": _operation(
            resource,
            version,
            "list",
            [
                "labelSelector",
                "fieldSelector",
                "limit",
                "continue",
                "watch",
                "resourceVersion",
                "timeoutSeconds",
            ],
        ),
        "post": _operation(resource, version, "post", _WRITE_PARAMS, ["application/json"]),
        "delete": _operation(resource, version, "deletecollection", ["labelSelector", "fieldSelector"]),
    }
    paths = {collection: listing, f"{collection}/{{name}}": item}
    for sub in resource.subresources:
        # only the operations its discovery verbs allow (pods/exec is get and post, never put or patch)
        verbs = _SUBRESOURCE_VERBS.get(sub, ["update"])
        operations = {
            "get": _operation(resource, version, "get", []),
            "post": _operation(resource, version, "post", _WRITE_PARAMS, ["application/json"]),
            "put": _operation(resource, version, "put", _WRITE_PARAMS, ["application/json"]),
            "patch": _operation(resource, version, "patch", [*_WRITE_PARAMS, "force"], patch_types),
        }
        allowed = {"get": "get", "post": "create", "put": "update", "patch": "patch"}
        paths[f"{collection}/{{name}}/{sub}"] = {
            method: operation for method, operation in operations.items() if allowed[method] in verbs
        }
    return paths


def _document_parts(
    registry: Registry, group_name: str, version: str
) -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """A group-version's paths and custom schemas, and the built-in definitions it takes from the catalog."""
    served = [r for r in registry.all() if r.group == group_name and version in r.versions]
    if not served:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    builtin: set[str] = set()
    for resource in sorted(served, key=lambda r: r.plural):
        paths.update(_paths(resource, version))
        name = _schema_name(resource, version)
        if resource.builtin and catalog.definition_name(resource.group, version, resource.kind):
            builtin.add(name)
            continue
        schema = dict(
            resource.schema(version) or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        )
        # a kind without upstream schema stays anonymous: kubectl then patches it with its compiled-in types
        if not resource.builtin:
            schema["x-kubernetes-group-version-kind"] = [_gvk(resource, version)]
        schemas[name] = schema
    return {"paths": paths, "schemas": schemas}, tuple(sorted(builtin))


def openapi_document(registry: Registry, group_name: str, version: str) -> dict[str, Any] | None:
    parts = _document_parts(registry, group_name, version)
    if parts is None:
        return None
    own, builtin = parts
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.37.0-kubesim"},
        "paths": own["paths"],
        "components": {"schemas": {**v3.components(builtin), **own["schemas"]}},
    }


# --- OpenAPI v2 -----------------------------------------------------------------------------------------

OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def _protobuf_field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (lengths here stay below 128, so one varint byte)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


def openapi_v2_protobuf() -> bytes:
    """An empty swagger 2.0 document in gnostic's protobuf form (swagger=1, info=2 with title=1, version=2).

    kubectl falls back to it for client-side validation when the OpenAPI v3 does not (yet) know a kind, e.g.
    a custom resource applied in the same file as its CRD; with no definitions it skips that validation,
    as it does on a real cluster for kinds the schema does not describe.
    """
    info = _protobuf_field(1, b"Kubernetes") + _protobuf_field(2, b"v1.37.0-kubesim")
    return _protobuf_field(1, b"2.0") + _protobuf_field(2, info)


def openapi_v2_json() -> dict[str, Any]:
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.37.0-kubesim"}, "paths": {}}
