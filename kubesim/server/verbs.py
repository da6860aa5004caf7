"""The resource verbs over HTTP: get, list, watch, create, update, patch, delete, deletecollection."""

from __future__ import annotations

import json
from typing import Any

from kubesim import table
from kubesim.errors import (
    ApiError,
    bad_request,
    gone,
    method_not_allowed,
    path_not_found,
    unsupported_media_type,
)
from kubesim.patch import patched
from kubesim.resources import ResourceType, View
from kubesim.selectors import Selector, parse_field_selector, parse_label_selector
from kubesim.server import protobuf, scale
from kubesim.server.negotiation import decode_body, media_type
from kubesim.server.types import ApiRequest, Backend, Response, json_response
from kubesim.server.watchstream import error_event, stream_events
from kubesim.store import BACKGROUND, DELETED, WriteOptions

_DEFAULT_WATCH_TIMEOUT = 1800.0


def partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}


def present(obj: dict[str, Any], resource: ResourceType, version: str) -> dict[str, Any]:
    """The stored object as served at `version` (same fields, that version's apiVersion), or in the shape
    of the view it is requested through."""
    if resource.view is not None:
        return resource.view.to_view(obj)
    if version == resource.storage_version:
        return obj
    conversion = resource.conversions.get(version)
    shown = conversion.to_version(obj) if conversion is not None else obj
    return {**shown, "apiVersion": resource.api_version(version)}


def _stored(server: Backend, resource: ResourceType) -> ResourceType:
    """Where the resource's objects are kept: itself, or for a view the resource it shows."""
    if resource.view is None:
        return resource
    stored = server.store.registry.by_key(resource.view.stored_as)
    assert stored is not None, f"{resource.key} is a view of {resource.view.stored_as}, which is not served"
    return stored


def _field_selector(resource: ResourceType, text: str | None) -> Selector:
    """The request's field selector; through a view it applies to the view's shape of each object."""
    fields = parse_field_selector(text, resource.field_labels)
    return fields if resource.view is None else resource.view.selector(fields)


def _selectors(request: ApiRequest, resource: ResourceType, *, name: str = "") -> tuple[Selector, Selector]:
    """The request's label and field selectors; with a `name`, the field selector also selects it."""
    query = request.query
    labels, fields = (
        parse_label_selector(query.get("labelSelector")),
        _field_selector(resource, query.get("fieldSelector")),
    )
    if name:
        fields = _field_selector(
            resource, ",".join(filter(None, [query.get("fieldSelector"), f"metadata.name={name}"]))
        )
    return labels, fields


def _shown(obj: dict[str, Any], resource: ResourceType) -> dict[str, Any]:
    """The object in the shape its table columns read."""
    return obj if resource.view is None else resource.view.to_view(obj)


def _namespace(request: ApiRequest) -> str | None:
    return request.route.namespace


def _write_options(request: ApiRequest, duplicate_fields: list[str] | None = None) -> WriteOptions:
    """The write's query options; `duplicate_fields` are those the body repeats (warned of or refused)."""
    query = request.query
    dry_run = query.get("dryRun")
    if dry_run and dry_run != "All":
        raise bad_request(f'dryRun: Unsupported value: "{dry_run}": supported values: "All"')
    validation = query.get("fieldValidation", "Warn") or "Warn"
    if validation not in ("Ignore", "Warn", "Strict"):
        raise bad_request(
            f'fieldValidation: Unsupported value: "{validation}": '
            'supported values: "Ignore", "Warn", "Strict"'
        )
    agent = request.headers.get("user-agent", "")
    return WriteOptions(
        dry_run=bool(dry_run),
        field_manager=query.get("fieldManager") or agent.split("/")[0],
        field_validation=validation,
        force=query.flag("force"),
        version=request.route.version,
        user_agent=agent,
        user=request.user,
        duplicate_fields=[] if duplicate_fields is None else duplicate_fields,
    )


def _stored_shape(resource: ResourceType, body: dict[str, Any]) -> dict[str, Any]:
    """A written object as it is stored: through a view, in the shape of the resource behind it."""
    return body if resource.view is None else resource.view.from_view(body)


