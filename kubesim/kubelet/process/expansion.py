"""Kubernetes' `$(VAR)` expansion of env values, command and args (k8s.io/kubernetes third_party expansion).

`$(NAME)` becomes NAME's value when NAME is defined and stays as written when it is not; `$$` is an escaped
`$`, so `$$(NAME)` is the literal text `$(NAME)`; any other `$` is kept. Pure functions: the kubelet builds
the mapping, these only read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Lookup = Callable[[str], "str | None"]


def lookup_in(*mappings: Mapping[str, str]) -> Lookup:
    """A lookup that tries each mapping in turn (the first that defines the name wins)."""

    def find(name: str) -> str | None:
        for mapping in mappings:
            if name in mapping:
                return mapping[name]
        return None

    return find


def expand(text: str, lookup: Lookup) -> str:
    """`text` with every `$(NAME)` that `lookup` defines replaced, as the kubelet expands it."""
    if "$" not in text:
        return text
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char != "$" or index + 1 >= length:
            out.append(char)
            index += 1
            continue
        following = text[index + 1]
        if following == "$":
            out.append("$")
            index += 2
        elif following == "(":
            close = text.find(")", index + 2)
            if close == -1:  # an incomplete reference: `$(` is kept and scanning goes on after it
                out.append("$(")
                index += 2
                continue
            name = text[index + 2 : close]
            value = lookup(name) if name else None
            out.append(f"$({name})" if value is None else value)
            index = close + 1
        else:
            out.append("$" + following)
            index += 2
    return "".join(out)
