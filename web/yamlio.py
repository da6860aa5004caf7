"""Writing YAML in bulk: plain JSON-like trees written directly, anything else through PyYAML's emitter.

PyYAML's pure-Python emitter dominated a large dump (94% of `render_hyperparam` on a 100,000-trial grid);
libyaml's C emitter (`CSafeDumper`) removed that, and then PyYAML's Python representer and resolver — a node
object and two regex resolutions per scalar — were a third of the time. Manifests are plain dicts, lists,
strings and numbers in block style, which needs none of that machinery: `dump` writes such a tree itself,
taking each scalar's text from PyYAML (memoized, so a value seen before costs one dict lookup) and falling
back to PyYAML for the whole document whenever the layout could depend on more than the scalar alone (a
line that could fold at the width, a multi-line or over-long key, an object reached twice, which PyYAML
writes as an anchor and alias, a type PyYAML would represent otherwise). The text is byte for byte PyYAML's
(`web/tests/test_yamlio.py` compares both on awkward and random trees). Loading stays with the
bounded loader.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from typing import Any

import yaml

SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

STR_TAG = "tag:yaml.org,2002:str"
# Strings PyYAML writes plain or in single quotes with nothing to escape, in any block context: no space
# (no folding), no indicator first (no `-`, `.` for `---`/`...`, `?`, `:`), nothing needing quotes inside.
_PLAIN_CANDIDATE = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./-]*\Z")
# PyYAML's emitter: a simple key is shorter than 128 characters; lines fold past 80 unless told otherwise.
_SIMPLE_KEY_LIMIT = 128
_DEFAULT_WIDTH = 80
_LINE_BREAK = re.compile("[\n\r\x85\u2028\u2029]")  # what YAML reads as a line break
# A decimal integer as YAML 1.1 (and PyYAML's resolver) reads one, written with no sign, `_` or leading 0.
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_SAFE_STR_REPRESENTER = yaml.SafeDumper.yaml_representers[str]


class _NotPlain(Exception):
    """The document needs PyYAML's own layout: something in it is more than a plain scalar in a plain tree."""


def dump(document: Any, *, width: int | None = None, allow_unicode: bool = False) -> str:
    """One document in block style, keys in the order given (manifests read as people write them)."""
    fast = _write_document(document, width=width, allow_unicode=allow_unicode)
    if fast is not None:
        return fast
    text: str = yaml.dump(
        document,
        Dumper=SafeDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=allow_unicode,
        width=width,
    )
    return text


def dump_all(documents: Iterable[Any]) -> str:
    """Several documents separated by `---`, as `kubectl apply -f` takes them."""
    documents = list(documents)
    texts = [_write_document(document, width=None, allow_unicode=False) for document in documents]
    if all(text is not None for text in texts):
        return "---\n".join(text for text in texts if text is not None)
    text: str = yaml.dump_all(documents, Dumper=SafeDumper, sort_keys=False, default_flow_style=False)
    return text


def _write_document(document: Any, *, width: int | None, allow_unicode: bool) -> str | None:
    """The document as PyYAML would write it, or None when only PyYAML can say (see the module docstring)."""
    if width is not None and width <= 4:  # PyYAML and libyaml read such widths differently: let them
        return None
    representers = SafeDumper.yaml_representers
    if (
        type(document) not in (dict, list)
        or representers.get(dict) is not yaml.SafeDumper.yaml_representers[dict]
        or representers.get(list) is not yaml.SafeDumper.yaml_representers[list]
    ):
        return None
    writer = _Writer(width or _DEFAULT_WIDTH, allow_unicode, representers.get(str))
    try:
        if not document:
            return "{}\n" if isinstance(document, dict) else "[]\n"
        if isinstance(document, dict):
            writer.mapping(document, 0, inline=False)
        else:
            writer.sequence(document, 0, inline=False)
    except (_NotPlain, TypeError):  # TypeError: an unhashable value (a set) met the text caches
        return None
    return "".join(writer.out)


