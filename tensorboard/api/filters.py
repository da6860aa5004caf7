"""Query filters of /api/tensorboards/: namespace, phase, source and name, checked like any other input."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request

from tensorboard.actions import SOURCE_KINDS
from tensorboard.status import FAILED, PENDING, READY


class TensorboardFilterSet(serializers.Serializer):
    """`?namespace=team-a&phase=Ready&source_kind=Workflow&source_name=mnist&name=mnist`; deleted
    instances only with `deleted=true`."""

    namespace = serializers.CharField(required=False, max_length=63)
    phase = serializers.ChoiceField(choices=(PENDING, READY, FAILED), required=False)
    source_kind = serializers.ChoiceField(choices=sorted(SOURCE_KINDS), required=False)
    source_name = serializers.CharField(required=False, max_length=253)
    name = serializers.CharField(required=False, max_length=253)
    deleted = serializers.BooleanField(required=False, default=False)

    @classmethod
    def filter(cls, request: Request, queryset: QuerySet) -> QuerySet:
        """`queryset` narrowed by the request's query parameters; a bad value is a 400 naming it."""
        params = cls(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        queryset = queryset.filter(deleted_at__isnull=not values.pop("deleted"))
        return queryset.filter(**values)
