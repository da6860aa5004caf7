"""The trainer app's models, one module per concern; Django finds them through this package."""

from trainer.models.progress import TrainerStatusUpdate
from trainer.models.runtimes import RuntimeRevision, TrainingRuntime

__all__ = ["RuntimeRevision", "TrainerStatusUpdate", "TrainingRuntime"]
