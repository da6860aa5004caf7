"""Pure helpers of the dashboard: the replica grid, keyset cursors, resubmitted names, template filters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from access.scopes import NamespaceScope
from dashboard.jobgrid import replica_grid, stopped_after_success
from dashboard.pagination import BadCursor, decode_cursor, encode_cursor
from dashboard.templatetags.dashboard import duration, tone
from dashboard.views import gc
from dashboard.views.jobs import resubmitted_name


@dataclass
class Pod:
    replica_type: str
    replica_index: int | None
    deleted_at: datetime | None = None
    phase: str = "Running"
    exit_code: int | None = None
    message: str = ""


def test_the_grid_has_a_row_per_type_and_a_cell_per_wanted_index_even_without_pods():
    rows = replica_grid({"Master": 1, "Worker": 3}, [Pod("worker", 1)])
    assert [row.replica_type for row in rows] == ["Master", "Worker"]
    assert [cell.replica is None for cell in rows[1].cells] == [True, False, True]


def test_a_recreated_replica_shows_its_live_pod_and_counts_its_attempts():
    gone = Pod("worker", 0, deleted_at=datetime(2026, 1, 1, tzinfo=UTC), phase="Failed")
    live = Pod("worker", 0)
    cell = replica_grid({"Worker": 1}, [gone, live])[0].cells[0]
    assert cell.replica is live
    assert cell.attempts == 2


def test_pods_beyond_the_wanted_count_and_unknown_types_still_show():
    rows = replica_grid({"Worker": 1}, [Pod("worker", 2), Pod("evaluator", 0)])
    assert len(rows[0].cells) == 3
    assert rows[1].replica_type == "Evaluator"


@pytest.mark.parametrize(
    ("job_phase", "pod", "stopped"),
    [
        ("Succeeded", Pod("ps", 0, phase="Failed", exit_code=143), True),  # SIGTERM once the job succeeded
        ("Succeeded", Pod("ps", 0, phase="Failed", exit_code=137), True),  # SIGKILL past the grace period
        ("Succeeded", Pod("worker", 1, phase="Failed", exit_code=137, message="OOMKilled"), False),
        ("Succeeded", Pod("ps", 0, phase="Failed", exit_code=1), False),  # it failed by itself
        ("Succeeded", Pod("ps", 0, phase="Succeeded", exit_code=0), False),
        ("Failed", Pod("ps", 0, phase="Failed", exit_code=143), False),  # stopped because the job failed
        ("Running", Pod("ps", 0, phase="Failed", exit_code=143), False),
        (None, Pod("ps", 0, phase="Failed", exit_code=143), False),
    ],
)
def test_a_pod_stopped_once_the_job_succeeded_is_told_apart_from_a_failure(job_phase, pod, stopped):
    assert stopped_after_success(pod, job_phase) is stopped
    assert replica_grid({"PS": 1}, [pod], job_phase)[0].cells[0].stopped is stopped


def test_cursors_round_trip_and_forged_ones_are_refused():
    moment = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
    assert decode_cursor(encode_cursor(moment, 42)) == (moment, 42)
    assert decode_cursor(encode_cursor(None, 7)) == (None, 7)
    for forged in ("", "x~y", "2026-13-45~3", "nonsense"):
        with pytest.raises(BadCursor):
            decode_cursor(forged)


def test_a_resubmitted_name_is_new_and_fits_63_characters():
    assert resubmitted_name("mnist").startswith("mnist-")
    assert resubmitted_name("mnist") != resubmitted_name("mnist")
    long = resubmitted_name("a" * 63)
    assert len(long) == 63


def test_phases_get_tones_and_durations_read_like_people_write_them():
    assert (tone("Succeeded"), tone("Failed"), tone("Running"), tone(None)) == ("ok", "bad", "active", "idle")
    assert (duration(9), duration(252), duration(11100), duration(None)) == ("9s", "4m 12s", "3h 05m", "—")


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (NamespaceScope(readable=frozenset({"team-a"}), writable=frozenset()), ["a"]),
        (NamespaceScope(readable=frozenset(), writable=frozenset()), []),
        (NamespaceScope(frozenset(), frozenset(), everywhere=True), ["a", "b", "all", "old"]),
    ],
)
def test_visible_failures_keeps_those_in_readable_namespaces(scope, expected):
    failures = [
        {"what": "a", "namespace": "team-a"},
        {"what": "b", "namespace": "team-b"},
        {"what": "all", "namespace": ""},
        {"what": "old"},
        "not a failure",
    ]
    assert [failure["what"] for failure in gc.visible_failures(failures, scope)] == expected


def test_visible_failures_of_a_row_that_is_not_a_list_is_empty():
    assert gc.visible_failures({"what": "x"}, NamespaceScope(frozenset(), frozenset(), everywhere=True)) == []
