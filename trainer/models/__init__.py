"""The trainer app's models, one module per concern; Django finds them through this package."""

from trainer.models.trainjobs import TrainJob, TrainJobHistory, TrainJobPod

__all__ = ["TrainJob", "TrainJobHistory", "TrainJobPod"]
