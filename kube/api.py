"""REST API pieces every app's mirror endpoints share: history rows, list filters, list pages with no
COUNT(*), DELETE as a deletion in the cluster, and the answers the API gives when the cluster refuses or
does not take a request."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from kube.errors import AlreadyExists, ApiError, Invalid
from kube.models import HISTORY_FIELDS


# A MirrorHistory row (read-only); subclasses name the model in `class Meta(HistorySerializer.Meta)`.
# A comment, not a docstring: drf-spectacular would publish a docstring as every subclass's description.
class HistorySerializer(serializers.ModelSerializer):
    class Meta:
        fields = HISTORY_FIELDS
        read_only_fields = HISTORY_FIELDS


class MirrorFilterSet(serializers.Serializer):
    """Query parameters of a mirror's list, checked like any other input: `?namespace=&name=` (exact), and
    deleted resources only with `deleted=true`. Subclasses add fields named like the model's columns."""

    namespace = serializers.CharField(required=False, max_length=63)
    name = serializers.CharField(required=False, max_length=253)
    deleted = serializers.BooleanField(required=False, default=False)

    @classmethod
    def filter(cls, request: Request, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """`queryset` narrowed by the request's query parameters; a bad value is a 400 naming it."""
        params = cls(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        queryset = queryset.filter(deleted_at__isnull=not values.pop("deleted"))
        return queryset.filter(**values)


class NewestFirst(CursorPagination):
    """Stable pages over a growing table, with no COUNT(*): newest first (the id breaks ties)."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500


class ClusterUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The cluster did not accept the request; try again later."
    default_code = "cluster_unavailable"


def submit_refusal(error: ApiError) -> exceptions.APIException:
    """What the API answers when the cluster refuses a submitted manifest: a taken name or the fields the
    apiserver (or an admission webhook) named are 400s the user can fix; anything else is a 503."""
    if isinstance(error, AlreadyExists):
        return exceptions.ValidationError({"metadata.name": [str(error)]})
    if isinstance(error, Invalid):
        causes = {cause.get("field") or "non_field_errors": [cause.get("message")] for cause in error.causes}
        return exceptions.ValidationError(causes or {"non_field_errors": [str(error)]})
    return ClusterUnavailable(str(error))


class DeleteInClusterMixin:
    """DELETE deletes the resource from the cluster and answers 202; the row stays (marked deleted once the
    mirror sees it go), so deleting it again changes nothing. Viewsets say how in `delete_in_cluster`."""

    def delete_in_cluster(self, row: Any) -> None:
        raise NotImplementedError

    @extend_schema(responses={202: None})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        row = self.get_object()  # type: ignore[attr-defined]
        if row.deleted_at is None:
            try:
                self.delete_in_cluster(row)
            except ApiError as error:
                raise ClusterUnavailable(str(error)) from error
        return Response(status=status.HTTP_202_ACCEPTED)
