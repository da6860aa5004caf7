"""What the linter reports: one LintError per problem, gathered in a LintResult per document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LintError:
    """One problem in a document.

    ``path`` says where the problem is (Argo's own notation, e.g. ``templates.main.steps[0].a``, or the JSON
    path of the field for structural problems); ``message`` is the whole line as Argo words it, starting with
    that path, so it can be shown to users as is.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def error_at(path: str, detail: str) -> LintError:
    """An error whose message is the path followed by the detail, which is how Argo prefixes its messages."""
    return LintError(path, f"{path} {detail}" if path else detail)


@dataclass(frozen=True, slots=True)
class LintResult:
    """The verdict on one document. ``linted`` is false for kinds the linter does not know (left alone)."""

    kind: str
    name: str
    errors: tuple[LintError, ...] = ()
    linted: bool = True

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def messages(self) -> list[str]:
        return [error.message for error in self.errors]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "linted": self.linted,
            "valid": self.ok,
            "errors": [error.to_dict() for error in self.errors],
        }