def _written(status: int, obj: dict[str, Any], request: ApiRequest, options: WriteOptions) -> Response:
    assert request.resource is not None
    headers = [("Warning", warning_header(w)) for w in options.warnings]
    return json_response(status, present(obj, request.resource, request.route.version), headers)


def warning_header(text: str) -> str:
    """A `Warning: 299 - "text"` value; quotes and backslashes escaped as in an RFC 7230 quoted-string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


def _check_body(request: ApiRequest, body: Any, *, check_name: bool) -> dict[str, Any]:
    resource = request.resource
    assert resource is not None
    if not isinstance(body, dict):
        raise bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): not a JSON object"
        )
    expected = resource.api_version(request.route.version)
    if body.get("apiVersion") not in (None, expected):
        raise bad_request(
            f"the API version in the data ({body.get('apiVersion')}) "
            f"does not match the expected API version ({expected})"
        )
    if body.get("kind") not in (None, resource.kind):
        raise bad_request(
            f"the kind in the data ({body.get('kind')}) does not match the expected kind ({resource.kind})"
        )
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object")
    given_namespace = metadata.get("namespace")
    if resource.namespaced and given_namespace and given_namespace != request.route.namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if check_name and metadata.get("name") and metadata["name"] != request.route.name:
        raise bad_request(
            f"the name of the object ({metadata['name']}) does "
            f"not match the name on the URL ({request.route.name})"
        )
    return body


def get(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    obj = server.store.get_snapshot(_stored(server, resource), request.route.name, _namespace(request))
    if request.accept.table:
        document = table.table(
            resource,
            request.route.version,
            [_shown(obj, resource)],
            {"resourceVersion": obj["metadata"]["resourceVersion"]},
            server.store.clock.now(),
            request.query.get("includeObject", "Metadata"),
        )
        return json_response(200, document)
    if request.accept.metadata_only:
        return json_response(200, partial(obj))
    return json_response(200, present(obj, resource, request.route.version))


def list_(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    query = request.query
    labels, fields = _selectors(request, resource)
    limit = query.integer("limit")
    page = server.store.list_page(
        _stored(server, resource),
        _namespace(request),
        labels,
        fields,
        limit if limit and limit > 0 else None,
        query.get("continue") or None,
    )
    version = request.route.version
    if request.accept.table:
        document = table.table(
            resource,
            version,
            [_shown(item, resource) for item in page.items],
            page.list_metadata(),
            server.store.clock.now(),
            query.get("includeObject", "Metadata"),
        )
        return json_response(200, document)
    if request.accept.metadata_only:
        items = [partial(item) for item in page.items]
        listing = {
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": page.list_metadata(),
        }
        return json_response(200, {**listing, "items": items})
    items = [present(item, resource, version) for item in page.items]
    return json_response(
        200,
        {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version(version),
            "metadata": page.list_metadata(),
            "items": items,
        },
    )


def watch(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    query = request.query
    labels, fields = _selectors(request, resource, name=request.route.name)  # legacy /watch/.../{name}
    timeout = query.integer("timeoutSeconds")
    version = request.route.version
    facts = request.facts
    if server.faults.take("expire_watch", facts) is not None:
        return Response(200, iter([error_event(gone("too old resource version: injected fault"))]))
    drop = server.faults.take("drop_watch", facts)
    initial = query.flag("sendInitialEvents")
    resource_version = "" if initial else (query.get("resourceVersion") or None)
    try:
        watcher = server.store.open_watch(
            _stored(server, resource), _namespace(request), resource_version, labels, fields
        )
    except ApiError as error:
        if error.code == 410:
            return Response(200, iter([error_event(error)]))
        raise

    first_row = [True]  # like the apiserver, only the first Table of a stream carries column definitions

    def encode(event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        if request.accept.table:
            include = query.get("includeObject", "Metadata" if event_type != DELETED else "Object")
            with_definitions, first_row[0] = first_row[0], False
            return table.table(
                resource,
                version,
                [_shown(obj, resource)],
                {"resourceVersion": obj["metadata"]["resourceVersion"]},
                server.store.clock.now(),
                include,
                with_definitions=with_definitions,
            )
        if request.accept.metadata_only:
            return partial(obj)
        return present(obj, resource, version)

    chunks = stream_events(
        server.store,
        watcher,
        encode,
        timeout=float(timeout) if timeout else _DEFAULT_WATCH_TIMEOUT,
        bookmarks=query.flag("allowWatchBookmarks"),
        bookmark_interval=server.bookmark_interval,
        drop_after=drop.after_events if drop else None,
        initial_events_end=initial and query.flag("allowWatchBookmarks"),
    )
    return Response(200, chunks)


def create(server: Backend, request: ApiRequest) -> Response:
    if request.route.name:
        raise method_not_allowed("POST")
    resource = request.resource
    assert resource is not None
    decoded = decode_body(request.body, request.headers.get("content-type"))
    body = _check_body(request, decoded.document, check_name=False)
    options = _write_options(request, decoded.duplicate_fields)
    obj = server.store.create(
        _stored_shape(resource, body),
        request.route.namespace,
        resource=_stored(server, resource),
        options=options,
    )
    return _written(201, obj, request, options)


def update(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    decoded = decode_body(request.body, request.headers.get("content-type"))
    body = _check_body(request, decoded.document, check_name=True)
    body.setdefault("metadata", {})["name"] = request.route.name
    options = _write_options(request, decoded.duplicate_fields)
    obj = server.store.update(
        _stored_shape(resource, body),
        resource=_stored(server, resource),
        namespace=request.route.namespace,
        subresource=request.route.subresource,
        options=options,
    )
    return _written(200, obj, request, options)


def patch(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    decoded = decode_body(request.body, request.headers.get("content-type"), patch=True)
    document, patch_type = decoded.document, decoded.patch_type
    options = _write_options(request, decoded.duplicate_fields)
    if patch_type == "apply" and not request.query.get("fieldManager"):
        raise bad_request("fieldManager is required for apply requests")
    if patch_type != "apply" and request.query.get("force"):
        raise bad_request("force is only allowed for apply patches")
    if resource.view is not None:
        return _patch_view(server, request, resource, resource.view, document, patch_type, options)
    existed = server.store.exists(resource, request.route.name, request.route.namespace)
    obj = server.store.patch(
        resource,
        request.route.name,
        document,
        patch_type=patch_type,
        namespace=request.route.namespace,
        subresource=request.route.subresource,
        options=options,
    )
    return _written(200 if existed or patch_type != "apply" else 201, obj, request, options)


def _patch_view(
    server: Backend,
    request: ApiRequest,
    resource: ResourceType,
    view: View,
    document: Any,
    patch_type: str,
    options: WriteOptions,
) -> Response:
    """A patch through a view applies to the view's shape of the object, which is then stored back."""
    if patch_type == "apply":
        raise unsupported_media_type("application/apply-patch+yaml (through the core v1 view of Events)")
    if patch_type == "merge" and not isinstance(document, dict):
        raise bad_request("merge patch: the patch must be a JSON object")

    def change(stored: dict[str, Any]) -> dict[str, Any]:
        return view.from_view(patched(view.to_view(stored), document, patch_type, resource.patch_meta))

    obj = server.store.mutate(
        _stored(server, resource),
        request.route.name,
        change,
        namespace=request.route.namespace,
        field_manager=options.field_manager,
    )
    return _written(200, obj, request, options)


