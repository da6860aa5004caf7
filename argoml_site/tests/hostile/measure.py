"""What one call into a door cost: the CPU time its thread spent, its wall time, and the peak growth of
the Python heap while it ran, measured in this process, which is the process that did the work (the web
application, the webhook listener, a management command and a reconcile are all called in-process; the
simulator runs in a process of its own).

The budget is on CPU time, not wall time: on the 2-core machine `make test` runs four pytest processes and
mypy at once, so a case's wall time says more about its neighbours than about the door. The wall time is
printed beside it and bounds only a case that runs away.

tracemalloc counts every Python object and buffer (the parsed trees, strings and responses that made the
web process grow to 22 GB in issue 27); memory a C library keeps to itself is not counted, which is why
every door's text is also bounded in bytes before any parser sees it.
"""

from __future__ import annotations

import ctypes
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: The budget of one hostile input at one door, in CPU seconds of its thread (with tracemalloc on, which
#: makes allocating work a few times slower) and in heap growth. Not a speed target (those are benchmarks):
#: a door that does bounded work answers in milliseconds, so these only catch work that grows with the
#: input.
SECONDS = 5.0
HEAP_BYTES = 80 * 1024 * 1024


@dataclass(frozen=True)
class Measured(Generic[T]):
    result: T
    seconds: float  # CPU time of the thread that ran the call
    peak_bytes: int
    wall_seconds: float = 0.0

    def over_budget(self) -> list[str]:
        problems = []
        if self.seconds > SECONDS:
            problems.append(f"took {self.seconds:.1f} s of CPU (budget {SECONDS:.0f} s)")
        if self.peak_bytes > HEAP_BYTES:
            problems.append(
                f"grew the heap by {self.peak_bytes / 2**20:.0f} MiB (budget {HEAP_BYTES // 2**20} MiB)"
            )
        return problems

    def figures(self) -> str:
        return (
            f"{self.seconds * 1000:.0f} ms of CPU ({self.wall_seconds * 1000:.0f} ms wall), "
            f"{self.peak_bytes / 2**20:.1f} MiB"
        )


#: Past these a case is stopped where it stands (a count of 10^9 pods would otherwise take the test
#: process down, as it took the web process down in issue 27): it has failed its budget either way. Wall
#: time, generously: a thread's CPU time cannot be read from the watchdog's thread.
RUNAWAY_SECONDS = 12 * SECONDS
RUNAWAY_BYTES = 8 * HEAP_BYTES


class Runaway(BaseException):
    """The case ran far past its budgets and was stopped (a BaseException, so no `except Exception` in the
    code under test swallows it)."""


def measured(call: Callable[[], T]) -> Measured[T | str]:
    """Run `call` with tracemalloc on; the heap peak is counted from the call's start. A call that runs
    away is stopped by a watchdog thread and answers a description of how far it got.

    Tracing starts with the first call and stays on: stopping it while the simulator's threads allocate
    can crash CPython 3.11's tracemalloc, and the peak is relative to the call's start anyway."""
    if not tracemalloc.is_tracing():
        tracemalloc.start()
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    watchdog = _Watchdog(threading.get_ident(), before)
    started, cpu_started = time.perf_counter(), time.thread_time()
    watchdog.start()
    result: T | str
    try:
        result = call()
    except Runaway:
        result = "stopped by the watchdog"
    finally:
        watchdog.stop()
        cpu_seconds, wall_seconds = time.thread_time() - cpu_started, time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    return Measured(result, cpu_seconds, max(peak - before, 0), wall_seconds)


class _Watchdog(threading.Thread):
    """Raises Runaway in the measured thread once it passes RUNAWAY_SECONDS or RUNAWAY_BYTES."""

    def __init__(self, target: int, baseline: int) -> None:
        super().__init__(daemon=True)
        self._target = target
        self._baseline = baseline
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._fired = False

    def run(self) -> None:
        started = time.perf_counter()
        while not self._done.wait(0.02):
            traced = tracemalloc.get_traced_memory()[0] - self._baseline
            if time.perf_counter() - started > RUNAWAY_SECONDS or traced > RUNAWAY_BYTES:
                with self._lock:
                    if not self._done.is_set():
                        self._fired = True
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(self._target), ctypes.py_object(Runaway)
                        )
                return

    def stop(self) -> None:
        with self._lock:
            self._done.set()
            if self._fired:  # withdraw an exception not yet delivered
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), None)
        self.join()
