"""Pure: a sweep's finished trials → Plotly figures (parallel coordinates, optimisation history, parameter
importances) small enough to stay responsive with 10,000+ trials.

Nothing here touches Django or the network: the sweep page's JSON view feeds it (index, params, metric)
rows and the browser draws what it returns with the vendored plotly.js.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Goal = Literal["minimize", "maximize"]
# Lines a parallel-coordinates plot draws and points a history scatter shows; above this the browser
# stutters while brushing, and the eye cannot tell the difference anyway.
MAX_LINES = 2000
MAX_POINTS = 2000
# Share of the drawn lines kept for the best trials, so downsampling never hides the winners.
BEST_SHARE = 0.2
IMPORTANCE_BINS = 10


@dataclass(frozen=True, slots=True)
class TrialPoint:
    index: int
    params: Mapping[str, str]
    metric: float


def _better_first(trials: Sequence[TrialPoint], goal: Goal) -> list[TrialPoint]:
    return sorted(trials, key=lambda t: (t.metric if goal == "minimize" else -t.metric, t.index))


def evenly(items: Sequence[Any], limit: int) -> list[Any]:
    """At most `limit` items spread evenly over the sequence, the first and last included."""
    if len(items) <= limit:
        return list(items)
    if limit <= 1:
        return list(items[:limit])
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]


def sample_for_lines(trials: Sequence[TrialPoint], goal: Goal, limit: int = MAX_LINES) -> list[TrialPoint]:
    """The best `BEST_SHARE` of `limit` trials plus an even sample of the rest, in trial order."""
    if len(trials) <= limit:
        return sorted(trials, key=lambda t: t.index)
    ranked = _better_first(trials, goal)
    best_count = max(1, int(limit * BEST_SHARE))
    rest = sorted(ranked[best_count:], key=lambda t: t.index)
    kept = ranked[:best_count] + evenly(rest, limit - best_count)
    return sorted(kept, key=lambda t: t.index)


def as_number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def dimension(name: str, values: Sequence[str]) -> dict[str, Any]:
    """A parcoords axis: numbers as they are, anything else as categories in sorted order."""
    numbers = [as_number(value) for value in values]
    if all(number is not None for number in numbers):
        return {"label": name, "values": numbers}
    categories = sorted(set(values))
    code = {category: position for position, category in enumerate(categories)}
    return {
        "label": name,
        "values": [code[value] for value in values],
        "tickvals": list(range(len(categories))),
        "ticktext": categories,
    }


def parallel_coordinates(
    trials: Sequence[TrialPoint], names: Sequence[str], metric_name: str, goal: Goal
) -> dict[str, Any]:
    """Parameters vs objective, one line per (sampled) trial, coloured by the objective."""
    shown = sample_for_lines(trials, goal)
    metrics = [t.metric for t in shown]
    dimensions = [dimension(name, [str(t.params.get(name, "")) for t in shown]) for name in names]
    dimensions.append({"label": metric_name, "values": metrics})
    trace = {
        "type": "parcoords",
        "dimensions": dimensions,
        "line": {
            "color": metrics,
            "colorscale": "Viridis",
            "reversescale": goal == "minimize",
            "showscale": True,
            "colorbar": {"title": {"text": metric_name}},
        },
    }
    return {
        "data": [trace],
        "layout": {"margin": {"l": 60, "r": 60, "t": 40, "b": 30}},
        "shown": len(shown),
        "total": len(trials),
    }


def best_so_far(trials: Sequence[TrialPoint], goal: Goal) -> list[tuple[int, float]]:
    """(trial index, best metric up to it) at each improvement, plus the last trial (the line's end)."""
    steps: list[tuple[int, float]] = []
    best: float | None = None
    ordered = sorted(trials, key=lambda t: t.index)
    for trial in ordered:
        if best is None or (trial.metric < best if goal == "minimize" else trial.metric > best):
            best = trial.metric
            steps.append((trial.index, best))
    if ordered and steps and steps[-1][0] != ordered[-1].index:
        steps.append((ordered[-1].index, steps[-1][1]))
    return steps


def optimisation_history(
    trials: Sequence[TrialPoint], metric_name: str, goal: Goal, limit: int = MAX_POINTS
) -> dict[str, Any]:
    """Each trial's objective (an even sample) and the best-so-far line (exact: it is small)."""
    ordered = sorted(trials, key=lambda t: t.index)
    shown = evenly(ordered, limit)
    steps = best_so_far(ordered, goal)
    data = [
        {
            "type": "scattergl",
            "mode": "markers",
            "name": "trial",
            "x": [t.index for t in shown],
            "y": [t.metric for t in shown],
            "marker": {"size": 5, "opacity": 0.5},
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "best so far",
            "line": {"shape": "hv", "width": 2},
            "x": [index for index, _ in steps],
            "y": [value for _, value in steps],
        },
    ]
    layout = {
        "xaxis": {"title": {"text": "trial"}},
        "yaxis": {"title": {"text": metric_name}},
        "margin": {"l": 60, "r": 20, "t": 20, "b": 50},
        "legend": {"orientation": "h"},
    }
    return {"data": data, "layout": layout, "shown": len(shown), "total": len(ordered)}


def _groups(values: Sequence[str], bins: int) -> list[int]:
    """A group per trial: the category, or for numbers the quantile bin."""
    numbers = [as_number(value) for value in values]
    if any(number is None for number in numbers):
        code: dict[str, int] = {}
        return [code.setdefault(value, len(code)) for value in values]
    distinct = sorted(set(numbers))  # type: ignore[type-var]
    if len(distinct) <= bins:
        rank = {value: position for position, value in enumerate(distinct)}
        return [rank[number] for number in numbers]
    order = sorted(range(len(numbers)), key=lambda i: numbers[i])  # type: ignore[arg-type, return-value]
    groups = [0] * len(numbers)
    for position, i in enumerate(order):
        groups[i] = position * bins // len(numbers)
    return groups


def correlation_ratio(groups: Sequence[int], metrics: Sequence[float]) -> float:
    """η²: the share of the objective's variance explained by the groups (0: none, 1: all)."""
    count = len(metrics)
    if count < 2:
        return 0.0
    mean = sum(metrics) / count
    total = sum((m - mean) ** 2 for m in metrics)
    if total == 0:
        return 0.0
    sums: dict[int, float] = {}
    sizes: dict[int, int] = {}
    for group, metric in zip(groups, metrics, strict=True):
        sums[group] = sums.get(group, 0.0) + metric
        sizes[group] = sizes.get(group, 0) + 1
    between = sum(sizes[g] * (sums[g] / sizes[g] - mean) ** 2 for g in sums)
    return between / total


def importances(
    trials: Sequence[TrialPoint], names: Sequence[str], bins: int = IMPORTANCE_BINS
) -> list[tuple[str, float]]:
    """Each parameter's share of the objective's explained variance (η² normalised to sum to 1), most
    important first. A quick, model-free estimate in the spirit of fANOVA: it sees main effects only."""
    metrics = [t.metric for t in trials]
    ratios = {
        name: correlation_ratio(_groups([str(t.params.get(name, "")) for t in trials], bins), metrics)
        for name in names
    }
    total = sum(ratios.values())
    shares = {name: (ratio / total if total else 0.0) for name, ratio in ratios.items()}
    return sorted(shares.items(), key=lambda item: (-item[1], item[0]))


def importance_chart(shares: Sequence[tuple[str, float]]) -> dict[str, Any]:
    ordered = list(reversed(shares))  # Plotly draws horizontal bars bottom-up
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "x": [round(share, 4) for _, share in ordered],
            "y": [name for name, _ in ordered],
        }
    ]
    layout = {
        "xaxis": {"title": {"text": "share of explained variance"}, "range": [0, 1]},
        "yaxis": {"automargin": True},
        "margin": {"l": 20, "r": 20, "t": 20, "b": 50},
    }
    return {"data": data, "layout": layout}
