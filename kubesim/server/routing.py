"""URL paths of the Kubernetes API, parsed into what they address (group, version, namespace, resource...)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    """What a request path addresses. `kind` is resource, discovery, openapi, version, health or unknown."""

    kind: str
    group: str = ""
    version: str = ""
    namespace: str | None = None
    plural: str = ""
    name: str = ""
    subresource: str = ""
    legacy_watch: bool = False
    document: str = ""  # discovery: api, api_version, apis, group, group_version; openapi: v2, v3 or v3 path
    #: the proxy subresource's path below `/proxy` ("" for `…/proxy`, "/" for `…/proxy/`), None otherwise
    proxy_path: str | None = None

    @property
    def template(self) -> str:
        """The route with placeholders, as counters report it: /api/v1/namespaces/{namespace}/pods/{name}."""
        if self.kind != "resource":
            return {
                "discovery": "/" + self.document,
                "openapi": "/openapi/" + self.document.split("/")[0],
            }.get(self.kind, "/" + self.kind)
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.legacy_watch:
            base += "/watch"
        if self.namespace is not None:
            base += "/namespaces/{namespace}"
        base += f"/{self.plural}"
        if self.name:
            base += "/{name}"
        if self.subresource:
            base += f"/{self.subresource}"
        return base


UNKNOWN = Route("unknown")
#: `/api/v1/namespaces/{namespace}/{pods|services}/{name}/proxy[/{path}]`: the rest of the path is the
#: backend's, kept exactly as sent (empty segments, a trailing slash, percent-escapes)
_PROXY = re.compile(r"^/api/(v1)/namespaces/([^/]+)/(pods|services)/([^/]+)/proxy(/.*)?$", re.DOTALL)


def _resource(group: str, version: str, rest: list[str]) -> Route:
    legacy = bool(rest) and rest[0] == "watch"
    if legacy:
        rest = rest[1:]
    if not rest or any(part == "" for part in rest):
        return UNKNOWN
    namespace_subresource = len(rest) == 3 and rest[2] in ("status", "finalize")
    if rest[0] == "namespaces" and len(rest) >= 3 and not namespace_subresource:
        if len(rest) > 5:
            return UNKNOWN
        return Route(
            "resource",
            group,
            version,
            rest[1],
            rest[2],
            rest[3] if len(rest) > 3 else "",
            rest[4] if len(rest) > 4 else "",
            legacy,
        )
    if len(rest) > 3:
        return UNKNOWN
    return Route(
        "resource",
        group,
        version,
        None,
        rest[0],
        rest[1] if len(rest) > 1 else "",
        rest[2] if len(rest) > 2 else "",
        legacy,
    )


def parse(path: str) -> Route:
    if proxied := _PROXY.match(path):
        version, namespace, plural, name, rest = proxied.groups()
        return Route("resource", "", version, namespace, plural, name, "proxy", proxy_path=rest or "")
    parts = path.strip("/").split("/") if path.strip("/") else []
    if not parts:
        return Route("discovery", document="")
    head = parts[0]
    if head == "version" and len(parts) == 1:
        return Route("version")
    if head in ("healthz", "livez", "readyz"):
        return Route("health")
    if head == "openapi" and len(parts) >= 2:
        return Route("openapi", document="/".join(parts[1:]))
    if head == "api":
        if len(parts) == 1:
            return Route("discovery", document="api")
        if len(parts) == 2:
            return Route("discovery", version=parts[1], document="api_version")
        return _resource("", parts[1], parts[2:])
    if head == "apis":
        if len(parts) == 1:
            return Route("discovery", document="apis")
        if len(parts) == 2:
            return Route("discovery", group=parts[1], document="group")
        if len(parts) == 3:
            return Route("discovery", group=parts[1], version=parts[2], document="group_version")
        return _resource(parts[1], parts[2], parts[3:])
    return UNKNOWN
