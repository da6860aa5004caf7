"""A token bucket for writes to the API server: at most `qps` a second on average, `burst` at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: The write limit every process ships with, per process: the defaults of KUBE_WRITE_QPS and
#: KUBE_WRITE_BURST in argoml_site/settings.py, and of the chart's config.kubeWriteQps/kubeWriteBurst
#: (deploy/tests/test_chart.py holds the chart to these). Sizing for a cluster: docs/jobs.md.
DEFAULT_WRITE_QPS = 20.0
DEFAULT_WRITE_BURST = 50


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if qps <= 0 or burst < 1:
            raise ValueError("A token bucket needs qps > 0 and burst >= 1.")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._updated = clock()
        self._lock = threading.Lock()

    def _reserve(self) -> float:
        """Take one token (possibly going into debt) and return how long the caller must wait for it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._updated) * self.qps)
            self._updated = now
            self._tokens -= 1
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        """Block until a token is available; return the seconds waited."""
        wait = self._reserve()
        if wait > 0:
            self._sleep(wait)
        return wait