def _delete_options(request: ApiRequest) -> dict[str, Any]:
    """The DeleteOptions body: JSON, or protobuf as typed clients send it (`kubectl drain
    --disable-eviction`); a body without a content type is read as JSON."""
    if not request.body.strip():
        return {}
    if media_type(request.headers.get("content-type")) == protobuf.MEDIA_TYPE:
        body = decode_body(request.body, request.headers.get("content-type")).document
    else:
        try:
            body = json.loads(request.body)
        except ValueError as error:
            raise bad_request(f"DeleteOptions: could not decode the body: {error}") from None
    if not isinstance(body, dict):
        raise bad_request("DeleteOptions must be a JSON object")
    return body


def _propagation(request: ApiRequest, options: dict[str, Any]) -> str | None:
    policy = request.query.get("propagationPolicy") or options.get("propagationPolicy")
    orphan = options.get("orphanDependents")
    if request.query.get("orphanDependents"):
        orphan = request.query.flag("orphanDependents")
    if policy is None and orphan is not None:
        policy = "Orphan" if orphan else BACKGROUND
    return policy


def delete(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    body = _delete_options(request)
    options = _write_options(request)
    if body.get("dryRun"):
        options.dry_run = True
    preconditions = body.get("preconditions") or {}
    grace = request.query.integer("gracePeriodSeconds")
    if grace is None and body.get("gracePeriodSeconds") is not None:
        grace = int(body["gracePeriodSeconds"])
    obj = server.store.delete(
        _stored(server, resource),
        request.route.name,
        request.route.namespace,
        propagation=_propagation(request, body),
        preconditions=preconditions,
        grace_period_seconds=grace,
        options=options,
    )
    still_there = server.store.exists(_stored(server, resource), request.route.name, request.route.namespace)
    if still_there or resource.return_deleted_object or options.dry_run:
        return json_response(200, present(obj, resource, request.route.version))
    details = {"name": request.route.name, "kind": resource.plural, "uid": obj["metadata"]["uid"]}
    if resource.group:
        details["group"] = resource.group
    return json_response(
        200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
    )


def delete_collection(server: Backend, request: ApiRequest) -> Response:
    resource = request.resource
    assert resource is not None
    body = _delete_options(request)
    options = _write_options(request)
    if resource.view is not None:
        deleted = _delete_through_view(server, request, resource, _propagation(request, body), options)
    else:
        deleted = server.store.delete_collection(
            resource,
            request.route.namespace,
            label_selector=request.query.get("labelSelector") or None,
            field_selector=request.query.get("fieldSelector") or None,
            propagation=_propagation(request, body),
            options=options,
        )
    items = [present(obj, resource, request.route.version) for obj in deleted]
    return json_response(
        200,
        {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version(request.route.version),
            "metadata": {"resourceVersion": server.store.resource_version},
            "items": items,
        },
    )


def _delete_through_view(
    server: Backend,
    request: ApiRequest,
    resource: ResourceType,
    propagation: str | None,
    options: WriteOptions,
) -> list[dict[str, Any]]:
    """DELETE on a view's collection: its selectors apply to the view's shape, as for a list."""
    stored = _stored(server, resource)
    page = server.store.list_page(stored, request.route.namespace, *_selectors(request, resource))
    return server.store.delete_each(stored, page.items, propagation=propagation, options=options)


def dispatch(server: Backend, request: ApiRequest) -> Response:
    """Route a resource request to its verb (subresources other than status go to plug-ins)."""
    resource, route = request.resource, request.route
    assert resource is not None
    if resource.namespaced and route.namespace is None and route.name:
        raise path_not_found(request.path)
    if not resource.namespaced and route.namespace is not None:
        raise path_not_found(request.path)
    if not resource.stored:
        handler = server.subresource_handler(resource, "")
        if handler is None or request.verb not in resource.verbs or route.name or route.subresource:
            raise method_not_allowed(request.method)
        return handler(request)
    if route.subresource == "scale" and resource.scale is not None:
        return scale.serve(server, request, resource, _write_options(request))
    if route.subresource and route.subresource != "status":
        handler = server.subresource_handler(resource, route.subresource)
        if handler is None:
            raise path_not_found(request.path)
        return handler(request)
    if route.subresource == "status" and not resource.has_status:
        raise path_not_found(request.path)
    verbs = {
        "get": get,
        "list": list_,
        "watch": watch,
        "create": create,
        "update": update,
        "patch": patch,
        "delete": delete,
        "deletecollection": delete_collection,
    }
    verb = request.verb
    if (
        verb not in verbs
        or (route.subresource and verb not in ("get", "update", "patch"))
        or (verb in ("update", "patch") and not route.name)
    ):
        raise method_not_allowed(request.method)
    return verbs[verb](server, request)
