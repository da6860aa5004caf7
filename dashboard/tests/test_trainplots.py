"""dashboard.trainplots, pure: progress reports → series and Plotly figures, bounded and honest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dashboard import trainplots
from dashboard.trainplots import Report

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def report(minute: int, progress: int | None = None, **metrics: str) -> Report:
    return Report(
        T0 + timedelta(minutes=minute), progress, [{"name": k, "value": v} for k, v in metrics.items()]
    )


def test_series_keep_numbers_in_time_order_and_leave_out_what_is_not_a_number():
    reports = [report(2, loss="0.5"), report(0, loss="1.0", acc="n/a"), report(1, loss="nan", acc="0.7")]

    series = trainplots.metric_series(reports)

    assert list(series) == ["loss", "acc"]  # in the order their first number was reported
    assert series["loss"].values == [1.0, 0.5]
    assert series["loss"].times == [T0, T0 + timedelta(minutes=2)]
    assert series["acc"].values == [0.7]


def test_malformed_metrics_are_skipped_not_fatal():
    reports = [
        Report(T0, None, ["loss", {"value": "1"}, {"name": "", "value": "2"}, {"name": "ok", "value": "3"}])
    ]

    assert {name: s.values for name, s in trainplots.metric_series(reports).items()} == {"ok": [3.0]}


def test_progress_is_a_line_from_0_to_100_and_absent_without_reports_of_it():
    with_progress = trainplots.job_figures([report(0, 10), report(1), report(2, 90)])
    without = trainplots.job_figures([report(0, loss="1")])

    assert with_progress["progress"]["data"][0]["y"] == [10.0, 90.0]
    assert with_progress["progress"]["layout"]["yaxis"]["range"] == [0, 100]
    assert without["progress"] is None
    assert without["reports"] == 1


def test_a_long_run_is_downsampled_keeping_the_first_and_last_points():
    reports = [report(minute, loss=str(minute)) for minute in range(5000)]

    line = trainplots.job_figures(reports, limit=100)["metrics"][0]["figure"]["data"][0]

    assert len(line["y"]) == 100
    assert (line["y"][0], line["y"][-1]) == (0.0, 4999.0)
    assert line["x"][0] == T0.isoformat()


def test_at_most_max_metrics_figures_and_the_rest_counted():
    many = {f"m{index:03d}": "1" for index in range(trainplots.MAX_METRICS + 5)}

    figures = trainplots.job_figures([report(0, **many)])

    assert len(figures["metrics"]) == trainplots.MAX_METRICS
    assert figures["more"] == 5


def test_side_by_side_draws_one_line_per_trial_per_metric_within_the_point_budget():
    trials = {
        "trial 0": [report(m, loss=str(1 / (m + 1))) for m in range(300)],
        "trial 1": [report(m, loss=str(2 / (m + 1)), acc="0.5") for m in range(300)],
        "trial 2": [],
    }

    body = trainplots.side_by_side(trials, limit=200)

    assert body["trials"] == 3
    loss, acc = body["metrics"]
    assert (loss["name"], acc["name"]) == ("loss", "acc")
    assert [line["name"] for line in loss["figure"]["data"]] == ["trial 0", "trial 1"]
    assert sum(len(line["y"]) for line in loss["figure"]["data"]) <= 200
    assert [line["name"] for line in acc["figure"]["data"]] == ["trial 1"]
    assert loss["figure"]["layout"]["showlegend"] is True
