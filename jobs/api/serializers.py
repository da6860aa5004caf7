"""Serializers of training jobs. Everything read here was written by the mirror, so every field is
read-only; a new job is a manifest (JobManifestSerializer), submitted to the cluster, not saved."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from jobs import apigroups
from jobs.actions import check_manifest
from jobs.frameworks import kinds
from jobs.models import Replica, TrainingJob, TrainingJobHistory
from kube import names
from web import api

JOB_FIELDS: tuple[str, ...] = (
    "id",
    "uid",
    "api_group",
    "kind",
    "namespace",
    "name",
    "phase",
    "state_reason",
    "state_message",
    "replica_summary",
    "restarts",
    "created_at",
    "start_time",
    "completion_time",
    "updated_at",
    "deleted_at",
)


class ReplicaSerializer(api.ObservedPodSerializer):
    class Meta:
        model = Replica
        fields = ("replica_type", "replica_index", *api.POD_FIELDS)


class TrainingJobHistorySerializer(api.HistorySerializer):
    class Meta(api.HistorySerializer.Meta):
        model = TrainingJobHistory


class TrainingJobSerializer(api.ReadOnlyModelSerializer):
    """A job in a list: identity, state and the replica summary (one row, no joins)."""

    class Meta:
        model = TrainingJob
        fields = JOB_FIELDS


class TrainingJobDetailSerializer(TrainingJobSerializer):
    """A job with its spec and status as the cluster holds them, its replicas and its history."""

    replicas = ReplicaSerializer(many=True, read_only=True)
    history = TrainingJobHistorySerializer(many=True, read_only=True)

    class Meta(TrainingJobSerializer.Meta):
        fields = (*JOB_FIELDS, *api.DETAIL_FIELDS, "replicas", "history")


class JobMetadataSerializer(api.ManifestMetadataSerializer):
    """A job's name is a DNS-1035 label: its pods and services are named after it."""

    name = api.name_field(names.NameFormat.DNS1035_LABEL)


class JobManifestSerializer(api.ManifestSerializer):
    """A training job manifest of any kind, as `kubectl apply` would take it (apiVersion optional)."""

    metadata_serializer = JobMetadataSerializer
    apiVersion = serializers.ChoiceField(choices=list(apigroups.API_VERSIONS), required=False)
    kind = serializers.ChoiceField(choices=kinds())
    metadata = api.metadata_field(JobMetadataSerializer)
    spec = serializers.DictField(help_text="The kind's spec: its replica specs and runPolicy.")

    def check(self, manifest: dict[str, Any]) -> list[Any]:
        return list(check_manifest(manifest))
