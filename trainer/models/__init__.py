"""The trainer app's models, one module per concern; Django finds them through this package."""

from trainer.models.progress import TrainerStatusUpdate
from trainer.models.runtimes import RuntimeRevision, TrainingRuntime
from trainer.models.trainjobs import TrainJob, TrainJobHistory, TrainJobPod

__all__ = [
    "RuntimeRevision",
    "TrainJob",
    "TrainJobHistory",
    "TrainJobPod",
    "TrainerStatusUpdate",
    "TrainingRuntime",
]
