"""The write limiter lets a burst through, then holds callers to the configured rate."""

import pytest

from kube.ratelimit import TokenBucket


class FakeTime:
    def __init__(self):
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_burst_passes_without_waiting():
    time = FakeTime()
    bucket = TokenBucket(qps=10, burst=3, clock=time.clock, sleep=time.sleep)
    assert [bucket.acquire() for _ in range(3)] == [0, 0, 0]
    assert time.slept == []


def test_past_the_burst_callers_wait_one_token_interval_each():
    time = FakeTime()
    bucket = TokenBucket(qps=10, burst=2, clock=time.clock, sleep=time.sleep)
    for _ in range(5):
        bucket.acquire()
    assert time.slept == pytest.approx([0.1, 0.1, 0.1])


def test_tokens_refill_with_time_up_to_the_burst():
    time = FakeTime()
    bucket = TokenBucket(qps=2, burst=2, clock=time.clock, sleep=time.sleep)
    bucket.acquire()
    bucket.acquire()
    time.now += 100  # far longer than needed: the bucket holds at most `burst` tokens
    assert [bucket.acquire() for _ in range(2)] == [0, 0]
    assert bucket.acquire() == pytest.approx(0.5)


def test_concurrent_callers_queue_behind_each_other():
    time = FakeTime()
    bucket = TokenBucket(qps=4, burst=1, clock=time.clock, sleep=lambda s: None)
    waits = [bucket._reserve() for _ in range(4)]
    assert waits == pytest.approx([0, 0.25, 0.5, 0.75])


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_a_bucket_needs_a_positive_rate_and_burst(qps, burst):
    with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
        TokenBucket(qps=qps, burst=burst)
