"""The DRF permission every namespaced API uses, and the mixin that scopes its querysets.

The control plane's service account can reach every namespace, so the request is the only place where a
user's reach is enforced: on lists (queryset filter), on objects (their namespace), and on writes that name
a namespace in the body.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import exceptions, permissions
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.views import APIView

from .models import Role
from .scopes import filter_readable, request_scope


def namespace_in_body(data: Any) -> str | None:
    """The namespace a write names: `namespace` or a manifest's `metadata.namespace`."""
    if not isinstance(data, dict):
        return None
    metadata = data.get("metadata")
    named = {"namespace": data.get("namespace")}
    if isinstance(metadata, dict):
        named["metadata.namespace"] = metadata.get("namespace")
    for field, value in named.items():
        # Checked before the values meet a set: a list or an object in either place is a 400, not a 500.
        if value is not None and not isinstance(value, str):
            raise exceptions.ValidationError({field: ["Must be a string."]})
    present = {value for value in named.values() if value}
    if len(present) > 1:
        raise exceptions.ValidationError({"namespace": ["namespace and metadata.namespace disagree."]})
    return present.pop() if present else None


def require_namespace(request: Request, namespace: str, role: Role) -> None:
    """Raise 403 unless the user may act in `namespace` with `role`."""
    if not request_scope(request).allows(namespace, role):
        verb = "change" if role == Role.EDITOR else "read"
        raise exceptions.PermissionDenied(f"You may not {verb} resources in namespace {namespace!r}.")


class NamespacePermission(permissions.BasePermission):
    """Authenticated; reads need viewer, writes need editor on the object's (or the body's) namespace."""

    message = "You have no access to this namespace."

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method == "POST":
            namespace = namespace_in_body(request.data)
            if namespace is not None:
                require_namespace(request, namespace, Role.EDITOR)
        return True

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        role = Role.VIEWER if request.method in permissions.SAFE_METHODS else Role.EDITOR
        namespace = getattr(obj, "namespace", None)
        if namespace is None or not request_scope(request).can_read(namespace):
            # Objects outside the user's reach are not found, so their names do not leak.
            raise exceptions.NotFound()
        if request.method in ("PUT", "PATCH"):
            moved_to = namespace_in_body(request.data)
            if moved_to is not None and moved_to != namespace:
                raise exceptions.ValidationError(
                    {"namespace": ["The namespace of a resource cannot change."]}
                )
        return request_scope(request).allows(namespace, role)


class EditorSomewhere(permissions.BasePermission):
    """Authenticated, and an editor of at least one namespace; decided from the user's grants alone, before
    the request's body is read. For work that creates nothing but is worth doing only for someone who could
    submit its result somewhere (transpiling a pipeline is pure, but not cheap); list it before
    NamespacePermission, which then holds a namespace named in the body to the editor role."""

    message = (
        "You are an editor of no namespace: pipelines are transpiled (and submitted) only for a user who "
        "may submit them somewhere."
    )

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        scope = request_scope(request)
        return scope.everywhere or bool(scope.writable)


class NamespaceScopedMixin(GenericAPIView):
    """For viewsets over a model with a `namespace` column: list and detail only what the user may read."""

    namespace_field = "namespace"
    permission_classes = [NamespacePermission]

    def scope_queryset(self, queryset: QuerySet) -> QuerySet:
        return filter_readable(queryset, request_scope(self.request), self.namespace_field)
