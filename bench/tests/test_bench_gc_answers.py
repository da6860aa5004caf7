"""The answer check of bench/gc_collect.py: a collection that deletes the wrong pods must fail the run."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gc_collect as bench

CREATED = {"ns/eligible-1", "ns/eligible-2", "ns/young-1", "ns/running-1"}
EXPECTED = {"ns/eligible-1", "ns/eligible-2"}


def test_exactly_the_eligible_pods_deleted_passes():
    assert bench.deletion_mismatch(CREATED, left={"ns/young-1", "ns/running-1"}, expected=EXPECTED) is None


def test_a_pod_deleted_that_should_stay_fails_naming_it():
    mismatch = bench.deletion_mismatch(CREATED, left={"ns/running-1"}, expected=EXPECTED)
    assert mismatch is not None
    assert mismatch.startswith("FAIL")
    assert "1 deleted that should stay ['ns/young-1']" in mismatch


def test_an_eligible_pod_left_behind_fails_naming_it():
    left = {"ns/eligible-2", "ns/young-1", "ns/running-1"}
    mismatch = bench.deletion_mismatch(CREATED, left=left, expected=EXPECTED)
    assert mismatch is not None
    assert "1 eligible not deleted ['ns/eligible-2']" in mismatch


def test_the_same_number_deleted_but_the_wrong_ones_fails():
    left = {"ns/eligible-1", "ns/running-1"}  # as many gone as expected: a count check would pass
    assert bench.deletion_mismatch(CREATED, left=left, expected=EXPECTED) is not None
