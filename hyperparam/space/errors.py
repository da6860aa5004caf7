"""Validation errors that name the field they are about, so the webhook can answer with field paths."""

from __future__ import annotations

from dataclasses import dataclass

import limits

#: Counts past this are said as "more than 10^100": their digits would tell nothing, and the counts that get
#: there (a grid's size, a loop count written as a long string of digits) are never computed in full.
HUGE = 10**100


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: `path` is the JSON path as a user reads it (`spec.hyperparams[2].name`)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpecError(ValueError):
    """A spec that cannot run; carries every problem found, not only the first, so users fix them at once."""

    def __init__(self, errors: list[FieldError]) -> None:
        if not errors:
            raise ValueError("SpecError needs at least one FieldError")
        self.errors = tuple(errors)
        super().__init__("; ".join(str(error) for error in errors))


#: A report lists this many problems and counts the rest (the one figure every report uses).
MAX_LISTED = limits.PROBLEMS_LISTED


class ErrorList:
    """Collects field errors while a parser keeps going, then raises them together: the first MAX_LISTED,
    and one more that counts the rest. `count` is every error added (parsers compare it before and after a
    part to tell whether that part failed)."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.count = 0
        self._first_unlisted = ""

    def add(self, path: str, message: str) -> None:
        self._keep(FieldError(path, message))

    def extend(self, errors: list[FieldError] | tuple[FieldError, ...]) -> None:
        for error in errors:
            self._keep(error)

    def _keep(self, error: FieldError) -> None:
        self.count += 1
        if len(self.errors) < MAX_LISTED:
            self.errors.append(error)
        elif self.count == MAX_LISTED + 1:
            self._first_unlisted = error.path

    def __bool__(self) -> bool:
        return self.count > 0

    def raise_if_any(self) -> None:
        if not self.count:
            return
        unlisted = self.count - len(self.errors)
        summary = [
            FieldError(
                self._first_unlisted,
                f"this and {unlisted - 1} more problems after it are not listed (a report lists the first "
                f"{MAX_LISTED})",
            )
        ]
        raise SpecError(self.errors + (summary if unlisted else []))


def too_many(what: str, count: int, field: str) -> str:
    """`limits.too_many`'s wording, with a count past HUGE said as "more than 10^100"."""
    if count <= HUGE:
        return limits.too_many(what, count, field)
    return limits.too_many(what, HUGE, field).removesuffix(str(HUGE)) + "more than 10^100"
