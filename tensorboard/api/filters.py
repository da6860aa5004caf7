"""Query filters of /api/tensorboards/: namespace, phase, source and name, checked like any other input."""

from __future__ import annotations

from rest_framework import serializers

from kube import names
from tensorboard.actions import SOURCE_KINDS
from tensorboard.status import FAILED, PENDING, READY
from web.api import MirrorFilterSet, name_field


class TensorboardFilterSet(MirrorFilterSet):
    """`?namespace=team-a&phase=Ready&source_kind=Workflow&source_name=mnist&name=mnist`; deleted
    instances only with `deleted=true`."""

    phase = serializers.ChoiceField(choices=(PENDING, READY, FAILED), required=False)
    source_kind = serializers.ChoiceField(choices=sorted(SOURCE_KINDS), required=False)
    source_name = name_field(names.NameFormat.SUBDOMAIN, required=False)
