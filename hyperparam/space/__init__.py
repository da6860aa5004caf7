"""Search spaces of hyperparameter sweeps: parsing, validation, lazy grids and reproducible sampling."""

from hyperparam.space.domains import Choice, Domain, FiniteDomain, IntUniform, Range, Uniform
from hyperparam.space.errors import ErrorList, FieldError, SpecError
from hyperparam.space.parse import parse_hyperparams
from hyperparam.space.space import SearchSpace, unit_draw

__all__ = [
    "Choice",
    "Domain",
    "ErrorList",
    "FieldError",
    "FiniteDomain",
    "IntUniform",
    "Range",
    "SearchSpace",
    "SpecError",
    "Uniform",
    "parse_hyperparams",
    "unit_draw",
]
