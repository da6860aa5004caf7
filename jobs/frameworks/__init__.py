"""Framework plugins: one small class per training framework, looked up by custom resource kind."""

from jobs.frameworks import elastic
from jobs.frameworks.base import Count, Environment, FieldRef, Framework
from jobs.frameworks.jax import JAX
from jobs.frameworks.mpi import MPI
from jobs.frameworks.mxnet import MXNet
from jobs.frameworks.paddle import Paddle
from jobs.frameworks.pytorch import PyTorch
from jobs.frameworks.registry import UnknownKind, framework_class, framework_for, kinds, register, unregister
from jobs.frameworks.tensorflow import TensorFlow
from jobs.frameworks.xgboost import XGBoost

__all__ = [
    "JAX",
    "MPI",
    "Count",
    "Environment",
    "FieldRef",
    "Framework",
    "MXNet",
    "Paddle",
    "PyTorch",
    "TensorFlow",
    "UnknownKind",
    "XGBoost",
    "elastic",
    "framework_class",
    "framework_for",
    "kinds",
    "register",
    "unregister",
]
