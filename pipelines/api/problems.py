"""Every error of a pipeline request in one shape: a line per problem, and its parts for programs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework import status
from rest_framework.exceptions import APIException

from workflows.pipeline import Problem

REQUEST = "request"


class InvalidPipeline(APIException):
    """400 listing every problem, so a caller fixes them in one round (as the command prints them)."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"

    def __init__(
        self, problems: Iterable[Problem], detail: str | None = None, count: int | None = None
    ) -> None:
        found = list(problems)
        count = len(found) if count is None else count
        summary = detail or f"{count} problem{'s' if count != 1 else ''} found; nothing was transpiled"
        super().__init__({"detail": summary, "errors": [problem_data(problem) for problem in found]})


def problem_data(problem: Problem) -> dict[str, str]:
    return {"where": problem.where, "field": problem.field, "message": problem.message, "text": str(problem)}


def request_problems(errors: Mapping[str, Any] | list[Any], prefix: str = "") -> list[Problem]:
    """A serializer's nested errors as problems named ``request: <dotted field>: <message>``."""
    items = errors.items() if isinstance(errors, Mapping) else enumerate(errors)
    problems = []
    for key, value in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) or (
            isinstance(value, list) and not all(isinstance(v, str) for v in value)
        ):
            problems.extend(request_problems(value, name))
        elif isinstance(value, list):
            problems.extend(Problem(REQUEST, name, str(message)) for message in value)
        else:
            problems.append(Problem(REQUEST, name, str(value)))
    return problems
