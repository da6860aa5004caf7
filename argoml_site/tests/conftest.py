"""Fixtures the site's test modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .hostile.checks import Figures


@pytest.fixture(scope="session")
def hostile_figures(request: pytest.FixtureRequest) -> Iterator[dict[str, Figures]]:
    """The hostile-input suite's figures by door group, printed and written once the session ends (a
    module-scoped collector would be torn down and started again whenever pytest reorders its tests)."""
    book: dict[str, Figures] = {}
    yield book
    for figures in book.values():
        figures.report(request.config)
