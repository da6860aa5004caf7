"""One "this field is wrong" error (a path as the user reads it, and what is wrong there), the collector
that reports every such error at once, and the small tolerant readers and coercers every parser shares.

Why one place: each app's parser (jobs, trainer, sweeps, TensorBoards, the webhooks) names a field at
fault the same way, and a reader that words "must be an integer" one way in one app and another way in the
next, or takes `"-3"` in one and refuses it in the other, is a bug waiting for a user to find. Like
`limits`, it imports no Django and none of our apps, so every app, pure core or not, may import it (an
import-linter contract keeps it so). The wording is one: `must be <what>, not <what was given>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import limits

#: A manifest, or a part of one, as it came from JSON or YAML: a mapping whose shape the parsers check.
RawDict = dict[str, Any]


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: `path` is the JSON path as a user reads it (`spec.hyperparams[2].name`,
    `spec.tfReplicaSpecs.Worker.replicas`); empty when the problem is the whole document."""

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


class Rejected(ValueError):
    """A manifest (or spec) that cannot go to the cluster; `errors` name each field and its problem. Each
    app's actions raise their own subclass (JobRejected, SweepRejected, …): a caller catches what it sent."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(map(str, errors)))
        self.errors = errors

    @classmethod
    def raise_if_any(cls, errors: list[FieldError]) -> None:
        """The check before a submit: nothing when `errors` is empty, else this rejection carrying them."""
        if errors:
            raise cls(errors)


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


# --- Coercers: a value of the wrong type reads as empty; whoever validates the field reports it. ---------


def as_dict(value: object) -> RawDict:
    """The value if it is an object, else an empty one (what a controller reads past a malformed field)."""
    return value if isinstance(value, dict) else {}


def as_int(value: object) -> int | None:
    """An int that is really an int (YAML `true` is a bool, and bools are ints in Python), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- Readers: each returns a usable value and records, with its path, why the field is wrong. ------------


def obj(found: ErrorList, path: str, value: object, *, required: bool = False) -> RawDict:
    if value is None:
        if required:
            found.add(path, "is required")
        return {}
    if not isinstance(value, dict):
        found.add(path, not_an_object(value))
        return {}
    return value


def not_an_object(value: object, holding: str = "") -> str:
    """What is wrong with `value` where an object belongs, in `obj`'s words (`holding` says what it holds:
    `must be an object (replicas, template), not list`); for validators that build their list themselves."""
    return f"must be an object{f' {holding}' if holding else ''}, not {type(value).__name__}"


def items(found: ErrorList, path: str, value: object, *, max_items: int | None = None) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        found.add(path, f"must be a list, not {type(value).__name__}")
        return []
    if max_items is not None and len(value) > max_items:
        found.add(path, f"must have at most {max_items} items, not {len(value)}")
        return []
    return value


def text(found: ErrorList, path: str, value: object, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            found.add(path, "is required")
        return None
    if not isinstance(value, str):
        found.add(path, f"must be a string, not {type(value).__name__}")
        return None
    return value


def texts(
    found: ErrorList, path: str, value: object, *, max_items: int | None = None
) -> tuple[str, ...] | None:
    if value is None:
        return None
    entries = items(found, path, value, max_items=max_items)
    if not all(isinstance(item, str) for item in entries):
        found.add(path, "must be a list of strings")
        return None
    return tuple(entries)


def text_map(found: ErrorList, path: str, value: object) -> dict[str, str]:
    mapping = obj(found, path, value)
    if not all(isinstance(v, str) for v in mapping.values()):
        found.add(path, "must map names to strings")
        return {}
    return dict(mapping)


def integer(
    found: ErrorList, path: str, value: object, *, minimum: int, maximum: int | None = None
) -> int | None:
    """An integer of at least `minimum` (and at most `maximum`), or None: unset, or wrong (recorded)."""
    if value is None:
        return None
    problem = integer_problem(value, minimum=minimum, maximum=maximum)
    if problem is not None:
        found.add(path, problem)
        return None
    return cast(int, value)


def integers(
    found: ErrorList, path: str, given: Mapping[str, object], minimums: Mapping[str, int]
) -> dict[str, int]:
    """The integers `given` sets among the keys of `minimums`, each at least its minimum (`integer` per key);
    a key unset or wrong is left out."""
    return {
        key: number
        for key, minimum in minimums.items()
        if (number := integer(found, f"{path}.{key}", given.get(key), minimum=minimum)) is not None
    }


def integer_problem(value: object, *, minimum: int, maximum: int | None = None) -> str | None:
    """What is wrong with `value` as an integer of at least `minimum` (and at most `maximum`), in `integer`'s
    words, or None; for validators that build their list of errors themselves."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer, not {value!r}"
    if maximum is not None and not minimum <= value <= maximum:
        return f"must be between {minimum} and {maximum}, not {value}"
    if value < minimum:
        return f"must be at least {minimum}, not {value}"
    return None


def flag(found: ErrorList, path: str, value: object) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        found.add(path, f"must be true or false, not {value!r}")
        return False
    return value
