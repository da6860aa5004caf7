"""Search spaces of hyperparameter sweeps: parsing, validation, lazy grids and reproducible sampling."""

from fields import SpecError  # for dashboard.submission only, until its import names `fields` (issue 31)
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
    "SpecError",
    "Uniform",
    "parse_hyperparams",
    "unit_draw",
]
