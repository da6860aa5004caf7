"""The plot builders are pure: sampling keeps the winners, the best-so-far line is exact, importances
find the parameter that matters."""

from __future__ import annotations

import random

from dashboard import plots
from dashboard.plots import TrialPoint


def points(metrics: list[float]) -> list[TrialPoint]:
    return [TrialPoint(i, {"x": str(i)}, m) for i, m in enumerate(metrics)]


def test_best_so_far_steps_only_when_a_trial_improves_and_ends_at_the_last_trial():
    assert plots.best_so_far(points([5, 7, 3, 4, 1, 2]), "minimize") == [(0, 5), (2, 3), (4, 1), (5, 1)]
    assert plots.best_so_far(points([5, 7, 3]), "maximize") == [(0, 5), (1, 7), (2, 7)]
    assert plots.best_so_far([], "minimize") == []


def test_evenly_keeps_the_ends_and_the_limit():
    assert plots.evenly(list(range(10)), 3) == [0, 4, 9]
    assert plots.evenly([1, 2], 5) == [1, 2]


def test_sampling_for_lines_keeps_the_best_trials_and_respects_the_limit():
    rng = random.Random(7)  # noqa: S311 - reproducible test data
    trials = points([rng.random() for _ in range(10_000)])
    kept = plots.sample_for_lines(trials, "minimize", limit=500)
    assert len(kept) == 500
    best_100 = {t.index for t in sorted(trials, key=lambda t: t.metric)[:100]}
    assert best_100 <= {t.index for t in kept}
    assert [t.index for t in kept] == sorted(t.index for t in kept)


def test_a_categorical_parameter_becomes_coded_axis_with_its_names():
    axis = plots.dimension("optimizer", ["sgd", "adam", "sgd"])
    assert axis["values"] == [1, 0, 1]
    assert axis["ticktext"] == ["adam", "sgd"]
    assert plots.dimension("lr", ["0.1", "1e-3"])["values"] == [0.1, 0.001]


def test_importances_name_the_parameter_that_drives_the_objective():
    rng = random.Random(1)  # noqa: S311 - reproducible test data
    trials = []
    for index in range(2000):
        lr, noise = rng.uniform(0, 1), rng.choice(["a", "b", "c"])
        trials.append(
            TrialPoint(index, {"lr": str(lr), "noise": noise}, (lr - 0.3) ** 2 + rng.gauss(0, 0.001))
        )
    shares = plots.importances(trials, ["lr", "noise"])
    assert shares[0][0] == "lr"
    assert shares[0][1] > 0.9
    assert abs(sum(share for _, share in shares) - 1) < 1e-9


def test_importances_of_a_flat_objective_are_all_zero():
    assert plots.importances(points([1.0, 1.0, 1.0]), ["x"]) == [("x", 0.0)]


def test_the_history_figure_is_capped_but_counts_every_trial():
    figure = plots.optimisation_history(
        points([float(i % 13) for i in range(5000)]), "loss", "minimize", limit=100
    )
    assert figure["shown"] == 100
    assert figure["total"] == 5000
    assert figure["data"][1]["y"][-1] == 0.0
