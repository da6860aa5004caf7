"""Pure: a TrainJob's progress reports (KEP-2779) → Plotly figures: progress % over time and each metric
over time; and, for a sweep, each metric of every trial's TrainJob side by side (one line per trial).

Reports carry metrics as text (`[{name, value}]`, as Trainer's API types them); a value that is not a
finite number (`"n/a"`, `"nan"`) is left out of its line, never plotted as zero. Each line keeps at most
MAX_POINTS points, spread evenly with the first and last kept, so a week of reports stays responsive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dashboard.plots import as_number, evenly

MAX_POINTS = 1000
# Figures a page draws at most: Trainer allows 256 metrics per report; a page of 256 plots helps no one.
MAX_METRICS = 24


@dataclass(frozen=True, slots=True)
class Report:
    """One progress report: when the pod said it was made, its progress % and its metrics as sent."""

    at: datetime
    progress: int | None
    metrics: Sequence[Any]


@dataclass(slots=True)
class Series:
    """Numeric points of one metric (or of progress), in report order."""

    times: list[datetime] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def add(self, at: datetime, value: float) -> None:
        self.times.append(at)
        self.values.append(value)


def metric_series(reports: Iterable[Report]) -> dict[str, Series]:
    """Each metric's numeric points, metrics in the order they first appear; reports in time order."""
    found: dict[str, Series] = {}
    for report in sorted(reports, key=lambda r: r.at):
        for metric in report.metrics:
            if not isinstance(metric, Mapping):
                continue
            name, value = metric.get("name"), as_number(str(metric.get("value")))
            if isinstance(name, str) and name and value is not None:
                found.setdefault(name, Series()).add(report.at, value)
    return found


def progress_series(reports: Iterable[Report]) -> Series:
    series = Series()
    for report in sorted(reports, key=lambda r: r.at):
        if report.progress is not None:
            series.add(report.at, float(report.progress))
    return series


def _line(series: Series, name: str, limit: int) -> dict[str, Any]:
    points = evenly(list(zip(series.times, series.values, strict=True)), limit)
    return {
        "type": "scatter",
        "mode": "lines+markers" if len(points) <= 50 else "lines",
        "name": name,
        "x": [at.isoformat() for at, _ in points],
        "y": [value for _, value in points],
    }


def _figure(traces: list[dict[str, Any]], y_title: str, **yaxis: Any) -> dict[str, Any]:
    legend = len(traces) > 1
    layout = {
        "xaxis": {"title": {"text": "reported at"}, "type": "date"},
        "yaxis": {"title": {"text": y_title}, **yaxis},
        # The legend goes below the axis title, clear of the dates' second line.
        "margin": {"l": 60, "r": 20, "t": 20, "b": 90 if legend else 50},
        "showlegend": legend,
        "legend": {"orientation": "h", "y": -0.4, "yanchor": "top"},
    }
    return {"data": traces, "layout": layout}


def job_figures(reports: Sequence[Report], limit: int = MAX_POINTS) -> dict[str, Any]:
    """The TrainJob page's figures: `progress` (None without a progress report) and `metrics`, a list of
    {name, figure} in first-seen order (at most MAX_METRICS; `more` counts those left out)."""
    progress = progress_series(reports)
    series = metric_series(reports)
    names = list(series)
    return {
        "reports": len(reports),
        "progress": _figure([_line(progress, "progress", limit)], "progress %", range=[0, 100])
        if progress.values
        else None,
        "metrics": [
            {"name": name, "figure": _figure([_line(series[name], name, limit)], name)}
            for name in names[:MAX_METRICS]
        ],
        "more": max(0, len(names) - MAX_METRICS),
    }


def side_by_side(trials: Mapping[str, Sequence[Report]], limit: int = MAX_POINTS) -> dict[str, Any]:
    """A sweep's trials compared: per metric one figure with a line per trial (labelled by the mapping's
    keys, in its order). Lines share the point budget so a figure never holds more than `limit` points."""
    per_trial = {label: metric_series(reports) for label, reports in trials.items()}
    names: list[str] = []
    for series in per_trial.values():
        names += [name for name in series if name not in names]
    figures = []
    for name in names[:MAX_METRICS]:
        lines = [(label, series[name]) for label, series in per_trial.items() if name in series]
        budget = max(2, limit // max(1, len(lines)))
        figures.append(
            {"name": name, "figure": _figure([_line(s, label, budget) for label, s in lines], name)}
        )
    return {"trials": len(trials), "metrics": figures, "more": max(0, len(names) - MAX_METRICS)}
