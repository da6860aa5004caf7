"""Problems found in a pipeline or its configuration, collected so that all of them are reported at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field


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
    """Raised with every problem found, so they are fixed in one round and nothing half-valid is written."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


@dataclass
class Problems:
    """A collector passed through parsing; parsing goes on after a problem so later ones are found too.

    ``warnings`` hold what is accepted but worth a second look (a Magnus setting we ignore, a ``fail`` step
    nothing reaches): they travel with the result and never stop it.
    """

    found: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, where: str, field_name: str, message: str) -> None:
        self.found.append(Problem(where, field_name, message))

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def has(self, where: str, field_name: str) -> bool:
        return any(problem.where == where and problem.field == field_name for problem in self.found)

    def raise_if_any(self) -> None:
        if self.found:
            raise PipelineError(self.found)


def unknown_key_message(key: str, known: Iterable[str]) -> str:
    """Name the unknown key and, when it looks like a typo, the key the user probably meant."""
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(sorted(known))}"
    return f"unknown key '{key}'{hint}"
