"""Adaptive search (tpe, cmaes, qmc): one round of suggestions from an Optuna study rebuilt from our trials.

Pure: no Django, no I/O. Optuna keeps nothing between rounds; each round builds an in-memory study from
what our database holds — every earlier trial (parameters, phase, metric) and the sampler's bookkeeping
(Optuna's study and trial "system attributes": QMC's position in its sequence, CMA-ES's optimizer state) —
asks it for the round's trials, and hands back their template strings with the new bookkeeping to store.
Why not Optuna's RDB storage: one source of truth (the trials the mirror writes, which the admin and the API
read too), no second ORM and migration tool on DATABASE_URL, and a round asked once is stored with its
Workflow's inputs, so a reconcile that runs again never asks twice (see docs/hyperparam.md).

Each domain maps to the Optuna distribution named in hyperparam/space/domains.py; whatever Optuna suggests
goes back through `Domain.render`, so a template receives the same exact strings as in grid search.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler, CmaEsSampler, QMCSampler, RandomSampler, TPESampler
from optuna.trial import TrialState, create_trial

from hyperparam.space import Choice, Domain, IntUniform, Range, Uniform
from hyperparam.sweep import SEED_LIMIT, PlannedTrial, Sweep
from hyperparam.trials import FAILED_PHASES, SUCCEEDED

logger = logging.getLogger(__name__)
optuna.logging.set_verbosity(optuna.logging.WARNING)

# TPE models the results once this many trials finished; before that it samples at random. The first
# round is therefore random whatever its size, and later rounds learn from everything before them.
TPE_STARTUP_TRIALS = 10


@dataclass(frozen=True)
class PastTrial:
    """A trial of an earlier round as the database holds it."""

    index: int
    params: Mapping[str, str]
    phase: str
    metric: float | None
    system_attrs: Mapping[str, Any]


@dataclass(frozen=True)
class Suggestion:
    """One trial of a round: its number, the template strings, and Optuna's bookkeeping for it."""

    index: int
    params: dict[str, str]
    system_attrs: dict[str, Any]

    @property
    def planned(self) -> PlannedTrial:
        return PlannedTrial(self.index, self.params)


@dataclass(frozen=True)
class Round:
    number: int
    suggestions: tuple[Suggestion, ...]
    study_system_attrs: dict[str, Any]


def ask_round(
    sweep: Sweep,
    number: int,
    indices: range,
    history: Sequence[PastTrial],
    study_system_attrs: Mapping[str, Any],
) -> Round:
    """Ask the sampler for trials `indices` (round `number`), told everything in `history` first."""
    if not sweep.algorithm.adaptive:
        raise ValueError(f"{sweep.algorithm.name} search does not ask a sampler")
    assert sweep.objective is not None, "parse_sweep requires an objective for adaptive search"
    distributions = {domain.name: distribution_of(domain) for domain in sweep.space.domains}
    storage = optuna.storages.InMemoryStorage()
    with warnings.catch_warnings():
        # Experimental features (TPE's constant liar, CMA-ES's fallback for categorical parameters) warn.
        warnings.simplefilter("ignore")
        study = optuna.create_study(
            storage=storage,
            sampler=sampler_for(sweep, number, len(indices)),
            direction=sweep.objective.goal,
        )
        study_id = storage.get_study_id_from_name(study.study_name)
        for key, value in study_system_attrs.items():
            storage.set_study_system_attr(study_id, key, value)
        study.add_trials(_told(sweep, history, distributions))
        asked = [study.ask(distributions) for _ in indices]
    running = {
        trial.number: trial for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    }
    suggestions = tuple(
        Suggestion(
            index=index,
            params={domain.name: domain.render(trial.params[domain.name]) for domain in sweep.space.domains},
            system_attrs=dict(running[trial.number].system_attrs),
        )
        for index, trial in zip(indices, asked, strict=True)
    )
    return Round(number, suggestions, dict(storage.get_study_system_attrs(study_id)))


def sampler_for(sweep: Sweep, number: int, round_size: int) -> BaseSampler:
    """The sweep's sampler for round `number`: seeded from the sweep's seed, so a sweep is reproducible.

    TPE and CMA-ES draw from a fresh generator each round (the same seed every round would repeat round 0's
    random draws); QMC keeps one seed for the whole sweep, since its points are one scrambled sequence whose
    position lives in the study's system attributes.
    """
    seed = sweep.algorithm.seed
    round_seed = round_seed_of(seed, number)
    name = sweep.algorithm.name
    if name == "tpe":
        return TPESampler(
            seed=round_seed, n_startup_trials=min(TPE_STARTUP_TRIALS, max(round_size, 1)), constant_liar=True
        )
    if name == "cmaes":
        return CmaEsSampler(
            seed=round_seed,
            independent_sampler=RandomSampler(seed=round_seed),
            warn_independent_sampling=False,
        )
    if name == "qmc":
        return QMCSampler(
            qmc_type="sobol",
            scramble=True,
            seed=seed,
            independent_sampler=RandomSampler(seed=round_seed),
            warn_independent_sampling=False,
            warn_asynchronous_seeding=False,
        )
    raise ValueError(f"no sampler for algorithm {name!r}")


def round_seed_of(seed: int, number: int) -> int:
    """A seed per (sweep seed, round): stable across processes and releases."""
    digest = hashlib.sha256(f"{seed}:{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % SEED_LIMIT


def distribution_of(domain: Domain) -> BaseDistribution:
    """The Optuna distribution of a domain (the mapping in hyperparam/space/domains.py)."""
    if isinstance(domain, Choice):
        return CategoricalDistribution(domain.choices)
    if isinstance(domain, Range):
        if domain.is_integer:
            return IntDistribution(int(domain.start), int(domain.stop), step=int(domain.step))
        return FloatDistribution(float(domain.start), float(domain.stop), step=float(domain.step))
    if isinstance(domain, IntUniform):
        return IntDistribution(domain.low, domain.high, step=domain.step, log=domain.log)
    if isinstance(domain, Uniform):
        return FloatDistribution(domain.low, domain.high, log=domain.log)
    raise TypeError(f"{domain.name}: no Optuna distribution for {type(domain).__name__}")


def native_value(domain: Domain, text: str) -> Any:
    """The value Optuna knows a parameter by, from the string the template received."""
    if isinstance(domain, Choice):
        return text
    if isinstance(domain, IntUniform) or (isinstance(domain, Range) and domain.is_integer):
        return int(text)
    return float(text)


def _told(
    sweep: Sweep, history: Sequence[PastTrial], distributions: Mapping[str, BaseDistribution]
) -> list[optuna.trial.FrozenTrial]:
    """Finished trials as Optuna records them; trials still unfinished are left out (not yet known)."""
    told = []
    for past in sorted(history, key=lambda trial: trial.index):
        if past.phase == SUCCEEDED and past.metric is not None:
            state, value = TrialState.COMPLETE, past.metric
        elif past.phase in FAILED_PHASES or past.phase == SUCCEEDED:
            state, value = TrialState.FAIL, None
        else:
            continue
        try:
            params = {
                domain.name: native_value(domain, past.params[domain.name]) for domain in sweep.space.domains
            }
            told.append(
                create_trial(
                    state=state,
                    value=value,
                    params=params,
                    distributions=dict(distributions),
                    system_attrs=dict(past.system_attrs),
                )
            )
        except (KeyError, ValueError) as error:
            # The spec changed under a running sweep and this trial no longer fits its space.
            logger.warning("trial %d is left out of the study: %s", past.index, error)
    return told
