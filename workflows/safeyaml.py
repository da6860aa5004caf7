"""The one reader of YAML and JSON a tenant can influence (API bodies, dashboard uploads, command files, the
transpiler and the linter, ConfigMaps, Secrets, termination messages, artifacts): bounded in size, node
count, nesting depth and expanded size, and refusing aliases of mappings and sequences.

Why: ``yaml.safe_load`` expands nothing itself, but an alias makes two places share one object, and the
code after it (json.dumps, yaml.dump, str(), a linter walk) visits the shared object once per reference.
Nine levels of ten aliases are 10^9 leaves from under a kilobyte (the "billion laughs"); one 8,000-character
string named by 24,000 aliases is 190 MB of text from 104 KB. So before a single Python object is built,
the document's event stream is scanned with the libyaml parser (no tree, memory bounded by one event): an
alias to a collection, a document past a limit, or one whose scalars come to more than the expansion bound
once every alias is written out, is refused there. JSON has no aliases; `load_json` bounds its size and
depth before parsing. No Django here: `workflows` uses it too.

The bounds are the deployment's (`limits.current()`: `yaml_bytes`, `yaml_values`, `yaml_depth`,
`yaml_expanded_bytes`), read at every call; a caller with a tighter budget passes a `Limits` that can
tighten them, never loosen them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

import limits

# libyaml's parser and loader are ~10x faster than the pure-Python ones; both are safe (no object tags).
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Limits:
    """A caller's tighter budget (the Submit page's, the runtime editor's). A field left None is the
    deployment's bound; a field set is used only where it is tighter. The expansion bound, when not given,
    is `max_bytes` if that is given: an aliased document may not grow past what the caller would accept
    written out in full."""

    max_bytes: int | None = None
    max_nodes: int | None = None
    max_depth: int | None = None
    max_expanded_bytes: int | None = None


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class _Bound:
    """One bound in force, and how an error names it: the deployment's setting, or nothing when the bound
    is the caller's own (a tenant cannot raise it by asking the operator)."""

    value: int
    setting: str

    @property
    def note(self) -> str:
        return f" ({self.setting})" if self.setting else ""


def _bound(own: int | None, field: str) -> _Bound:
    deployment = getattr(limits.current(), field)
    if own is not None and own < deployment:
        return _Bound(own, "")
    return _Bound(deployment, limits.Limits.setting_name(field))


class YamlRefused(ValueError):
    """The text is not YAML (or JSON), or it is a document we will not build. `limit` names the limit it
    broke ("bytes", "nodes", "depth", "expanded", "alias", "documents") or is "syntax"; `line` is 1-based
    where known; `problem` is the message without the line, for callers that place the line themselves.
    str() says all three."""

    def __init__(self, problem: str, *, limit: str, line: int | None = None, language: str = "YAML") -> None:
        prefix = f"not valid {language}: " if limit == "syntax" else ""
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{prefix}{where}{problem}")
        self.problem = problem
        self.limit = limit
        self.line = line


class _DateAsStringLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """A safe loader that keeps dates as strings.

    Kubernetes' YAML reader turns ``2024-01-01`` into the string it reads, never into a date, so a date-like
    value in a string field must not change type here either.
    """

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
    }


