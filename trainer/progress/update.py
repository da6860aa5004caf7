"""A pod's progress report (KEP-2779's UpdateTrainJobStatusRequest) read once, every field checked against
the limits Trainer's CRD puts on `status.trainerStatus` (and what our database and the API server can
hold), and turned into the status patch; and whether a pod belongs to the TrainJob it reports for.

Whatever the body, a wrong field is named, never a 5xx: NaN and Infinity, integers longer than Python
reads, dates outside what UTC can hold, text with NUL or unpaired surrogates.

Pure: the view (`trainer.progress.view`) does the HTTP, the token review and the writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import fields
from trainer import constants as c

# Trainer's TrainerStatus (pkg/apis/trainer/v1alpha1/trainjob_types.go): int32 fields, kubebuilder limits.
MAX_PERCENTAGE = 100
MAX_INT32 = 2**31 - 1
MAX_METRICS = 256
MAX_METRIC_TEXT = 64
ROOT = "trainerStatus"
#: The status patch's precondition: the TrainJob's uid (JSON pointer).
UID_PATH = "/metadata/uid"
#: An integer literal longer than this is not read as a number: no field takes more than 10 digits, and
#: Python refuses to convert past 4,300.
MAX_INTEGER_DIGITS = 20
#: What an error message shows of a wrong value at most.
SHOWN_CHARACTERS = 40


@dataclass(frozen=True)
class Metric:
    name: str
    value: str


@dataclass(frozen=True)
class TrainerStatus:
    """`status.trainerStatus` as a pod reported it; None is "unknown", as Trainer leaves the field out."""

    progress_percentage: int | None
    estimated_remaining_seconds: int | None
    metrics: tuple[Metric, ...]
    last_updated_time: datetime

    def as_status(self) -> fields.RawDict:
        """The field as the API server stores it and Trainer's server echoes it: unknowns left out, the
        time in RFC 3339 to the second, UTC (metav1.Time)."""
        body: fields.RawDict = {}
        if self.progress_percentage is not None:
            body["progressPercentage"] = self.progress_percentage
        if self.estimated_remaining_seconds is not None:
            body["estimatedRemainingSeconds"] = self.estimated_remaining_seconds
        if self.metrics:
            body["metrics"] = [{"name": m.name, "value": m.value} for m in self.metrics]
        body["lastUpdatedTime"] = format_time(self.last_updated_time)
        return body

    def status_patch(self, job_uid: str) -> list[fields.RawDict]:
        """A JSON patch (RFC 6902) of the status subresource that applies only to the TrainJob whose uid is
        `job_uid`, the one the reporting pod belongs to: its `test` fails on any other (an earlier TrainJob
        of the same name, or a uid a forged owner reference claims), and nothing is written. Then
        `trainerStatus` is replaced whole: a field the pod no longer reports is removed (Trainer applies
        the report with force, so it owns every field)."""
        return [
            {"op": "test", "path": UID_PATH, "value": job_uid},
            {"op": "add", "path": f"/status/{ROOT}", "value": self.as_status()},
        ]


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC to the second, the year always four digits (`strftime("%Y")` writes year 1 as "1")."""
    return moment.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


#: The first and last second a time may name: what a datetime holds once moved to UTC.
EARLIEST = format_time(datetime.min.replace(tzinfo=UTC))
LATEST = format_time(datetime.max.replace(tzinfo=UTC))


@dataclass(frozen=True)
class HugeInteger:
    """A JSON integer literal too long to be any field's value, kept as its sign and length."""

    digits: int
    negative: bool

    def __str__(self) -> str:
        return f"{'a negative' if self.negative else 'an'} integer of {self.digits} digits"


def _integer_literal(text: str) -> int | HugeInteger:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        return HugeInteger(digits, text.startswith("-"))
    return int(text)


def loads(body: bytes | str) -> object:
    """The body as JSON, with NaN and ±Infinity read as floats and over-long integers as `HugeInteger`, so
    the field that holds them is named by `parse`; ValueError when it is not JSON. The caller bounds the
    text's size and nesting first (`workflows.safeyaml.bounded_json_text`)."""
    return json.loads(body, parse_constant=float, parse_int=_integer_literal)


def parse(body: object) -> TrainerStatus | None:
    """The report's trainer status, None when it has none (Trainer answers such a report 200 and writes
    nothing). SpecError names every wrong field, e.g. `trainerStatus.metrics[3].value`."""
    found = fields.ErrorList()
    if not isinstance(body, dict):
        found.add("<body>", f"must be a JSON object, not {_type(body)}")
        found.raise_if_any()
    assert isinstance(body, dict)
    raw = body.get(ROOT)
    if raw is None:
        return None
    if not isinstance(raw, dict):
        found.add(ROOT, f"must be an object, not {_type(raw)}")
        found.raise_if_any()
    progress = _integer(found, f"{ROOT}.progressPercentage", raw.get("progressPercentage"), MAX_PERCENTAGE)
    remaining = _integer(
        found, f"{ROOT}.estimatedRemainingSeconds", raw.get("estimatedRemainingSeconds"), MAX_INT32
    )
    metrics = _metrics(found, raw.get("metrics"))
    updated = _time(found, f"{ROOT}.lastUpdatedTime", raw.get("lastUpdatedTime"))
    found.raise_if_any()
    assert updated is not None
    return TrainerStatus(progress, remaining, metrics, updated)


