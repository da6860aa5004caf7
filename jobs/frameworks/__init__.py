"""Framework plugins: one small class per training framework, looked up by custom resource kind."""

from jobs.frameworks import elastic
from jobs.frameworks.base import Framework
from jobs.frameworks.mpi import MPI
from jobs.frameworks.mxnet import MXNet
from jobs.frameworks.pytorch import PyTorch
from jobs.frameworks.registry import UnknownKind, framework_class, framework_for, kinds, register, unregister
from jobs.frameworks.tensorflow import TensorFlow

__all__ = [
    "MPI",
    "Framework",
    "MXNet",
    "PyTorch",
    "TensorFlow",
    "UnknownKind",
    "elastic",
    "framework_class",
    "framework_for",
    "kinds",
    "register",
    "unregister",
]