def scan(text: str, budget: Limits = DEFAULT_LIMITS) -> None:
    """YamlRefused unless `text` is within the bounds (the deployment's, tightened by `budget`) and has no
    alias of a mapping or a sequence.

    Reads the event stream only: the cost is linear in the text and nothing is built. The expanded size is
    every scalar's length (keys too), plus, for every alias, the length of the scalar it names: what a
    reader or a serialiser of the loaded tree will handle.
    """
    max_bytes = _bound(budget.max_bytes, "yaml_bytes")
    max_nodes = _bound(budget.max_nodes, "yaml_values")
    max_depth = _bound(budget.max_depth, "yaml_depth")
    max_expanded = _bound(
        budget.max_expanded_bytes if budget.max_expanded_bytes is not None else budget.max_bytes,
        "yaml_expanded_bytes",
    )
    size = _utf8_size(text)
    if size > max_bytes.value:
        raise YamlRefused(
            f"the YAML text is {size} bytes, more than the limit of {max_bytes.value} bytes{max_bytes.note}",
            limit="bytes",
        )
    collections: set[str] = set()  # anchors of mappings and sequences
    scalars: dict[str, int] = {}  # anchors of scalars: the size each alias of them adds
    nodes = depth = expanded = 0
    try:
        for event in yaml.parse(text, Loader=_SafeLoader):
            if isinstance(event, yaml.ScalarEvent):
                nodes += 1
                length = _utf8_size(event.value)
                expanded += length
                if event.anchor is not None:
                    scalars[event.anchor] = length
            elif isinstance(event, yaml.AliasEvent):
                nodes += 1
                if event.anchor in collections:
                    raise _refused_at(
                        event,
                        f"*{event.anchor} is an alias of a mapping or a sequence; such aliases (and << merge "
                        "keys) are not accepted, write the values out (aliases of plain values are fine)",
                        "alias",
                    )
                expanded += scalars.get(event.anchor, 0)
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                nodes += 1
                depth += 1
                if event.anchor is not None:
                    collections.add(event.anchor)
                if depth > max_depth.value:
                    deep = f"more than {max_depth.value} levels deep{max_depth.note}"
                    raise _refused_at(event, f"the YAML nests mappings and sequences {deep}", "depth")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            if nodes > max_nodes.value:
                many = f"more than {max_nodes.value} values (scalars, mappings and sequences){max_nodes.note}"
                raise _refused_at(event, f"the YAML has {many}", "nodes")
            if expanded > max_expanded.value:
                raise _refused_at(
                    event,
                    "the YAML's values, with every alias written out in full, come to more than the limit "
                    f"of {max_expanded.value} bytes{max_expanded.note}",
                    "expanded",
                )
    except yaml.YAMLError as error:
        raise _syntax_error(error) from None


def load_all(text: str, budget: Limits = DEFAULT_LIMITS) -> list[Any]:
    """Every document of a (multi-document) YAML or JSON text, in order, empty ones included as None;
    YamlRefused when it is not YAML or breaks a bound. Dates stay strings, as Kubernetes reads them."""
    scan(text, budget)
    try:
        documents = list(yaml.load_all(text, Loader=_DateAsStringLoader))
    except yaml.YAMLError as error:
        raise _syntax_error(error) from None
    except ValueError as error:  # an integer past Python's 4,300 digits, as the constructor reads it
        raise YamlRefused(str(error), limit="syntax") from None
    if _MAYBE_OUT_OF_RANGE.search(text):
        for index, document in enumerate(documents):
            _refuse_out_of_range(document, f"document {index + 1}: " if len(documents) > 1 else "")
    return documents


def load_documents(text: str, budget: Limits = DEFAULT_LIMITS) -> list[Any]:
    """The non-empty documents of `text` (see `load_all`)."""
    return [document for document in load_all(text, budget) if document is not None]


def load(text: str, budget: Limits = DEFAULT_LIMITS) -> Any:
    """The one document of `text` (None when empty); YamlRefused when there are several."""
    documents = load_all(text, budget)
    if len(documents) > 1:
        raise YamlRefused(f"expected one YAML document, found {len(documents)}", limit="documents")
    return documents[0] if documents else None


# A JSON string (escapes included; an unterminated one runs to the end of the text) or a bracket: what the
# depth scan of a JSON text looks at. Possessive, and every quote starts a match, so the scan is linear.
_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


class _NotJson(ValueError):
    """A constant Python's parser accepts but JSON has not (NaN, Infinity, -Infinity)."""


def nesting_problem(value: Any, budget: Limits = DEFAULT_LIMITS) -> str | None:
    """What is wrong with an object already built (one read from the cluster, which stores what a tenant
    wrote past any webhook) when it nests deeper than the documents we read ourselves may, else None.

    Walks at most the bound's depth of each branch, without recursion, so a 100,000-deep object costs no
    more than a legal one; a reader checks this before any field, and the answer names the bound."""
    max_depth = _bound(budget.max_depth, "yaml_depth")
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > max_depth.value:
            return f"nests objects and arrays more than {max_depth.value} levels deep{max_depth.note}"
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return None


def load_json(text: str | bytes, budget: Limits = DEFAULT_LIMITS) -> Any:
    """The value of a JSON text (RFC 8259: no NaN or Infinity), within the deployment's byte and depth
    bounds (tightened by `budget`); YamlRefused naming the bound or the syntax error otherwise.

    JSON has no aliases, so its tree is as large as its text; what remains to bound is the text's size
    (checked first) and its nesting (scanned before parsing: the parser and every recursive walker after it
    would otherwise meet a RecursionError, not a refusal).
    """
    return _parse_json(bounded_json_text(text, budget))


