"""Mirror rows of training jobs (every kind in one table: TFJob, MXJob, PyTorchJob, MPIJob, …), their
replicas' pods and the jobs' history. Only the mirror writes them (kube.controller.mirror, from watch
events); views and serializers only read.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models

from fields import as_dict, as_int
from jobs import apigroups
from jobs.frameworks import UnknownKind, framework_class
from jobs.manifests import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from jobs.summary import replica_summary
from kube.models import MirroredResource, MirrorHistory, parse_time

SUMMARY_MAX_LENGTH = 255
REASON_MAX_LENGTH = 128


class TrainingJob(MirroredResource):
    """One training job of any kind. Its state (`phase`) is the condition that most recently became True."""

    history_model = "jobs.TrainingJobHistory"
    live_name_fields = ("api_group", "kind", "namespace", "name")

    api_group = models.CharField(
        max_length=64,
        default=apigroups.ARGOML_GROUP,
        help_text="argoml.io, or kubeflow.org for a job written as Kubeflow's v1 kinds.",
    )
    kind = models.CharField(
        max_length=64, help_text="The job's kind, e.g. TFJob or MPIJob (any kind a framework registers)."
    )
    replica_summary = models.CharField(max_length=SUMMARY_MAX_LENGTH, blank=True)
    state_reason = models.CharField(max_length=REASON_MAX_LENGTH, blank=True)
    state_message = models.TextField(blank=True)
    restarts = models.IntegerField(default=0, help_text="Restarts so far, pod recreations included.")
    start_time = models.DateTimeField(null=True, blank=True)
    completion_time = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            # Kubernetes lets a TFJob and an MXJob (or a TFJob of each group) share a name; one live object
            # per group, kind and name.
            models.UniqueConstraint(
                fields=["api_group", "kind", "namespace", "name"],
                condition=models.Q(deleted_at__isnull=True),
                name="jobs_trainingjob_live_name",
            )
        ]
        # Admin and API lists: newest first, optionally by state, kind or namespace (the id breaks ties).
        # Name search has a PostgreSQL-only prefix index, made in migration 0001.
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["-created_at", "-id"], name="jobs_job_newest"),
            models.Index(fields=["phase", "-created_at", "-id"], name="jobs_job_phase"),
            models.Index(fields=["kind", "-created_at", "-id"], name="jobs_job_kind"),
            models.Index(fields=["namespace", "-created_at", "-id"], name="jobs_job_namespace"),
        ]

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        fields = super().observed_fields(obj)
        status = fields["status"]
        latest = _latest_true_condition(fields["conditions"])
        return {
            **fields,
            "api_group": apigroups.group_of(apigroups.api_version_of(obj)),
            "kind": str(obj.get("kind") or ""),
            "replica_summary": _summary(obj, status)[:SUMMARY_MAX_LENGTH],
            "state_reason": str(latest.get("reason") or "")[:REASON_MAX_LENGTH],
            "state_message": str(latest.get("message") or ""),
            "restarts": max(as_int(status.get("restarts")) or 0, 0),
            "start_time": parse_time(status.get("startTime")),
            "completion_time": parse_time(status.get("completionTime")),
        }

    @property
    def is_finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def api_version(self) -> str:
        """The job's apiVersion in the cluster (`argoml.io/v1alpha1` or `kubeflow.org/v1`)."""
        return apigroups.GROUPS.get(self.api_group, apigroups.ARGOML_API_VERSION)


class TrainingJobHistory(MirrorHistory):
    """A transition of a job: a condition changed (Created, Running, Restarting, ...) or it was deleted."""

    resource = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="history")


class ObservedPod(MirroredResource):
    """The columns every pod mirror row has, filled by `pod_observation` (jobs' replicas, trainer's
    TrainJob pods)."""

    exit_code = models.IntegerField(null=True, blank=True)
    restarts = models.IntegerField(default=0, help_text="In-place container restarts in this pod.")
    node = models.CharField(max_length=253, blank=True)
    pod_ip = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True, help_text="The last reason and message the pod reported.")

    class Meta(MirroredResource.Meta):
        abstract = True


