"""The caller's own reach: which namespaces they may read and change."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from ..scopes import request_scope

NamespaceAccessSerializer = inline_serializer(
    name="NamespaceAccess",
    fields={
        "everywhere": serializers.BooleanField(help_text="A superuser may act in every namespace."),
        "namespaces": serializers.ListField(
            child=inline_serializer(
                name="NamespaceRole",
                fields={"namespace": serializers.CharField(), "role": serializers.CharField()},
            )
        ),
    },
)


class OneObjectSchema(AutoSchema):
    """`list` answers one object (the caller's reach), not an array of them as a list usually does."""

    def _is_list_view(self, serializer: Any = None) -> bool:
        return False


class NamespaceGrantViewSet(viewsets.ViewSet):
    """Lists the namespaces the authenticated user was granted, with the strongest role in each."""

    schema = OneObjectSchema()

    @extend_schema(responses=NamespaceAccessSerializer)
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        scope = request_scope(request)
        namespaces = [
            {"namespace": name, "role": "editor" if name in scope.writable else "viewer"}
            for name in sorted(scope.readable)
        ]
        return Response({"everywhere": scope.everywhere, "namespaces": namespaces})