def bounded_json_text(text: str | bytes, budget: Limits = DEFAULT_LIMITS) -> str:
    """`text` as a str once its size and nesting are within bounds (see `load_json`), for a caller that
    parses it with decoder options of its own (a progress report names the field holding a NaN)."""
    if isinstance(text, (bytes, bytearray)):
        size = len(text)
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            _check_json_size(size, budget)
            raise YamlRefused(f"not UTF-8 ({error.reason})", limit="syntax", language="JSON") from None
    else:
        size = _utf8_size(text)
    _check_json_size(size, budget)
    max_depth = _bound(budget.max_depth, "yaml_depth")
    if text.count("[") + text.count("{") <= max_depth.value:
        return text  # too few brackets to nest past the bound, whatever strings hold them
    depth = 0
    for match in _JSON_STRING_OR_BRACKET.finditer(text):
        bracket = match.group()
        if bracket in "[{":
            depth += 1
            if depth > max_depth.value:
                deep = f"more than {max_depth.value} levels deep{max_depth.note}"
                raise YamlRefused(
                    f"the JSON nests objects and arrays {deep}",
                    limit="depth",
                    line=text.count("\n", 0, match.start()) + 1,
                )
        elif bracket in "]}":
            depth -= 1
    return text


def _parse_json(text: str) -> Any:
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise YamlRefused(error.msg, limit="syntax", line=error.lineno, language="JSON") from None
    except ValueError as error:  # _NotJson, or an integer past Python's 4,300 digits
        raise YamlRefused(str(error), limit="syntax", language="JSON") from None
    if _MAYBE_OUT_OF_RANGE.search(text):
        _refuse_out_of_range(value, "")
    return value


#: Kubernetes stores integers as 64-bit ones and numbers as finite doubles (Go's strconv refuses the
#: rest): a number past them cannot be sent on (orjson refuses to write one, a 500 before this check), so
#: it is refused where it is read, naming its field. These texts are the only ones that can hold such a
#: number (19 digits or more, an exponent of three digits, YAML's .inf and .nan): the tree is walked only
#: when the text has one.
_MAYBE_OUT_OF_RANGE = re.compile(r"\d{19}|[eE][-+]?\d{3}|\.(?:inf|Inf|INF|nan|NaN|NAN)\b")
_INT64 = range(-(2**63), 2**63)


def _refuse_out_of_range(tree: Any, where: str) -> None:
    """YamlRefused naming the first number of `tree` outside what Kubernetes stores (walked with a stack of
    its own: the tree is already within the depth bound, but no recursion is needed to walk it)."""
    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend((value, f"{path}.{key}" if path else str(key)) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, f"{path}[{index}]") for index, value in enumerate(node))
        elif isinstance(node, bool):
            continue
        elif (isinstance(node, int) and node not in _INT64) or (
            isinstance(node, float) and not math.isfinite(node)
        ):
            shown = str(node) if len(str(node)) <= 40 else f"{str(node)[:20]}… ({len(str(node))} digits)"
            raise YamlRefused(
                f"{where}{path or 'the document'}: {shown} is outside the numbers Kubernetes stores "
                "(64-bit integers and finite numbers)",
                limit="range",
            )


def _check_json_size(size: int, budget: Limits) -> None:
    max_bytes = _bound(budget.max_bytes, "yaml_bytes")
    if size > max_bytes.value:
        raise YamlRefused(
            f"the JSON text is {size} bytes, more than the limit of {max_bytes.value} bytes{max_bytes.note}",
            limit="bytes",
        )


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON value")


def _utf8_size(text: str) -> int:
    # str.isascii() is O(1) in CPython (a flag of the string): most texts and scalars are ASCII.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _refused_at(event: yaml.Event, problem: str, limit: str) -> YamlRefused:
    """The document is refused at `event`, for breaking `limit`; the error names the event's line."""
    line = event.start_mark.line + 1 if event.start_mark is not None else 0
    return YamlRefused(problem, limit=limit, line=line)


def _syntax_error(error: yaml.YAMLError) -> YamlRefused:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return YamlRefused(problem, limit="syntax", line=mark.line + 1 if mark is not None else None)
