"""Katib's field errors in Kubernetes' words (apimachinery's `field.Invalid`, `field.Required`,
`field.Forbidden`), as our one `fields.FieldError`.

Why: Katib answers `spec.maxTrialCount: Invalid value: -1: must be greater than 0`; a user who moves from
Katib, and every script that matches Katib's answers, should read the same sentence from us. The message
is apimachinery's `ErrorBody` (the type, the bad value in Go's `%q`/`%v`/`%#v` form, then Katib's detail);
the path is the `FieldError`'s. Values and quoted text are cut at `QUOTE_LIMIT` characters, a deliberate
difference from Katib (which quotes whole trial templates): an answer must not grow with the input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from fields import FieldError

#: The most characters of one quoted value or template an error message carries.
QUOTE_LIMIT = 200


def invalid(path: str, value: object, detail: str) -> FieldError:
    """apimachinery's `field.Invalid(path, value, detail)`."""
    return FieldError(path, _body(f"Invalid value: {go_value(value)}", detail))


def required(path: str, detail: str) -> FieldError:
    """apimachinery's `field.Required(path, detail)`."""
    return FieldError(path, _body("Required value", detail))


def forbidden(path: str, detail: str) -> FieldError:
    """apimachinery's `field.Forbidden(path, detail)`."""
    return FieldError(path, _body("Forbidden", detail))


def _body(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


def cut(text: str) -> str:
    """`text`, or its first QUOTE_LIMIT characters and a count of the rest."""
    if len(text) <= QUOTE_LIMIT:
        return text
    return f"{text[:QUOTE_LIMIT]}... ({len(text) - QUOTE_LIMIT} more characters)"


def go_value(value: object) -> str:
    """A bad value as apimachinery prints it: numbers and booleans as Go's `%v`, strings (Katib's string
    types among them) as `%q`, a list of strings as `%#v` (`[]string{"a", "b"}`), null as `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return cut("[]string{" + ", ".join(go_quote(item) for item in value) + "}")
    return cut(json.dumps(value, sort_keys=True, default=str))


def go_quote(text: str) -> str:
    """Go's `%q` of a string (JSON's escapes are the same for the text people write), cut."""
    return json.dumps(cut(text), ensure_ascii=False)


def go_list(items: list[str]) -> str:
    """Go's `%v` of a `[]string`: `[a b c]`."""
    return cut("[" + " ".join(items) + "]")


def go_trial_parameters(parameters: object) -> str:
    """Go's `%v` of `[]TrialParameterSpec`: `[{name description reference} ...]`, as Katib quotes them."""
    entries = parameters if isinstance(parameters, list) else []
    return cut(
        "["
        + " ".join(
            "{" + " ".join(_text(entry, key) for key in ("name", "description", "reference")) + "}"
            for entry in entries
        )
        + "]"
    )


def go_parameters(parameters: object) -> str:
    """Go's `%v` of `[]ParameterSpec`: `[{name type {max min [list] step distribution}} ...]`."""
    entries = parameters if isinstance(parameters, list) else []
    rendered = []
    for entry in entries:
        space = entry.get("feasibleSpace") if isinstance(entry, Mapping) else None
        space = space if isinstance(space, Mapping) else {}
        listed = space.get("list")
        values = " ".join(str(item) for item in listed) if isinstance(listed, list) else ""
        feasible = " ".join(
            [
                _text(space, "max"),
                _text(space, "min"),
                f"[{values}]",
                _text(space, "step"),
                _text(space, "distribution"),
            ]
        )
        rendered.append(f"{{{_text(entry, 'name')} {_text(entry, 'parameterType')} {{{feasible}}}}}")
    return cut("[" + " ".join(rendered) + "]")


def _text(entry: object, key: str) -> str:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    return "" if value is None else str(value)