class Replica(ObservedPod):
    """One pod of a job's replica, as the pod informer last saw it. A recreated pod is a new row (new
    uid); the one it replaced stays, marked deleted, so the job page shows every attempt."""

    # By the job's uid, from the pod's controller ownerReference: a pod event may arrive before the job's
    # own, so the row cannot wait for the job row to exist (no database constraint, a join when both do).
    job = models.ForeignKey(
        TrainingJob,
        to_field="uid",
        db_constraint=False,
        on_delete=models.DO_NOTHING,
        related_name="replicas",
    )
    replica_type = models.CharField(max_length=32, help_text="Lowercase, as in the pod's label.")
    replica_index = models.IntegerField(null=True, blank=True)

    class Meta(ObservedPod.Meta):
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["job", "replica_type", "replica_index"], name="jobs_replica_slot"),
        ]

    @classmethod
    def observed_fields(cls, obj: dict[str, Any]) -> dict[str, Any]:
        """The pod's identity and the few status fields the replica table shows; the pod spec and full
        status are left out (hundreds of thousands of pods would weigh gigabytes)."""
        fields = super().observed_fields(obj)
        metadata = as_dict(obj.get("metadata"))
        labels = as_dict(metadata.get("labels"))
        status = fields["status"]
        index = labels.get(LABEL_REPLICA_INDEX)
        return {
            **fields,
            "spec": {},
            "status": {},
            "job_id": controller_uid(obj),
            "replica_type": str(labels.get(LABEL_REPLICA_TYPE) or "")[:32],
            "replica_index": int(index) if isinstance(index, str) and index.isdigit() else None,
            **pod_observation(obj, status),
        }

    @property
    def slot(self) -> str:
        return f"{self.replica_type}-{self.replica_index}"


def pod_observation(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """What every pod mirror row shows of a pod: its first exit code, in-place restarts, node, IP and the
    last reason it gave (replicas of jobs here, a TrainJob's pods in trainer)."""
    return {
        "exit_code": _first_exit_code(status),
        "restarts": sum(
            max(as_int(as_dict(c).get("restartCount")) or 0, 0) for c in _container_statuses(status)
        ),
        "node": str(as_dict(obj.get("spec")).get("nodeName") or ""),
        "pod_ip": str(status.get("podIP") or ""),
        "message": _last_message(status),
    }


def controller_uid(obj: dict[str, Any]) -> str:
    """The uid of the object's controller (the job owning a pod), or "" without one."""
    for reference in as_dict(obj.get("metadata")).get("ownerReferences") or []:
        if isinstance(reference, dict) and reference.get("controller") is True:
            return str(reference.get("uid") or "")
    return ""


def _summary(obj: dict[str, Any], status: dict[str, Any]) -> str:
    """What the operator wrote, else the same computed here (a status from before the summary existed)."""
    written = status.get("replicaSummary")
    if isinstance(written, str):
        return written
    try:
        framework = framework_class(obj.get("kind"))()
    except UnknownKind:
        return ""
    return replica_summary(obj, status, framework)


def _latest_true_condition(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    true = [c for c in conditions if isinstance(c, dict) and c.get("status") == "True"]
    return true[-1] if true else {}


def _container_statuses(status: dict[str, Any]) -> list[Any]:
    statuses = []
    for field in ("initContainerStatuses", "containerStatuses"):
        found = status.get(field)
        statuses += found if isinstance(found, list) else []
    return statuses


def _first_exit_code(status: dict[str, Any]) -> int | None:
    """The exit code of the first container that terminated (now, else last time), if any."""
    for container in _container_statuses(status):
        container = as_dict(container)
        for state in ("state", "lastState"):
            terminated = as_dict(as_dict(container.get(state)).get("terminated"))
            code = as_int(terminated.get("exitCode"))
            if code is not None:
                return code
    return None


def _last_message(status: dict[str, Any]) -> str:
    """Why the pod is where it is: a container's waiting or terminated reason and message, else the pod's."""
    for container in _container_statuses(status):
        state = as_dict(as_dict(container).get("state"))
        for detail in (as_dict(state.get("waiting")), as_dict(state.get("terminated"))):
            words = [str(detail.get(key) or "") for key in ("reason", "message")]
            text = ": ".join(word for word in words if word)
            if text:
                return text
    words = [str(status.get(key) or "") for key in ("reason", "message")]
    return ": ".join(word for word in words if word)
