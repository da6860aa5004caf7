"""The replica summary shown by `kubectl get` and the admin: one part per replica type."""

from __future__ import annotations

import pytest

from jobs.frameworks import TensorFlow
from jobs.summary import replica_summary
from jobs.tests.fakes import tf_job


def statuses(**by_type: tuple[int, int, int]) -> dict:
    return {
        "replicaStatuses": {
            replica_type: {"active": active, "succeeded": succeeded, "failed": failed}
            for replica_type, (active, succeeded, failed) in by_type.items()
        }
    }


@pytest.mark.parametrize(
    ("observed", "summary"),
    [
        ({}, "PS 0/2 running · Worker 0/4 running"),
        ({"PS": (2, 0, 0), "Worker": (3, 0, 0)}, "PS 2/2 · Worker 3/4 running"),
        ({"PS": (2, 0, 0), "Worker": (2, 2, 0)}, "PS 2/2 · Worker 2/4 running"),
        ({"PS": (0, 0, 0), "Worker": (0, 4, 0)}, "PS 0/2 running · Worker 4/4 succeeded"),
        ({"PS": (0, 0, 0), "Worker": (0, 1, 0)}, "PS 0/2 running · Worker 1/4 succeeded"),
        ({"PS": (2, 0, 0), "Worker": (3, 0, 1)}, "PS 2/2 · Worker 1/4 failed"),
    ],
)
def test_each_replica_type_says_how_many_of_its_pods_are_up_done_or_failed(observed, summary):
    job = tf_job(chief=0, ps=2, workers=4)
    assert replica_summary(job, statuses(**observed), TensorFlow()) == summary


def test_types_follow_the_frameworks_order_and_malformed_counts_read_as_zero():
    job = tf_job(chief=1, ps=0, workers=1)
    status = {"replicaStatuses": {"Worker": {"active": "many"}, "Chief": {"active": 1}}}
    assert replica_summary(job, status, TensorFlow()) == "Chief 1/1 · Worker 0/1 running"
