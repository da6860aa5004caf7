"""Commands of task steps: ``{{parameters.NAME}}`` and ``{{item.NAME}}`` become Argo template references.

Translating here (instead of letting users write Argo's ``{{workflow.parameters.x}}``) lets us reject a
reference to an undeclared parameter or map item with the step's name, before Argo fails the running workflow.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from typing import Any

from .model import Command

_REFERENCE = re.compile(r"\{\{(.*?)\}\}")
_NAMED = re.compile(r"^\s*(parameters|item)\.([-A-Za-z0-9_]+)\s*$")


def translate_command(raw: Any, parameters: Collection[str], items: Collection[str]) -> Command:
    """The argv of a command given as a string (split like a shell would) or a list of strings."""
    if isinstance(raw, str):
        argv_text = [raw]
    elif isinstance(raw, list) and raw and all(isinstance(part, str | int | float) for part in raw):
        argv_text = [str(part) for part in raw]
    else:
        raise ValueError("must be a command string or a non-empty list of strings")
    used_parameters: list[str] = []
    used_items: list[str] = []

    def replace(match: re.Match[str]) -> str:
        named = _NAMED.match(match.group(1))
        if named is None:
            raise ValueError(
                f"'{match.group(0)}' is not a reference; use {{{{parameters.NAME}}}} or {{{{item.NAME}}}}"
            )
        kind, name = named.groups()
        if kind == "parameters":
            if name not in parameters:
                raise ValueError(f"'{match.group(0)}' names no pipeline parameter")
            _append_once(used_parameters, name)
            return f"{{{{workflow.parameters.{name}}}}}"
        if name not in items:
            where = "no enclosing map" if not items else f"no enclosing map iterates as '{name}'"
            raise ValueError(f"'{match.group(0)}': {where}")
        _append_once(used_items, name)
        return f"{{{{inputs.parameters.{name}}}}}"

    translated = [_REFERENCE.sub(replace, part) for part in argv_text]
    if isinstance(raw, str):
        try:
            argv = shlex.split(translated[0])
        except ValueError as error:
            raise ValueError(f"cannot be split into arguments: {error}") from error
    else:
        argv = translated
    if not argv:
        raise ValueError("is empty")
    return Command(argv=tuple(argv), parameters=tuple(used_parameters), items=tuple(used_items))


def _append_once(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)