def _type(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _shown(value: object) -> str:
    """A wrong value as an error message quotes it: its repr, cut short."""
    if isinstance(value, dict | list):
        return _type(value)
    shown = repr(value)
    return (
        shown if len(shown) <= SHOWN_CHARACTERS else f"{shown[:SHOWN_CHARACTERS]}… ({len(shown)} characters)"
    )


def _integer(found: fields.ErrorList, path: str, value: object, maximum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, HugeInteger):
        found.add(path, f"must be between 0 and {maximum}, not {value}")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        found.add(path, f"must be an integer, not {_shown(value)}")
        return None
    if not 0 <= value <= maximum:
        found.add(path, f"must be between 0 and {maximum}, not {value}")
        return None
    return value


def _metrics(found: fields.ErrorList, value: object) -> tuple[Metric, ...]:
    path = f"{ROOT}.metrics"
    if value is None:
        return ()
    if not isinstance(value, list):
        found.add(path, f"must be an array of {{name, value}}, not {_type(value)}")
        return ()
    if len(value) > MAX_METRICS:
        found.add(path, f"must have at most {MAX_METRICS} items, not {len(value)}")
        return ()
    metrics = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            found.add(f"{path}[{index}]", f"must be an object with name and value, not {_type(item)}")
            continue
        name = _metric_text(found, f"{path}[{index}].name", item.get("name"))
        text = _metric_text(found, f"{path}[{index}].value", item.get("value"))
        if name is not None and text is not None:
            metrics.append(Metric(name, text))
    return tuple(metrics)


def _given_text(
    found: fields.ErrorList, path: str, value: object, *, missing: str, expected: str
) -> str | None:
    """`value` when it is a string that is not empty; else None, with `missing` recorded when it is unset or
    empty, `must be <expected>, not <its type>` when it is not a string."""
    if value is None or value == "":
        found.add(path, missing)
        return None
    if not isinstance(value, str):
        found.add(path, f"must be {expected}, not {_type(value)}")
        return None
    return value


def _metric_text(found: fields.ErrorList, path: str, value: object) -> str | None:
    expected = 'a string (send numbers as text, e.g. "0.25")'
    value = _given_text(found, path, value, missing="is required", expected=expected)
    if value is None:
        return None
    if len(value) > MAX_METRIC_TEXT:
        found.add(path, f"must have at most {MAX_METRIC_TEXT} characters, not {len(value)}")
        return None
    if not _storable(value):
        found.add(path, "must be text without NUL characters or unpaired surrogates")
        return None
    return value


def _storable(text: str) -> bool:
    """Whether PostgreSQL's jsonb (no NUL) and UTF-8 (no lone surrogate) can hold the text."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _time(found: fields.ErrorList, path: str, value: object) -> datetime | None:
    """An RFC 3339 date-time with its offset (what metav1.Time reads)."""
    # Trainer's CRD: "lastUpdatedTime is required when trainerStatus is present".
    missing = "is required when trainerStatus is present"
    value = _given_text(found, path, value, missing=missing, expected="an RFC 3339 date-time string")
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = None
    if moment is None or "T" not in value or moment.tzinfo is None:
        found.add(
            path,
            f"must be an RFC 3339 date-time with an offset, e.g. 2026-06-12T03:00:00Z, not {_shown(value)}",
        )
        return None
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # in range where written, not once moved to UTC (year 1 ahead of it, 9999 behind)
        found.add(path, f"must be between {EARLIEST} and {LATEST} in UTC, not {_shown(value)}")
        return None


@dataclass(frozen=True)
class Owner:
    """The TrainJob a pod belongs to, by its controller reference: a claim until the status patch's uid
    test holds (`TrainerStatus.status_patch`)."""

    name: str
    uid: str


def owner_of(pod: fields.RawDict, job_name: str) -> Owner | None:
    """The TrainJob `job_name` when `pod` is one of its pods: labelled with its JobSet name and controlled
    by it (both, so neither a copied label nor a stray owner reference is enough); else None."""
    metadata = pod.get("metadata") or {}
    if (metadata.get("labels") or {}).get(c.LABEL_JOBSET_NAME) != job_name:
        return None
    for reference in metadata.get("ownerReferences") or []:
        if (
            reference.get("controller") is True
            and reference.get("kind") == c.TRAIN_JOB_KIND
            and str(reference.get("apiVersion", "")).partition("/")[0] == c.GROUP
            and reference.get("name") == job_name
            and reference.get("uid")
        ):
            return Owner(job_name, str(reference["uid"]))
    return None
