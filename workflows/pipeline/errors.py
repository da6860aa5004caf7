"""Problems found in a pipeline or its configuration, collected so that all of them are reported at once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import limits
from workflows import spelling


@dataclass(frozen=True)
class Problem:
    """One thing wrong: where (``step train``, ``config``), which field, and what is wrong with it."""

    where: str
    field: str
    message: str

    def __str__(self) -> str:
        if self.field:
            return f"{self.where}: {self.field}: {self.message}"
        return f"{self.where}: {self.message}"


class PipelineError(ValueError):
    """Raised with every problem found, so they are fixed in one round and nothing half-valid is written.
    `count` is how many were found (more than `problems` lists when the report was cut short)."""

    def __init__(self, problems: Iterable[Problem], count: int | None = None) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.count = len(self.problems) if count is None else count
        super().__init__("\n".join(str(problem) for problem in self.problems))


#: A report lists this many problems (and warnings) and counts the rest (the one figure every report uses).
MAX_LISTED = limits.PROBLEMS_LISTED


@dataclass
class Problems:
    """A collector passed through parsing; parsing goes on after a problem so later ones are found too.

    ``warnings`` hold what is accepted but worth a second look (a Magnus setting we ignore, a ``fail`` step
    nothing reaches): they travel with the result and never stop it. Both keep the first MAX_LISTED and
    count the rest; `count` is every problem added.
    """

    found: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    count: int = 0
    unlisted_warnings: int = 0

    def add(self, where: str, field_name: str, message: str) -> None:
        self.count += 1
        if len(self.found) < MAX_LISTED:
            self.found.append(Problem(where, field_name, message))

    def warn(self, message: str) -> None:
        if len(self.warnings) < MAX_LISTED:
            self.warnings.append(message)
        else:
            self.unlisted_warnings += 1

    def listed_warnings(self) -> tuple[str, ...]:
        """The warnings, with one more that counts those not listed."""
        if not self.unlisted_warnings:
            return tuple(self.warnings)
        return (*self.warnings, f"and {self.unlisted_warnings} more warnings, not listed")

    def has(self, where: str, field_name: str) -> bool:
        return any(problem.where == where and problem.field == field_name for problem in self.found)

    def raise_if_any(self) -> None:
        if not self.count:
            return
        unlisted = self.count - len(self.found)
        message = f"and {unlisted} more problems, not listed (a report lists the first {MAX_LISTED})"
        summary = Problem("pipeline", "", message)
        raise PipelineError([*self.found, summary] if unlisted else self.found, self.count)


def unknown_key_message(key: str, known: Iterable[str]) -> str:
    """Name the unknown key and, when it looks like a typo, the key the user probably meant."""
    hint = spelling.did_you_mean(key, known, quote="'") or f"known keys: {', '.join(sorted(known))}"
    return f"unknown key '{key}'; {hint}"
