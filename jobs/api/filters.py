"""Query filters of /api/jobs/: namespace, group, kind, phase and name, checked like any other input."""

from __future__ import annotations

from rest_framework import serializers

from jobs import apigroups
from jobs.frameworks import kinds
from jobs.status import CONDITION_TYPES
from web.api import MirrorFilterSet


class TrainingJobFilterSet(MirrorFilterSet):
    """`?namespace=team-a&kind=TFJob&phase=Running&name=mnist`; deleted jobs only with `deleted=true`;
    `api_group=kubeflow.org` for Kubeflow's v1 jobs only."""

    api_group = serializers.ChoiceField(choices=list(apigroups.GROUPS), required=False)
    kind = serializers.ChoiceField(choices=kinds(), required=False)
    phase = serializers.ChoiceField(choices=CONDITION_TYPES, required=False)
