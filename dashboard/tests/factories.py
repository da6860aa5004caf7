"""Mirror rows as the controllers would write them, for the dashboard's tests and benchmark."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from garbage.models import GCDeletion, GCRun
from hyperparam.models import Sweep, Trial
from jobs.models import Replica, TrainingJob
from tensorboard.models import Tensorboard
from trainer.models import RuntimeRevision, TrainerStatusUpdate, TrainingRuntime, TrainJob, TrainJobPod
from trainer.models.trainjobs import sweep_fields

T0 = datetime(2026, 6, 1, 8, 0, 0, tzinfo=UTC)
_serial = itertools.count(1)

GRID_SPEC: dict[str, Any] = {
    "workflow": {
        "entrypoint": "train",
        "templates": [
            {
                "name": "train",
                "inputs": {"parameters": [{"name": "lr"}, {"name": "optimizer"}]},
                "outputs": {"parameters": [{"name": "loss", "valueFrom": {"path": "/tmp/loss"}}]},
                "container": {"image": "example.io/train:1", "command": ["python", "train.py"]},
            }
        ],
    },
    "hyperparams": [
        {"name": "lr", "range": {"min": 0.001, "max": 0.1, "step": 0.001}},
        {"name": "optimizer", "values": ["adam", "sgd"]},
    ],
    "objective": {"metric": "loss", "goal": "minimize"},
    "parallelism": 4,
}


def job_spec(workers: int = 2, kind: str = "TFJob") -> dict[str, Any]:
    key = {
        "TFJob": "tfReplicaSpecs",
        "PyTorchJob": "pytorchReplicaSpecs",
        "MXJob": "mxReplicaSpecs",
        "MPIJob": "mpiReplicaSpecs",
    }[kind]
    container = {"TFJob": "tensorflow", "PyTorchJob": "pytorch", "MXJob": "mxnet", "MPIJob": "mpi"}[kind]
    template = {"spec": {"containers": [{"name": container, "image": "example.io/train:1"}]}}
    replicas: dict[str, Any] = {"Worker": {"replicas": workers, "template": template}}
    if kind == "PyTorchJob":
        replicas["Master"] = {"replicas": 1, "template": template}
    if kind == "MPIJob":
        replicas["Launcher"] = {"replicas": 1, "template": template}
    return {key: replicas}


def mirror_fields(name: str, namespace: str, created_at: datetime | None) -> dict[str, Any]:
    return {
        "uid": str(uuid.uuid4()),
        "namespace": namespace,
        "name": name,
        "resource_version": str(next(_serial)),
        "created_at": created_at or T0,
        "updated_at": timezone.now(),
    }


def job(
    name: str = "mnist",
    namespace: str = "team-a",
    *,
    kind: str = "TFJob",
    phase: str = "Running",
    created_at: datetime | None = None,
    save: bool = True,
    **fields: Any,
) -> TrainingJob:
    row = TrainingJob(
        **mirror_fields(name, namespace, created_at),
        kind=kind,
        phase=phase,
        spec=fields.pop("spec", job_spec(kind=kind)),
        replica_summary=fields.pop("replica_summary", "Worker 2/2"),
        start_time=fields.pop("start_time", (created_at or T0) + timedelta(seconds=5)),
        **fields,
    )
    if save:
        row.save()
    return row


def replica(parent: TrainingJob, replica_type: str = "worker", index: int = 0, **fields: Any) -> Replica:
    return Replica.objects.create(
        **mirror_fields(
            f"{parent.name}-{replica_type}-{index}", parent.namespace, fields.pop("created_at", None)
        ),
        job_id=parent.uid,
        replica_type=replica_type,
        replica_index=index,
        phase=fields.pop("phase", "Running"),
        **fields,
    )


def sweep(
    name: str = "lr-sweep",
    namespace: str = "team-a",
    *,
    phase: str = "Running",
    algorithm: str = "grid",
    created_at: datetime | None = None,
    save: bool = True,
    **fields: Any,
) -> Sweep:
    spec = {**GRID_SPEC, "algorithm": {"name": algorithm}}
    row = Sweep(
        **mirror_fields(name, namespace, created_at),
        phase=phase,
        algorithm=algorithm,
        spec=spec,
        **{"goal": "minimize", "metric_name": "loss", **fields},
    )
    if save:
        row.save()
    return row


def trial_rows(parent: Sweep, count: int, *, finished: int | None = None) -> list[Trial]:
    """`count` trials whose loss is a bowl around lr=0.05 with adam; the first `finished` have a metric."""
    finished = count if finished is None else finished
    rows = []
    for index in range(count):
        lr = 0.001 + (index % 100) * 0.001
        optimizer = "adam" if index % 2 == 0 else "sgd"
        loss = (lr - 0.05) ** 2 * 1000 + (0.0 if optimizer == "adam" else 0.3) + (index % 7) * 0.001
        done = index < finished
        rows.append(
            Trial(
                sweep=parent,
                index=index,
                params={"lr": f"{lr:.3f}", "optimizer": optimizer},
                phase="Succeeded" if done else "Running",
                metric=round(loss, 6) if done else None,
                workflow=f"{parent.name}-{index // 500}",
                started_at=T0 + timedelta(seconds=index),
                finished_at=T0 + timedelta(seconds=index + 60) if done else None,
            )
        )
    return rows


def tensorboard(name: str = "lr-sweep-hpw", namespace: str = "team-a", **fields: Any) -> Tensorboard:
    return Tensorboard.objects.create(
        **mirror_fields(name, namespace, fields.pop("created_at", None)),
        phase=fields.pop("phase", "Ready"),
        url=fields.pop("url", f"http://tensorboards.example/{namespace}/{name}/"),
        source_kind=fields.pop("source_kind", "HyperparamWorkflow"),
        source_name=fields.pop("source_name", "lr-sweep"),
        **fields,
    )


def gc_run(namespace: str = "", deletions: list[tuple[str, str]] | None = None, **fields: Any) -> GCRun:
    run = GCRun.objects.create(
        namespace=namespace,
        status=fields.pop("status", GCRun.Status.SUCCEEDED),
        finished=timezone.now(),
        **fields,
    )
    for position, (kind_namespace, name) in enumerate(deletions or []):
        GCDeletion.objects.create(
            run=run,
            kind="Pod",
            namespace=kind_namespace,
            name=name,
            uid=f"uid-{run.pk}-{position}",
            reason=GCDeletion._meta.get_field("reason").choices[0][0],
            age_seconds=3600.0,
        )
    run.deleted = len(deletions or [])
    run.scanned = run.deleted + 3
    run.save()
    return run


def train_job(
    name: str = "llama",
    namespace: str = "team-a",
    *,
    phase: str = "Running",
    runtime_name: str = "torch-distributed",
    created_at: datetime | None = None,
    **fields: Any,
) -> TrainJob:
    spec = {
        "runtimeRef": {"name": runtime_name, "kind": fields.get("runtime_kind", "ClusterTrainingRuntime")}
    }
    return TrainJob.objects.create(
        **mirror_fields(name, namespace, created_at),
        phase=phase,
        runtime_name=runtime_name,
        spec=fields.pop("spec", spec),
        steps_summary=fields.pop("steps_summary", "node 2 active"),
        start_time=fields.pop("start_time", (created_at or T0) + timedelta(seconds=5)),
        **sweep_fields(fields.get("labels") or {}),  # as the mirror fills them from the labels
        **fields,
    )


def train_job_pod(parent: TrainJob, step: str = "node", index: int = 0, **fields: Any) -> TrainJobPod:
    return TrainJobPod.objects.create(
        **mirror_fields(f"{parent.name}-{step}-0-{index}", parent.namespace, fields.pop("created_at", None)),
        train_job_id=parent.uid,
        step=step,
        job_index=0,
        completion_index=index,
        phase=fields.pop("phase", "Running"),
        **fields,
    )


def status_updates(parent: TrainJob, count: int, **metrics: Any) -> list[TrainerStatusUpdate]:
    """`count` reports a minute apart: progress rising to 100, loss falling, plus `metrics` as given."""
    rows = [
        TrainerStatusUpdate(
            namespace=parent.namespace,
            trainjob_name=parent.name,
            trainjob_uid=parent.uid,
            pod=f"{parent.name}-node-0-0",
            progress_percentage=(step + 1) * 100 // count,
            estimated_remaining_seconds=(count - step - 1) * 60,
            metrics=[{"name": "loss", "value": f"{1.0 / (step + 1):.4f}"}]
            + [{"name": key, "value": str(value)} for key, value in metrics.items()],
            reported_at=T0 + timedelta(minutes=step),
        )
        for step in range(count)
    ]
    return TrainerStatusUpdate.objects.bulk_create(rows)


def runtime(
    name: str = "torch-distributed", namespace: str = "", *, generation: int = 1, **fields: Any
) -> TrainingRuntime:
    kind = "TrainingRuntime" if namespace else "ClusterTrainingRuntime"
    created_at: datetime = fields.pop("created_at", T0 - timedelta(days=1))
    row = TrainingRuntime.objects.create(
        **mirror_fields(name, namespace, created_at),
        kind=kind,
        framework=fields.pop("framework", "torch"),
        generation=generation,
        spec=fields.pop("spec", {"mlPolicy": {"numNodes": 1, "torch": {}}}),
        **fields,
    )
    RuntimeRevision.objects.create(runtime=row, generation=generation, spec=row.spec, recorded_at=created_at)
    return row
