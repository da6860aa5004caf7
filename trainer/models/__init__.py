"""The trainer app's models, one module per concern; Django finds them through this package."""

from .progress import TrainerStatusUpdate

__all__ = ["TrainerStatusUpdate"]