class _Writer:
    """PyYAML's block layout: a mapping's values two spaces in, a sequence under a key not indented at all.

    The loops are written for speed (texts looked up inline, the rare cases in methods): a manifest has
    hundreds of thousands of scalars.
    """

    def __init__(self, width: int, allow_unicode: bool, str_representer: Callable[..., Any] | None) -> None:
        self.width = width
        self.allow_unicode = allow_unicode
        self.str_representer = str_representer
        self.texts, self.key_texts = _caches(allow_unicode, str_representer)
        self.out: list[str] = []
        self.seen: set[int] = set()

    def scalar(self, value: Any) -> str:
        """A value's text, from PyYAML; raises _NotPlain if it is no plain scalar on one line."""
        if type(value) not in _SCALAR_TYPES:
            raise _NotPlain
        text = _scalar_text(value, self.allow_unicode, self.str_representer)
        if text is None:
            raise _NotPlain
        if type(value) is not float or (value != 0 and value == value):  # 0.0 == -0.0, nan != nan
            self.texts[(type(value), value)] = text
        return text

    def key(self, value: Any) -> str:
        text = self.scalar(value)
        raw = value if type(value) is str else text
        if len(raw.encode()) >= _SIMPLE_KEY_LIMIT or _LINE_BREAK.search(raw):
            raise _NotPlain  # written as `? key`: libyaml's limit is in bytes, PyYAML's in characters
        if type(value) is not float:
            self.key_texts[(type(value), value)] = text
        return text

    def fits(self, text: str, column: int) -> str:
        """The text if PyYAML cannot fold it at this column (a plain or quoted scalar folds at spaces)."""
        if column + len(text) > self.width and (" " in text or text.startswith('"')):
            raise _NotPlain
        return text

    def container(self, value: dict[Any, Any] | list[Any]) -> None:
        if id(value) in self.seen:
            raise _NotPlain  # PyYAML writes an anchor and an alias
        self.seen.add(id(value))

    def mapping(self, mapping: dict[Any, Any], indent: int, *, inline: bool) -> None:
        self.container(mapping)
        out, texts, key_texts, width = self.out, self.texts, self.key_texts, self.width
        pad = " " * indent
        for position, (key, value) in enumerate(mapping.items()):
            key_text = key_texts.get((type(key), key)) or self.key(key)
            if position or not inline:
                out.append(pad)
            kind = type(value)
            if kind is dict or kind is list:
                if value:
                    out.append(key_text + ":\n")
                    if kind is dict:
                        self.mapping(value, indent + 2, inline=False)
                    else:
                        self.sequence(value, indent, inline=False)
                    continue
                self.container(value)
                text = "{}" if kind is dict else "[]"
            else:
                text = texts.get((kind, value)) or self.scalar(value)
                column = indent + len(key_text) + 2
                if column + len(text) > width:
                    self.fits(text, column)
            out.append(key_text + ": " + text + "\n")

    def sequence(self, sequence: list[Any], indent: int, *, inline: bool) -> None:
        self.container(sequence)
        out, texts, width = self.out, self.texts, self.width
        pad = " " * indent
        for position, item in enumerate(sequence):
            if position or not inline:
                out.append(pad)
            kind = type(item)
            if kind is dict or kind is list:
                if item:
                    out.append("- ")
                    if kind is dict:
                        self.mapping(item, indent + 2, inline=True)
                    else:
                        self.sequence(item, indent + 2, inline=True)
                    continue
                self.container(item)
                text = "{}" if kind is dict else "[]"
            else:
                text = texts.get((kind, item)) or self.scalar(item)
                if indent + 2 + len(text) > width:
                    self.fits(text, indent + 2)
            out.append("- " + text + "\n")


_SCALAR_TYPES = (str, int, float, bool, type(None))


# Scalar texts by (type, value) — 1, 1.0 and True apart —, one pair of caches per writing option and str
# representer (importing hera registers its own); emptied when large, as a web process sees ever new values.
_CACHES: dict[tuple[bool, Any], tuple[dict[tuple[type, Any], str], dict[tuple[type, Any], str]]] = {}
_CACHE_SIZE = 1 << 16


def _caches(
    allow_unicode: bool, str_representer: Callable[..., Any] | None
) -> tuple[dict[tuple[type, Any], str], dict[tuple[type, Any], str]]:
    """The value and key text caches for these options."""
    caches = _CACHES.setdefault((allow_unicode, str_representer), ({}, {}))
    for cache in caches:
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
    return caches


def _scalar_text(value: Any, allow_unicode: bool, str_representer: Callable[..., Any] | None) -> str | None:
    """How PyYAML writes this scalar in block context, on one line; None if it would take several."""
    if type(value) is str and str_representer is _SAFE_STR_REPRESENTER and _DECIMAL.match(value):
        return f"'{value}'"  # resolves as an int, so quoted: the shortcut for a sweep's 100,000 trial numbers
    if type(value) is str and _PLAIN_CANDIDATE.match(value):
        node = str_representer(_DUMPER, value) if str_representer is not None else None
        if isinstance(node, yaml.ScalarNode) and node.tag == STR_TAG and node.style in (None, "'"):
            plain = node.style is None and _DUMPER.resolve(yaml.ScalarNode, value, (True, False)) == STR_TAG
            return value if plain else f"'{value}'"
    text: str = yaml.dump(
        [value], Dumper=SafeDumper, default_flow_style=False, allow_unicode=allow_unicode, width=1 << 30
    )
    if not text.startswith("- ") or not text.endswith("\n") or _LINE_BREAK.search(text, 0, len(text) - 1):
        return None  # on several lines, whose indentation depends on where it stands
    return text[2:-1]


_DUMPER = yaml.SafeDumper(io.StringIO())  # only to call representers and the resolver, never to write
