"""A report is read as Trainer's UpdateTrainJobStatusRequest and checked against its CRD's limits on
`status.trainerStatus`, every wrong field named; and a pod belongs to a TrainJob by label and controller."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from fields import SpecError
from trainer.progress import update as progress_update

WHEN = "2026-06-12T03:00:00Z"


def report(**fields):
    return {"trainerStatus": {"lastUpdatedTime": WHEN, **fields}}


def problems(body) -> list[str]:
    with pytest.raises(SpecError) as raised:
        progress_update.parse(body)
    return [str(error) for error in raised.value.errors]


class TestParse:
    def test_the_kubeflow_docs_example(self):
        body = report(
            progressPercentage=45,
            estimatedRemainingSeconds=120,
            metrics=[{"name": "loss", "value": "0.15"}, {"name": "accuracy", "value": "0.92"}],
        )
        parsed = progress_update.parse(body)
        assert parsed == progress_update.TrainerStatus(
            45,
            120,
            (progress_update.Metric("loss", "0.15"), progress_update.Metric("accuracy", "0.92")),
            datetime(2026, 6, 12, 3, tzinfo=UTC),
        )
        assert parsed.as_status() == body["trainerStatus"]

    def test_no_trainer_status_is_nothing_to_write(self):
        assert progress_update.parse({}) is None
        assert progress_update.parse({"trainerStatus": None, "other": 1}) is None

    def test_only_the_time_is_required(self):
        parsed = progress_update.parse(report())
        assert parsed is not None
        assert parsed.as_status() == {"lastUpdatedTime": WHEN}

    @pytest.mark.parametrize(
        ("sent", "stored"),
        [
            ("2026-06-12T05:30:00.123456+02:30", "2026-06-12T03:00:00Z"),  # Python's isoformat(), an offset
            ("2026-06-12T03:00:00.5Z", "2026-06-12T03:00:00Z"),
        ],
    )
    def test_times_are_stored_in_utc_to_the_second(self, sent, stored):
        parsed = progress_update.parse({"trainerStatus": {"lastUpdatedTime": sent}})
        assert parsed is not None
        assert parsed.as_status()["lastUpdatedTime"] == stored

    @pytest.mark.parametrize("value", [0, 100])
    def test_progress_bounds_are_inclusive(self, value):
        parsed = progress_update.parse(report(progressPercentage=value))
        assert parsed is not None
        assert parsed.progress_percentage == value

    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            (
                {"progressPercentage": 101},
                "trainerStatus.progressPercentage: must be between 0 and 100, not 101",
            ),
            (
                {"progressPercentage": -1},
                "trainerStatus.progressPercentage: must be between 0 and 100, not -1",
            ),
            ({"progressPercentage": 45.5}, "trainerStatus.progressPercentage: must be an integer, not 45.5"),
            ({"progressPercentage": "45"}, "trainerStatus.progressPercentage: must be an integer, not '45'"),
            ({"progressPercentage": True}, "trainerStatus.progressPercentage: must be an integer, not True"),
            (
                {"estimatedRemainingSeconds": -5},
                "trainerStatus.estimatedRemainingSeconds: must be between 0 and 2147483647, not -5",
            ),
            (
                {"estimatedRemainingSeconds": 2**31},
                "trainerStatus.estimatedRemainingSeconds: must be between 0 and 2147483647, not 2147483648",
            ),
            (
                {"metrics": {"loss": "0.1"}},
                "trainerStatus.metrics: must be an array of {name, value}, not object",
            ),
            (
                {"metrics": ["loss"]},
                "trainerStatus.metrics[0]: must be an object with name and value, not string",
            ),
            ({"metrics": [{"name": "loss"}]}, "trainerStatus.metrics[0].value: is required"),
            ({"metrics": [{"name": "", "value": "1"}]}, "trainerStatus.metrics[0].name: is required"),
            (
                {"metrics": [{"name": "loss", "value": 0.25}]},
                "trainerStatus.metrics[0].value: "
                'must be a string (send numbers as text, e.g. "0.25"), not number',
            ),
            (
                {"metrics": [{"name": "x" * 65, "value": "1"}]},
                "trainerStatus.metrics[0].name: must have at most 64 characters, not 65",
            ),
            (
                {"metrics": [{"name": "m", "value": "1"}] * 257},
                "trainerStatus.metrics: must have at most 256 items, not 257",
            ),
        ],
    )
    def test_a_field_past_the_crds_limits_is_named(self, fields, expected):
        assert problems(report(**fields)) == [expected]

    def test_64_characters_and_256_metrics_are_allowed(self):
        metrics = [{"name": "n" * 64, "value": "v" * 64}] * 256
        parsed = progress_update.parse(report(metrics=metrics))
        assert parsed is not None
        assert len(parsed.metrics) == 256

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (None, "trainerStatus.lastUpdatedTime: is required when trainerStatus is present"),
            (1718160000, "trainerStatus.lastUpdatedTime: must be an RFC 3339 date-time string, not number"),
            ("2026-06-12", "trainerStatus.lastUpdatedTime: must be an RFC 3339 date-time with an offset"),
            (
                "2026-06-12T03:00:00",
                "trainerStatus.lastUpdatedTime: must be an RFC 3339 date-time with an offset",
            ),
            ("yesterday", "trainerStatus.lastUpdatedTime: must be an RFC 3339 date-time with an offset"),
            (
                "2026-06-12 03:00:00Z",
                "trainerStatus.lastUpdatedTime: must be an RFC 3339 date-time with an offset",
            ),
        ],
    )
    def test_the_time_must_be_rfc3339_with_an_offset(self, value, expected):
        [problem] = problems({"trainerStatus": {"lastUpdatedTime": value}})
        assert problem.startswith(expected)

    def test_every_problem_is_reported_at_once(self):
        body = {"trainerStatus": {"progressPercentage": 200, "metrics": [{"value": "1"}]}}
        assert problems(body) == [
            "trainerStatus.progressPercentage: must be between 0 and 100, not 200",
            "trainerStatus.metrics[0].name: is required",
            "trainerStatus.lastUpdatedTime: is required when trainerStatus is present",
        ]

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            ([], "<body>: must be a JSON object, not array"),
            ({"trainerStatus": 5}, "trainerStatus: must be an object, not number"),
        ],
    )
    def test_a_body_of_the_wrong_shape(self, body, expected):
        assert problems(body) == [expected]


class TestHostileValues:
    """What a JSON body can carry that no field takes: each is named with what was wrong, quoted short."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                '{"progressPercentage": NaN}',
                "trainerStatus.progressPercentage: must be an integer, not nan",
            ),
            (
                '{"estimatedRemainingSeconds": -Infinity}',
                "trainerStatus.estimatedRemainingSeconds: must be an integer, not -inf",
            ),
            (
                '{"progressPercentage": 1e400}',
                "trainerStatus.progressPercentage: must be an integer, not inf",
            ),
            (
                '{"progressPercentage": ' + "9" * 5000 + "}",
                "trainerStatus.progressPercentage: must be between 0 and 100, not an integer of 5000 digits",
            ),
            (
                '{"estimatedRemainingSeconds": -' + "9" * 30 + "}",
                "trainerStatus.estimatedRemainingSeconds: "
                "must be between 0 and 2147483647, not a negative integer of 30 digits",
            ),
            (
                '{"progressPercentage": "' + "x" * 60_000 + '"}',
                "trainerStatus.progressPercentage: must be an integer, not "
                "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… (60002 characters)",
            ),
            (
                '{"metrics": [{"name": "loss", "value": "\\u0000"}]}',
                "trainerStatus.metrics[0].value: must be text without NUL characters or unpaired surrogates",
            ),
            (
                '{"metrics": [{"name": "\\udc80", "value": "1"}]}',
                "trainerStatus.metrics[0].name: must be text without NUL characters or unpaired surrogates",
            ),
            (
                '{"lastUpdatedTime": "0001-01-01T00:00:00+01:00"}',
                "trainerStatus.lastUpdatedTime: must be between 0001-01-01T00:00:00Z and "
                "9999-12-31T23:59:59Z in UTC, not '0001-01-01T00:00:00+01:00'",
            ),
            (
                '{"lastUpdatedTime": "9999-12-31T23:59:59-00:01"}',
                "trainerStatus.lastUpdatedTime: must be between 0001-01-01T00:00:00Z and "
                "9999-12-31T23:59:59Z in UTC, not '9999-12-31T23:59:59-00:01'",
            ),
        ],
    )
    def test_is_named(self, text, expected):
        body = progress_update.loads('{"trainerStatus": ' + text + "}")
        if "lastUpdatedTime" not in text:
            body["trainerStatus"]["lastUpdatedTime"] = WHEN  # type: ignore[index]
        assert problems(body) == [expected]

    def test_loads_keeps_what_json_allows_and_refuses_what_it_does_not(self):
        assert progress_update.loads('{"a": 12, "b": -3}') == {"a": 12, "b": -3}
        assert progress_update.loads("-" + "1" * 21) == progress_update.HugeInteger(21, negative=True)
        with pytest.raises(json.JSONDecodeError):
            progress_update.loads("{not json")

    @pytest.mark.parametrize(
        ("sent", "stored"),
        [
            ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59Z"),
        ],
    )
    def test_the_first_and_last_second_utc_holds_are_kept_with_four_digit_years(self, sent, stored):
        parsed = progress_update.parse(report(lastUpdatedTime=sent))
        assert parsed is not None
        assert parsed.as_status()["lastUpdatedTime"] == stored


