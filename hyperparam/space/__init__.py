"""Search spaces of hyperparameter sweeps: parsing, validation, lazy grids and reproducible sampling."""

from hyperparam.space.domains import Choice, Domain, FiniteDomain, IntUniform, Range, Uniform
from hyperparam.space.parse import parse_hyperparams
from hyperparam.space.space import SearchSpace, unit_draw

__all__ = [
    "Choice",
    "Domain",
    "FiniteDomain",
    "IntUniform",
    "Range",
    "SearchSpace",
    "Uniform",
    "parse_hyperparams",
    "unit_draw",
]
