"""Serializers of sweeps and trials. Everything read here was written by the mirror or the controller, so
every field is read-only; a new sweep is a manifest (SweepManifestSerializer), submitted to the cluster."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from hyperparam import manifests
from hyperparam.actions import check_manifest
from hyperparam.models import Sweep, SweepHistory, Trial
from web import api

SWEEP_FIELDS: tuple[str, ...] = (
    "id",
    "uid",
    "namespace",
    "name",
    "phase",
    "algorithm",
    "goal",
    "metric_name",
    "trial_counts",
    "trials_total",
    "trials_finished",
    "trials_planned",
    "best_metric",
    "best_trial_index",
    "best_parameters",
    "created_at",
    "updated_at",
    "deleted_at",
)
TRIAL_FIELDS: tuple[str, ...] = (
    "index",
    "params",
    "phase",
    "metric",
    "message",
    "started_at",
    "finished_at",
    "workflow",
    "node_id",
)


class SweepHistorySerializer(api.HistorySerializer):
    class Meta(api.HistorySerializer.Meta):
        model = SweepHistory


class SweepSerializer(api.ReadOnlyModelSerializer):
    """A sweep in a list: identity, phase, counts and the best trial (one row, no joins)."""

    class Meta:
        model = Sweep
        fields = SWEEP_FIELDS


class SweepDetailSerializer(SweepSerializer):
    """A sweep with its spec and status as the cluster holds them, its Workflows and its history."""

    history = SweepHistorySerializer(many=True, read_only=True)

    class Meta(SweepSerializer.Meta):
        fields = (*SWEEP_FIELDS, *api.DETAIL_FIELDS, "workflows", "history")


class TrialSerializer(api.ReadOnlyModelSerializer):
    class Meta:
        model = Trial
        fields = TRIAL_FIELDS


class SweepManifestSerializer(api.ManifestSerializer):
    """A HyperparamWorkflow manifest, as `kubectl apply` would take it (apiVersion and kind optional).

    Errors are keyed by field path (`spec.hyperparams[0].range.max`), as the admission webhook names them.
    """

    apiVersion = serializers.ChoiceField(choices=[manifests.API_VERSION], required=False)
    kind = serializers.ChoiceField(choices=[manifests.KIND], required=False)
    metadata = api.metadata_field(api.ManifestMetadataSerializer)
    spec = serializers.DictField(help_text="The workflow template, the hyperparameters and the objective.")

    def check(self, manifest: dict[str, Any]) -> list[Any]:
        return list(check_manifest(manifest))
