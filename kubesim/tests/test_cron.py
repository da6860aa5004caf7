"""CronJob schedules as robfig/cron v3 `ParseStandard` and batch validation judge them (the messages are
the Go code's)."""

from __future__ import annotations

import pytest

from kubesim.builtins import cron
from kubesim.builtins.validation import time_zone_causes


@pytest.mark.parametrize(
    "schedule",
    [
        "* * * * *",
        "*/5 * * * *",
        "0 3 * * *",
        "0 0 1,15 * *",
        "0-30/10 8-18 * jan-mar mon-fri",
        "0 0 ? * SUN",
        "5/15 * * * *",
        "*-5 * * * *",  # robfig ignores what follows `*-`
        ", * * * *",  # an empty list of ranges matches nothing, and is not an error
        "0 0 31 12 6",
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
        "@every 1h30m",
        "@every 1.5s",
        "@every 0",
        "\t0  3 * *\n*",
    ],
)
def test_a_valid_schedule_has_no_problem(schedule: str) -> None:
    assert cron.schedule_problems(schedule) == []


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("every tuesday", "expected exactly 5 fields, found 2: [every tuesday]"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* 24 * * *", "end of range (24) above maximum (23): 24"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * 13 *", "end of range (13) above maximum (12): 13"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("30-10 * * * *", "beginning of range (30) beyond end of range (10): 30-10"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/2/3 * * * *", "too many slashes: */2/3"),
        ("a * * * *", 'failed to parse int from a: strconv.Atoi: parsing "a": invalid syntax'),
        ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        ("+-1 * * * *", 'failed to parse int from +: strconv.Atoi: parsing "+": invalid syntax'),
        ("* * * foo *", 'failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax'),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every", "unrecognized descriptor: @every"),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
        ("@every 5y", 'failed to parse duration @every 5y: time: unknown unit "y" in duration "5y"'),
        ("@every x", 'failed to parse duration @every x: time: invalid duration "x"'),
        ("", "empty spec string"),
    ],
)
def test_robfig_refuses_with_its_own_words(schedule: str, problem: str) -> None:
    with pytest.raises(cron.CronError) as error:
        cron.parse_standard(schedule)
    assert str(error.value) == problem


def test_the_first_bad_field_is_the_one_reported() -> None:
    """Fields are parsed minute, hour, day of month, month, day of week; the first error stops it."""
    assert cron.schedule_problems("* 99 99 * *") == ["end of range (99) above maximum (23): 99"]


def test_tz_prefixes_are_refused_in_the_schedule_since_1_27() -> None:
    """ "cannot use TZ or CRON_TZ in schedule, use timeZone field instead" — robfig still parses them (a bad
    location is its own error) and batch validation refuses the "TZ" after it."""
    refused = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    assert cron.schedule_problems("CRON_TZ=UTC 0 3 * * *") == [refused]
    assert cron.schedule_problems("TZ=Europe/Paris 0 3 * * *") == [refused]
    assert cron.schedule_problems("TZ=Mars/Olympus 0 3 * * *") == [
        "provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
        refused,
    ]


def test_an_update_keeps_a_tz_prefix_already_stored_unless_time_zone_is_set() -> None:
    assert cron.schedule_problems("TZ=UTC 0 3 * * *", tz_allowed=True) == []
    assert cron.schedule_problems("TZ=UTC 0 3 * * *", tz_allowed=True, has_time_zone=True) == [
        "cannot use both timeZone field and TZ or CRON_TZ in schedule"
    ]


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [("0", 0), ("1h30m", 5_400_000_000_000), ("1.5s", 1_500_000_000), ("-2ms", -2_000_000), ("3µs", 3000)],
)
def test_go_durations(text: str, nanoseconds: int) -> None:
    assert cron.parse_go_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ("", 'Invalid value: "": timeZone must be nil or non-empty string'),
        ("Europe/Pariss", 'Invalid value: "Europe/Pariss": unknown time zone Europe/Pariss'),
        ("../etc/passwd", 'Invalid value: "../etc/passwd": unknown time zone ../etc/passwd'),
        (
            "Local",
            'Invalid value: "Local": timeZone must be an explicit time zone as defined in '
            "https://www.iana.org/time-zones",
        ),
    ],
)
def test_a_time_zone_must_be_an_iana_name(zone: str, message: str) -> None:
    assert [c.message for c in time_zone_causes(zone, "spec.timeZone")] == [message]
    assert time_zone_causes("Europe/Paris", "spec.timeZone") == []
    assert time_zone_causes(None, "spec.timeZone") == []
