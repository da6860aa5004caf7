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


class ErrorList:
    """Collects field errors while a parser keeps going, then raises them together."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def add(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def extend(self, errors: list[FieldError] | tuple[FieldError, ...]) -> None:
        self.errors.extend(errors)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            raise SpecError(self.errors)


def too_many(what: str, count: int, field: str) -> str:
    """`limits.too_many`'s wording, with a count past HUGE said as "more than 10^100"."""
    if count <= HUGE:
        return limits.too_many(what, count, field)
    return limits.too_many(what, HUGE, field).removesuffix(str(HUGE)) + "more than 10^100"
