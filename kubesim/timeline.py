"""Moving simulated time forward so the simulated controllers (kubelet, Argo) react as in real time.

`clock.advance(60)` alone would fire every timer due in the next minute at once, before the controllers had a
chance to react to the first of them (a pod finishing makes Argo create the next pod, whose own timers must
then run inside the same minute). `advance` stops at every due timer and lets subscribers catch up.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesim.clock import Clock
from kubesim.store import Store

_MAX_STEPS = 100_000
_SETTLE_TIMEOUT = 120.0  # real seconds the controllers may take to react to one step


def advance(clock: Clock, store: Store, seconds: float) -> None:
    """Advance `seconds` of simulated time, timer by timer, waiting for subscribers after each one."""
    if seconds < 0:
        raise ValueError(f"advance: seconds must be >= 0, got {seconds}")
    target = clock.time() + seconds
    run_until(clock, store, lambda: False, target=target)


def run_until(
    clock: Clock,
    store: Store,
    condition: Callable[[], bool],
    *,
    within: float | None = None,
    target: float | None = None,
) -> bool:
    """Advance timer by timer until `condition()` holds (True) or `within` seconds passed (False).

    The condition is checked once the store is idle, before time moves and after every step.
    """
    if target is None:
        target = clock.time() + (within if within is not None else 3600.0)
    for _ in range(_MAX_STEPS):
        if not store.wait_idle(_SETTLE_TIMEOUT):
            raise RuntimeError(
                f"run_until: subscribers still busy after {_SETTLE_TIMEOUT:.0f} s of real time"
            )
        if condition():
            return True
        now = clock.time()
        due = clock.next_due()
        if due is None or due > target:
            if now < target:
                clock.advance(target - now)
                continue
            return condition()
        clock.advance(max(due - now, 0.0))
    raise RuntimeError("run_until: timers keep firing without time reaching the target (a zero-delay loop?)")
