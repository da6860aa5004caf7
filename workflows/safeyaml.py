"""The one reader of YAML a user hands us (API bodies, dashboard uploads, command files, the transpiler and
the linter): bounded in size, node count and nesting depth, and refusing aliases of mappings and sequences.

Why: ``yaml.safe_load`` expands nothing itself, but an alias makes two places share one object, and the
code after it (json.dumps, yaml.dump, a linter walk) visits the shared object once per reference. Nine
levels of ten aliases are 10^9 leaves from under a kilobyte (the "billion laughs"). So before a single
Python object is built, the document's event stream is scanned with the libyaml parser (no tree, memory
bounded by one event): an alias to a collection, or a document past a limit, is refused there. Anchors and
aliases of scalars stay allowed (they cannot grow a document), so does JSON. No Django here: `workflows`
uses it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

# libyaml's parser and loader are ~10x faster than the pure-Python ones; both are safe (no object tags).
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: A document's text is at most this many bytes (UTF-8).
MAX_BYTES = 4 * 1024 * 1024
#: Scalars, mappings, sequences and (scalar) aliases in all documents of one text together.
MAX_NODES = 500_000
#: Mappings and sequences nested at most this deep.
MAX_DEPTH = 100


@dataclass(frozen=True)
class Limits:
    """How large a YAML text may be; callers with a tighter budget (the dashboard) pass their own."""

    max_bytes: int = MAX_BYTES
    max_nodes: int = MAX_NODES
    max_depth: int = MAX_DEPTH


DEFAULT_LIMITS = Limits()


class YamlRefused(ValueError):
    """The text is not YAML, or it is YAML we will not build. `limit` names the limit it broke ("bytes",
    "nodes", "depth", "alias", "documents") or is "syntax"; `line` is 1-based where known; `problem` is the
    message without the line, for callers that place the line themselves. str() says all three."""

    def __init__(self, problem: str, *, limit: str, line: int | None = None) -> None:
        prefix = "not valid YAML: " if limit == "syntax" else ""
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


def scan(text: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """YamlRefused unless `text` is within `limits` and has no alias of a mapping or a sequence.

    Reads the event stream only: the cost is linear in the text and nothing is built.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_bytes:
        raise YamlRefused(
            f"the YAML text is {size} bytes, more than the limit of {limits.max_bytes} bytes", limit="bytes"
        )
    collections: set[str] = set()  # anchors of mappings and sequences
    nodes = depth = 0
    try:
        for event in yaml.parse(text, Loader=_SafeLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                nodes += 1
                depth += 1
                if event.anchor is not None:
                    collections.add(event.anchor)
                if depth > limits.max_depth:
                    raise YamlRefused(
                        f"the YAML nests mappings and sequences more than {limits.max_depth} levels deep",
                        limit="depth",
                        line=_line(event),
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
            elif isinstance(event, yaml.AliasEvent):
                nodes += 1
                if event.anchor in collections:
                    raise YamlRefused(
                        f"*{event.anchor} is an alias of a mapping or a sequence; such "
                        "aliases (and << merge keys) are not accepted, write the values out (aliases of "
                        "plain values are fine)",
                        limit="alias",
                        line=_line(event),
                    )
            if nodes > limits.max_nodes:
                raise YamlRefused(
                    f"the YAML has more than {limits.max_nodes} values (scalars, mappings and sequences)",
                    limit="nodes",
                    line=_line(event),
                )
    except yaml.YAMLError as error:
        raise _syntax_error(error) from None


def load_all(text: str, limits: Limits = DEFAULT_LIMITS) -> list[Any]:
    """Every document of a (multi-document) YAML or JSON text, in order, empty ones included as None;
    YamlRefused when it is not YAML or breaks a limit. Dates stay strings, as Kubernetes reads them."""
    scan(text, limits)
    try:
        return list(yaml.load_all(text, Loader=_DateAsStringLoader))
    except yaml.YAMLError as error:
        raise _syntax_error(error) from None


def load_documents(text: str, limits: Limits = DEFAULT_LIMITS) -> list[Any]:
    """The non-empty documents of `text` (see `load_all`)."""
    return [document for document in load_all(text, limits) if document is not None]


def load(text: str, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The one document of `text` (None when empty); YamlRefused when there are several."""
    documents = load_all(text, limits)
    if len(documents) > 1:
        raise YamlRefused(f"expected one YAML document, found {len(documents)}", limit="documents")
    return documents[0] if documents else None


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0


def _syntax_error(error: yaml.YAMLError) -> YamlRefused:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return YamlRefused(problem, limit="syntax", line=mark.line + 1 if mark is not None else None)
