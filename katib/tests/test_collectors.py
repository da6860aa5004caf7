"""Katib's TestValidateMetricsCollector (validator_test.go, v0.19.0), case by case. Katib checks each
kind's source; where the kind is one whose metrics we do not read (TensorFlowEvent, PrometheusMetric,
Custom), our refusal of the kind comes first and Katib's own checks still follow."""

from __future__ import annotations

import pytest

from katib import constants as k
from katib.tests import fake
from katib.tests.fake import edited, kinds
from katib.validation import validate

INVALID, REQUIRED = "Invalid value", "Required value"
VALID = fake.experiment()
MC = "spec.metricsCollectorSpec"
REFUSED = (f"{MC}.collector.kind", INVALID)


def collector(kind, source=None, **collector_fields):
    spec = {"collector": {"kind": kind, **collector_fields}}
    if source is not None:
        spec["source"] = source
    return edited(VALID, "spec.metricsCollectorSpec", spec)


CASES = [
    (
        "Invalid metrics collector Kind",
        collector("invalid-kind"),
        [REFUSED, (f"{MC}.collector.kind", INVALID)],
    ),
    (
        "Invalid path for File metrics collector",
        collector(k.FILE_COLLECTOR, {"fileSystemPath": {"path": "not/absolute/path", "format": "TEXT"}}),
        [(f"{MC}.source.fileSystemPath.path", REQUIRED)],
    ),
    (
        "Invalid path for TF event metrics collector",
        collector(k.TFEVENT_COLLECTOR, {"fileSystemPath": {"path": "not/absolute/path"}}),
        [REFUSED, (f"{MC}.source", REQUIRED)],
    ),
    (
        "Invalid file format for TF event metrics collector",
        collector(
            k.TFEVENT_COLLECTOR,
            {"fileSystemPath": {"path": "/absolute/path", "format": "JSON", "kind": "Directory"}},
        ),
        [REFUSED, (f"{MC}.source.fileSystemPath.format", INVALID)],
    ),
    (
        "Invalid port and path for Prometheus metrics collector",
        collector(k.PROMETHEUS_COLLECTOR, {"httpGet": {"port": "Port"}}),
        [REFUSED, (f"{MC}.source.httpGet.port", INVALID), (f"{MC}.source.httpGet.path", INVALID)],
    ),
    (
        "Invalid path for Prometheus metrics collector",
        collector(k.PROMETHEUS_COLLECTOR, {"httpGet": {"port": 8888, "path": "not/valid/path"}}),
        [REFUSED, (f"{MC}.source.httpGet.path", INVALID)],
    ),
    (
        "Empty container for Custom metrics collector",
        collector(k.CUSTOM_COLLECTOR),
        [REFUSED, (f"{MC}.collector.customCollector", REQUIRED)],
    ),
    (
        "Invalid path for Custom metrics collector",
        collector(
            k.CUSTOM_COLLECTOR,
            {"fileSystemPath": {"path": "not/absolute/path"}},
            customCollector={"name": "my-collector"},
        ),
        [REFUSED, (f"{MC}.source.fileSystemPath", INVALID)],
    ),
    (
        "Invalid metrics format regex for File metrics collector",
        collector(
            k.FILE_COLLECTOR,
            {
                "filter": {"metricsFormat": ["["]},
                "fileSystemPath": {"path": "/absolute/path", "kind": "File", "format": "TEXT"},
            },
        ),
        [(f"{MC}.source.filter.metricsFormat", INVALID)],
    ),
    (
        "One subexpression in metrics format",
        collector(
            k.FILE_COLLECTOR,
            {
                "filter": {"metricsFormat": ["{metricName: ([\\w|-]+)}"]},
                "fileSystemPath": {"path": "/absolute/path", "kind": "File", "format": "TEXT"},
            },
        ),
        [(f"{MC}.source.filter.metricsFormat", INVALID)],
    ),
    (
        "Invalid file format for File metrics collector",
        collector(
            k.FILE_COLLECTOR,
            {"fileSystemPath": {"path": "/absolute/path", "kind": "File", "format": "invalid"}},
        ),
        [(f"{MC}.source.fileSystemPath.format", REQUIRED)],
    ),
    (
        "Invalid metrics filer for File metrics collector when file format is `JSON`",
        collector(
            k.FILE_COLLECTOR,
            {"filter": {}, "fileSystemPath": {"path": "/absolute/path", "kind": "File", "format": "JSON"}},
        ),
        [(f"{MC}.source.filter", INVALID)],
    ),
    (
        "Run validator for correct File metrics collector",
        collector(
            k.FILE_COLLECTOR, {"fileSystemPath": {"path": "/absolute/path", "kind": "File", "format": "JSON"}}
        ),
        [],
    ),
]


@pytest.mark.parametrize(
    ("instance", "wanted"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_validate_metrics_collector(instance, wanted):
    """TestValidateMetricsCollector."""
    assert kinds(validate(instance)) == wanted


def test_the_collectors_we_read_are_accepted():
    assert validate(collector(k.STDOUT_COLLECTOR)) == []
    assert validate(collector(k.PUSH_COLLECTOR)) == []
    formats = {"filter": {"metricsFormat": ["([\\w|-]+)\\s*=\\s*([+-]?\\d*(\\.\\d+)?([Ee][+-]?\\d+)?)"]}}
    assert validate(collector(k.STDOUT_COLLECTOR, formats)) == []


def test_a_collector_we_do_not_read_is_refused_with_what_to_use():
    errors = validate(
        collector(k.TFEVENT_COLLECTOR, {"fileSystemPath": {"path": "/logs", "kind": "Directory"}})
    )
    assert [str(error) for error in errors] == [
        'spec.metricsCollectorSpec.collector.kind: Invalid value: "TensorFlowEvent": the "TensorFlowEvent" '
        "metrics collector is not served by Argo-ML: use one of StdOut, File, Push"
    ]


def test_collector_errors_read_as_katibs():
    errors = validate(
        collector(k.FILE_COLLECTOR, {"fileSystemPath": {"path": "/m.log", "kind": "File", "format": "x"}})
    )
    assert [str(error) for error in errors] == [
        "spec.metricsCollectorSpec.source.fileSystemPath.format: Required value: format of metrics "
        "file is required "
        "for metrics collector"
    ]
    one_group = {
        "filter": {"metricsFormat": ["(x)"]},
        "fileSystemPath": {"path": "/m.log", "kind": "File", "format": "TEXT"},
    }
    assert [str(error) for error in validate(collector(k.FILE_COLLECTOR, one_group))] == [
        'spec.metricsCollectorSpec.source.filter.metricsFormat: Invalid value: "(x)": two top '
        "subexpressions are "
        "required"
    ]


def test_stdout_and_push_filters_are_not_checked_as_katib_returns_before_them():
    assert validate(collector(k.STDOUT_COLLECTOR, {"filter": {"metricsFormat": ["(x)"]}})) == []


def test_an_experiment_not_yet_defaulted_has_no_collector_to_check():
    assert validate(edited(VALID, "spec.metricsCollectorSpec", None)) == []