class TestStatusPatch:
    def test_the_report_replaces_the_whole_trainer_status_of_that_trainjob_only(self):
        parsed = progress_update.parse(report(progressPercentage=30))
        assert parsed is not None
        assert parsed.status_patch("u-1") == [
            {"op": "test", "path": "/metadata/uid", "value": "u-1"},
            {
                "op": "add",
                "path": "/status/trainerStatus",
                "value": {"progressPercentage": 30, "lastUpdatedTime": WHEN},
            },
        ]

    def test_format_time_converts_to_utc(self):
        moment = datetime(2026, 1, 1, 1, 0, 0, 999, tzinfo=timezone(timedelta(hours=1)))
        assert progress_update.format_time(moment) == "2026-01-01T00:00:00Z"


def pod(labels=None, owners=None):
    return {"metadata": {"name": "tj-node-0-0", "labels": labels or {}, "ownerReferences": owners or []}}


OWNER = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "name": "tj",
    "uid": "u-1",
    "controller": True,
}
LABEL = {"jobset.sigs.k8s.io/jobset-name": "tj"}


class TestOwnerOf:
    def test_a_pod_labelled_and_controlled_by_the_job(self):
        assert progress_update.owner_of(pod(LABEL, [OWNER]), "tj") == progress_update.Owner("tj", "u-1")

    @pytest.mark.parametrize(
        ("labels", "owners"),
        [
            (LABEL, []),  # the label alone: anyone can copy it
            ({}, [OWNER]),
            ({"jobset.sigs.k8s.io/jobset-name": "other"}, [OWNER]),
            (LABEL, [{**OWNER, "controller": False}]),
            (LABEL, [{k: v for k, v in OWNER.items() if k != "controller"}]),
            (LABEL, [{**OWNER, "kind": "PyTorchJob"}]),
            (LABEL, [{**OWNER, "apiVersion": "kubeflow.org/v1"}]),
            (LABEL, [{**OWNER, "name": "other"}]),
            (LABEL, [{**OWNER, "uid": ""}]),
        ],
    )
    def test_anything_less_is_not_the_jobs_pod(self, labels, owners):
        assert progress_update.owner_of(pod(labels, owners), "tj") is None

    def test_a_pod_of_another_job_is_not_this_jobs(self):
        assert progress_update.owner_of(pod(LABEL, [OWNER]), "other") is None
