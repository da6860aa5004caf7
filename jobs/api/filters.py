"""Query filters of /api/jobs/: namespace, kind, phase and name, checked like any other input."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request

from jobs.frameworks import kinds
from jobs.status import CONDITION_TYPES
from kube.api import DNS_1123_LABEL, DNS_1123_SUBDOMAIN, query_values


class TrainingJobFilterSet(serializers.Serializer):
    """`?namespace=team-a&kind=TFJob&phase=Running&name=mnist`; deleted jobs only with `deleted=true`."""

    namespace = serializers.RegexField(DNS_1123_LABEL, required=False, max_length=63)
    kind = serializers.ChoiceField(choices=kinds(), required=False)
    phase = serializers.ChoiceField(choices=CONDITION_TYPES, required=False)
    name = serializers.RegexField(DNS_1123_SUBDOMAIN, required=False, max_length=253)
    deleted = serializers.BooleanField(required=False, default=False)

    @classmethod
    def filter(cls, request: Request, queryset: QuerySet) -> QuerySet:
        """`queryset` narrowed by the request's query parameters; a bad value is a 400 naming it."""
        params = cls(data=query_values(request))
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        queryset = queryset.filter(deleted_at__isnull=not values.pop("deleted"))
        return queryset.filter(**values)
