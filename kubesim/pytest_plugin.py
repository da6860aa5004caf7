"""pytest fixtures: `kubesim` (a running simulator per test) and `kubesim_factory` (start one with options).

Load with `-p kubesim.pytest_plugin` or `pytest_plugins = ["kubesim.pytest_plugin"]` in a conftest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from kubesim.simulator import Simulator
from kubesim.testing import running_simulator


@pytest.fixture
def kubesim() -> Iterator[Simulator]:
    with running_simulator() as simulator:
        yield simulator


@pytest.fixture
def kubesim_factory() -> Iterator[Callable[..., Simulator]]:
    """`kubesim_factory(frozen_clock=True, event_log_size=50)` starts a simulator stopped after the test."""
    with ExitStack() as stack:

        def start(**options: Any) -> Simulator:
            return stack.enter_context(running_simulator(**options))

        yield start
