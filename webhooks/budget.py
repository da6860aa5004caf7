"""A time budget for one admission review: past it, the review is stopped where it stands.

Why an exception raised asynchronously in the request's own thread, and not the alternatives:
- a worker thread with a timeout abandons the *answer* but not the *work*: Python cannot kill a thread,
  so the abandoned lint keeps the GIL busy and every later review on that process pays for it;
- SIGALRM interrupts only the main thread, and gunicorn's gthread worker serves requests in pool threads;
- a cooperative deadline would have to be checked in every loop of the linter, the job validation and the
  sweep parser, and one forgotten loop unbounds the review again.
`PyThreadState_SetAsyncExc` makes the request's thread raise `BudgetExceeded` at its next bytecode
boundary, in whichever module it is: CPU stops being spent there and then. What it cannot interrupt is one
long call into C (a regex, a JSON decode); the body size cap bounds those.

`BudgetExceeded` derives from BaseException so that the `except Exception` nets inside the checks (which
turn a bug into a denial) do not swallow it.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class BudgetExceeded(BaseException):
    """The review ran past its budget and was stopped."""


class _Deadline:
    """The request thread's side and the timer's side of one budget, made exclusive by a lock."""

    def __init__(self, thread_id: int) -> None:
        self._thread_id = thread_id
        self._lock = threading.Lock()
        self._running = True
        self.expired = False

    def expire(self) -> None:
        with self._lock:
            if self._running:
                self.expired = True
                _raise_in_thread(self._thread_id, BudgetExceeded)

    def finish(self) -> None:
        """The work is done: no exception may arrive after this returns (a pending one is withdrawn)."""
        with self._lock:
            self._running = False
            if self.expired:
                _raise_in_thread(self._thread_id, None)


def within_budget(work: Callable[[], T], seconds: float) -> T:
    """`work()`, or BudgetExceeded once it has run for `seconds`."""
    deadline = _Deadline(threading.get_ident())
    timer = threading.Timer(seconds, deadline.expire)
    timer.daemon = True
    timer.start()
    try:
        result = work()
    finally:
        deadline.finish()
        timer.cancel()
    if deadline.expired:
        raise BudgetExceeded  # the answer came just as the budget ran out: late all the same
    return result


def _raise_in_thread(thread_id: int, exception: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception is not None else None
    )
