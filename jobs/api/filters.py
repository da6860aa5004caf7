"""Query filters of /api/jobs/: namespace, group, kind, phase and name, checked like any other input."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request

from jobs import apigroups
from jobs.frameworks import kinds
from jobs.status import CONDITION_TYPES
from kube import names
from kube.api import name_field, query_values


class TrainingJobFilterSet(serializers.Serializer):
    """`?namespace=team-a&kind=TFJob&phase=Running&name=mnist`; deleted jobs only with `deleted=true`;
    `api_group=kubeflow.org` for Kubeflow's v1 jobs only."""

    namespace = name_field(names.NameFormat.LABEL, required=False)
    api_group = serializers.ChoiceField(choices=list(apigroups.GROUPS), required=False)
    kind = serializers.ChoiceField(choices=kinds(), required=False)
    phase = serializers.ChoiceField(choices=CONDITION_TYPES, required=False)
    name = name_field(names.NameFormat.SUBDOMAIN, required=False)
    deleted = serializers.BooleanField(required=False, default=False)

    @classmethod
    def filter(cls, request: Request, queryset: QuerySet) -> QuerySet:
        """`queryset` narrowed by the request's query parameters; a bad value is a 400 naming it."""
        params = cls(data=query_values(request))
        params.is_valid(raise_exception=True)
        values = dict(params.validated_data)
        queryset = queryset.filter(deleted_at__isnull=not values.pop("deleted"))
        return queryset.filter(**values)
