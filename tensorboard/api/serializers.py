"""Serializers of the spawner. Rows were written by the mirror, so every field of a TensorBoard is
read-only; a spawn request names a source (or admin-allowed logdirs), never a manifest."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from kube import names, validators
from tensorboard.actions import SOURCE_KINDS
from tensorboard.durations import parse_duration
from tensorboard.models import Tensorboard, TensorboardHistory
from web.api import ClosedSerializer, HistorySerializer, ReadOnlyModelSerializer, StrictCharField

TENSORBOARD_FIELDS: tuple[str, ...] = (
    "id",
    "uid",
    "namespace",
    "name",
    "phase",
    "url",
    "source_kind",
    "source_name",
    "logdirs",
    "last_access",
    "created_at",
    "updated_at",
    "deleted_at",
)


class TensorboardHistorySerializer(HistorySerializer):
    class Meta(HistorySerializer.Meta):
        model = TensorboardHistory


class TensorboardSerializer(ReadOnlyModelSerializer):
    """A TensorBoard as the cluster last reported it: phase, URL, source workflow and logdirs."""

    logdirs = serializers.ListField(child=serializers.DictField(), read_only=True)

    class Meta:
        model = Tensorboard
        fields = TENSORBOARD_FIELDS


class TensorboardDetailSerializer(TensorboardSerializer):
    history = TensorboardHistorySerializer(many=True, read_only=True)

    class Meta(TensorboardSerializer.Meta):
        fields = (*TENSORBOARD_FIELDS, "spec", "status", "conditions", "history")


class LogdirSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100)
    path = StrictCharField(max_length=2048)


def _workflow(*, required: bool) -> StrictCharField:
    return StrictCharField(
        required=required, max_length=253, validators=[validators.object_name], help_text="The source's name."
    )


def _kind() -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=sorted(SOURCE_KINDS), default="Workflow")


def _instance_name(*, required: bool) -> StrictCharField:
    # A label, not a subdomain: the instance's Service is named after it.
    return StrictCharField(
        max_length=63,
        required=required,
        validators=[validators.KubernetesNameValidator(names.NameFormat.LABEL)],
        help_text="With `logdirs` only.",
    )


def _logdirs(*, required: bool) -> serializers.ListField:
    return serializers.ListField(child=LogdirSerializer(), required=required, min_length=1)


class _SpawnCommon(ClosedSerializer):
    """What every spawn request carries: where, and how long an unopened instance lives."""

    namespace = StrictCharField(max_length=63, validators=[validators.namespace_name])
    idleTimeout = StrictCharField(required=False, help_text="A Go duration, e.g. 30m or 4h.")

    def validate_idleTimeout(self, value: str) -> Any:
        try:
            duration = parse_duration(value)
        except ValueError as error:
            raise serializers.ValidationError(str(error).removeprefix("idleTimeout: ")) from error
        if duration.total_seconds() < 1:
            raise serializers.ValidationError("must be at least 1s.")
        return duration


class SpawnSerializer(_SpawnCommon):
    """`{namespace, workflow}`: the TensorBoard of a Workflow's `tensorboard` artifacts. `kind` opens a
    HyperparamWorkflow (one run per trial) or a training job instead; `name` + `logdirs` open paths an
    administrator allowed. The schema shows the two shapes apart (`SPAWN_REQUEST`)."""

    workflow = _workflow(required=False)
    kind = _kind()
    name = _instance_name(required=False)
    logdirs = _logdirs(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "logdirs" in attrs:
            if "workflow" in attrs:
                raise serializers.ValidationError(
                    {"logdirs": ["Name either a workflow or logdirs, not both."]}
                )
            if "name" not in attrs:
                raise serializers.ValidationError({"name": ["Required with logdirs."]})
        elif "workflow" not in attrs:
            raise serializers.ValidationError({"workflow": ["This field is required."]})
        return attrs


@extend_schema_field({"not": {}, "description": "Must be left out in this shape of the request."})
class AbsentField(serializers.Field):
    """For the schema: a property one shape of a request must not carry (OpenAPI 3.0 has no `false`)."""


# The two shapes of a spawn request, for the schema only (SpawnSerializer checks the same rules).
class SpawnFromSourceSerializer(_SpawnCommon):
    """The TensorBoard of a source's `tensorboard` artifacts: a Workflow's, or the kind's `kind` names."""

    workflow = _workflow(required=True)
    kind = _kind()
    logdirs = AbsentField(required=False)


class SpawnFromLogdirsSerializer(_SpawnCommon):
    """A TensorBoard of log directories under paths an administrator allowed."""

    workflow = AbsentField(required=False)
    name = _instance_name(required=True)
    logdirs = _logdirs(required=True)


# What POST /api/tensorboards/ takes: exactly one of the two shapes (the serializer checks the same rule).
SPAWN_REQUEST = PolymorphicProxySerializer(
    component_name="Spawn",
    serializers=[SpawnFromSourceSerializer, SpawnFromLogdirsSerializer],
    resource_type_field_name=None,
)


class SpawnedSerializer(serializers.Serializer):
    """What a spawn answers: the instance as the cluster holds it now, and what the user should know."""

    id = serializers.IntegerField(allow_null=True, help_text="The row's id once the controller mirrored it.")
    uid = serializers.CharField()
    namespace = serializers.CharField()
    name = serializers.CharField()
    phase = serializers.CharField()
    url = serializers.CharField()
    source_kind = serializers.CharField()
    source_name = serializers.CharField()
    logdirs = serializers.ListField(child=serializers.DictField())
    last_access = serializers.CharField(allow_null=True)
    created = serializers.BooleanField(help_text="False when the source already had this instance.")
    warnings = serializers.ListField(child=serializers.CharField())
