"""GET, PUT and PATCH on `…/{name}/scale` for every kind that declares `ResourceType.scale`: the
apiserver's Scale view, written back as the object's spec replicas (so admission, CRD validation,
generation and managedFields apply as to any write; the manager's entry names subresource `scale`)."""

from __future__ import annotations

from typing import Any

from kubesim import scale
from kubesim.errors import ApiError, conflict, method_not_allowed, unsupported_media_type
from kubesim.patch import json_patch, merge_patch
from kubesim.resources import ResourceType, ScalePaths
from kubesim.server.negotiation import decode_body
from kubesim.server.types import ApiRequest, Backend, Response, json_response
from kubesim.store import WriteOptions


def serve(server: Backend, request: ApiRequest, resource: ResourceType, options: WriteOptions) -> Response:
    paths = resource.scale
    assert paths is not None
    name, namespace = request.route.name, request.route.namespace
    if request.method == "GET":
        return json_response(200, scale.scale_of(server.store.get(resource, name, namespace), paths))
    if request.method == "PUT":
        body = decode_body(request.body, request.headers.get("content-type")).document
        return _write(server, resource, paths, name, namespace, lambda _current: body, options)
    if request.method == "PATCH":
        decoded = decode_body(request.body, request.headers.get("content-type"), patch=True)
        document, patch_type = decoded.document, decoded.patch_type
        if patch_type == "apply":
            raise unsupported_media_type("application/apply-patch+yaml (on the scale subresource)")

        def patched(current: dict[str, Any]) -> Any:
            return json_patch(current, document) if patch_type == "json" else merge_patch(current, document)

        return _write(server, resource, paths, name, namespace, patched, options)
    raise method_not_allowed(request.method)


def _write(
    server: Backend,
    resource: ResourceType,
    paths: ScalePaths,
    name: str,
    namespace: str | None,
    wanted: Any,
    options: WriteOptions,
) -> Response:
    """Read, compute the new Scale from the current one, store the replicas; a Scale that names a
    resourceVersion is a precondition (409 if stale), one without is retried on concurrent writes."""
    for _attempt in range(20):
        obj = server.store.get(resource, name, namespace)
        body = wanted(scale.scale_of(obj, paths))
        replicas = scale.desired_replicas(body, name)
        given = (body.get("metadata") or {}).get("resourceVersion")
        if given and given != obj["metadata"]["resourceVersion"]:
            raise conflict(resource.plural, resource.group, name)
        try:
            stored = server.store.update(
                scale.with_replicas(obj, paths, replicas),
                resource=resource,
                namespace=namespace,
                subresource="scale",
                options=options,
            )
        except ApiError as error:
            if error.code != 409 or given:
                raise
            continue
        return json_response(200, scale.scale_of(stored, paths))
    raise conflict(resource.plural, resource.group, name, "too many concurrent writers")
