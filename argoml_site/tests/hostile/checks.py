"""What every door must do with every hostile case, and the figures the suite prints.

The property (issue 27): the door answers — a refusal (4xx) that names the field at fault, or an
acceptance — never an error of its own (5xx, a traceback, a crashed reconcile), within the time and heap
budgets of `measure`. A case marked `must_refuse` (a count past its bound, an alias bomb) must be refused.
(That a count's refusal names its bound's setting is each door's own test: a Chief's `replicas: 1001` is
rightly refused as "at most 1", before any bound.)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from .corpus import Case
from .measure import Measured

#: Refusals that say what is wrong with the input, and so must name the field.
VALIDATION_STATUSES = frozenset({400, 422})


@dataclass(frozen=True)
class Answer:
    """What a door did: an HTTP status (0 for a command or a controller), the text it answered (a body,
    a command's error, the object's conditions), whether it refused, and an error of its own, if any."""

    status: int
    text: str
    refused: bool
    error: str = ""


def problems(case: Case, cost: Measured[Answer | str]) -> list[str]:
    """Everything the door did wrong with `case` (an empty list: it held)."""
    found = list(cost.over_budget())
    answer = cost.result
    if isinstance(answer, str):  # the watchdog stopped it
        return [*found, answer]
    if answer.error:
        found.append(f"failed with an error of its own: {answer.error[:300]}")
    if answer.status >= 500:
        found.append(f"answered {answer.status}: {answer.text[:300]}")
    if case.must_refuse and not answer.refused:
        found.append(f"accepted what it must refuse ({answer.status}: {answer.text[:200]})")
    names_field = answer.status in VALIDATION_STATUSES or (answer.status == 0 and answer.refused)
    if answer.refused and names_field and case.names and not any(name in answer.text for name in case.names):
        found.append(f"refused without naming the field (one of {case.names}): {answer.text[:300]}")
    return found


class Figures:
    """The slowest case and the largest heap growth per (door group, family), printed when the session ends
    and written to `.dev/hostile-figures-<group>.md`, where a closing note or the docs can quote them."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.slowest: dict[str, tuple[float, str]] = defaultdict(lambda: (0.0, ""))
        self.largest: dict[str, tuple[int, str]] = defaultdict(lambda: (0, ""))
        self.count = 0

    def record(self, family: str, door: str, cost: Measured[Answer | str]) -> None:
        self.count += 1
        if cost.seconds >= self.slowest[family][0]:
            self.slowest[family] = (cost.seconds, door)
        if cost.peak_bytes >= self.largest[family][0]:
            self.largest[family] = (cost.peak_bytes, door)

    def lines(self) -> list[str]:
        rows = [
            f"| {self.group}: family | slowest | at | largest heap growth | at |",
            "|---|---|---|---|---|",
        ]
        for family in sorted(self.slowest):
            seconds, slow = self.slowest[family]
            peak, large = self.largest[family]
            rows.append(f"| {family} | {seconds * 1000:.0f} ms | {slow} | {peak / 2**20:.1f} MiB | {large} |")
        rows.append(f"({self.count} cases)")
        return rows

    def report(self, config: pytest.Config) -> None:
        if not self.count:
            return
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        lines = self.lines()
        if reporter is not None:
            reporter.write_line("")
            for line in lines:
                reporter.write_line(line)
        out = Path(__file__).resolve().parents[3] / ".dev" / f"hostile-figures-{self.group}.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
