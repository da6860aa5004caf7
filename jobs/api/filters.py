"""Query filters of /api/jobs/: namespace, kind, phase and name, checked like any other input."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request

from jobs.frameworks import kinds
from jobs.status import CONDITION_TYPES


class TrainingJobFilterSet(serializers.Serializer):
    """`?namespace=team-a&kind=TFJob&phase=Running&name=mnist`; deleted jobs only with `deleted=true`."""

    namespace = serializers.CharField(required=False, max_length=63)
    kind = serializers.CharField(required=False)
    phase = serializers.ChoiceField(choices=CONDITION_TYPES, required=False)
    name = serializers.CharField(required=False, max_length=253)
    deleted = serializers.BooleanField(required=False, default=False)

    def validate_kind(self, value: str) -> str:
        if value not in kinds():
            raise serializers.ValidationError(f"must be one of {', '.join(kinds())}, not {value!r}.")
        return value

    @classmethod
    def filter(cls, request: Request, queryset: QuerySet) -> QuerySet:
        """`queryset` narrowed by the request's query parameters; a bad value is a 400 naming it."""
        params = cls(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        queryset = queryset.filter(deleted_at__isnull=not values.pop("deleted"))
        return queryset.filter(**values)
