"""Query filters of /api/trainjobs/ and /api/trainingruntimes/, checked like any other input."""

from __future__ import annotations

from rest_framework import serializers

from kube import names
from trainer import constants as c
from trainer.models.trainjobs import PHASES
from web.api import MirrorFilterSet, StrictCharField, name_field


class TrainJobFilterSet(MirrorFilterSet):
    """`?namespace=team-a&phase=Running&runtime_name=torch-distributed`; deleted jobs with `deleted=true`."""

    phase = serializers.ChoiceField(choices=PHASES, required=False)
    runtime_kind = serializers.ChoiceField(choices=c.RUNTIME_KINDS, required=False)
    runtime_name = name_field(names.NameFormat.SUBDOMAIN, required=False)


class TrainingRuntimeFilterSet(MirrorFilterSet):
    """`?kind=ClusterTrainingRuntime&framework=torch`; `namespace=` narrows to one namespace's runtimes."""

    kind = serializers.ChoiceField(choices=c.RUNTIME_KINDS, required=False)
    framework = StrictCharField(max_length=63, required=False)
