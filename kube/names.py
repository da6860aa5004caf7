"""Pure helpers for Kubernetes names: whether a name is valid for its kind (worded as the apiserver words it),
and names and label values that must fit the 63-character limit and stay unique.

Every name or namespace that a user, a document or a URL hands us is checked here before it is used, and
`kube.resources` checks every path segment again, so a name like ``../../team-b/workflows/x`` can never
address another object than the one it claims to.
"""

from __future__ import annotations

import enum
import hashlib
import re

#: A DNS-1035/1123 label (a Service's or a Pod's hostname part) and a label value are at most this long.
MAX_LABEL_LENGTH = 63
#: A DNS-1123 subdomain (most object names) is at most this long.
MAX_SUBDOMAIN_LENGTH = 253
#: Hex digits of the SHA-256 that keep a shortened name unique.
HASH_LENGTH = 8

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"


class NameFormat(enum.Enum):
    """The rules Kubernetes' apimachinery validation applies to a kind's names (`NameIsDNSLabel`,
    `NameIsDNSSubdomain`, `NameIsDNS1035Label`): the regex, the longest name, and its error message."""

    LABEL = (
        _LABEL,
        MAX_LABEL_LENGTH,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start"
        " and end with an alphanumeric character",
        "'my-name',  or '123-abc'",
    )
    SUBDOMAIN = (
        _SUBDOMAIN,
        MAX_SUBDOMAIN_LENGTH,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and"
        " must start and end with an alphanumeric character",
        "'example.com'",
    )
    DNS1035_LABEL = (
        _DNS1035,
        MAX_LABEL_LENGTH,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic"
        " character, and end with an alphanumeric character",
        "'my-name',  or 'abc-123'",
    )

    def __init__(self, regex: str, max_length: int, message: str, examples: str) -> None:
        self.regex = regex
        self.max_length = max_length
        self.message = message
        self.examples = examples
        # `re.ASCII` and fullmatch: a Unicode digit or a trailing newline must not pass for [a-z0-9].
        self.pattern = re.compile(regex, re.ASCII)

    def problems(self, name: str) -> list[str]:
        """Why `name` is not a valid name of this format, in Kubernetes' words; empty when it is."""
        if not name:
            return ["must not be empty"]
        problems = []
        if len(name) > self.max_length:
            problems.append(f"must be no more than {self.max_length} characters")
        if not self.pattern.fullmatch(name):
            problems.append(
                f"{self.message} (e.g. {self.examples}, regex used for validation is '{self.regex}')"
            )
        return problems


#: Kinds whose names are not DNS-1123 subdomains (the default for every other kind, custom resources too):
#: a Namespace is a label (`ValidateNamespaceName`), a Service a DNS-1035 label (`ValidateServiceName`).
_KIND_FORMATS = {"Namespace": NameFormat.LABEL, "Service": NameFormat.DNS1035_LABEL}


def name_format(kind: str) -> NameFormat:
    """The format of a `kind`'s object names, as the apiserver validates them."""
    return _KIND_FORMATS.get(kind, NameFormat.SUBDOMAIN)


def name_problems(kind: str, name: str) -> list[str]:
    """Why `name` is not a valid name for an object of `kind`; empty when it is."""
    return name_format(kind).problems(name)


def namespace_problems(namespace: str) -> list[str]:
    """Why `namespace` is not a valid namespace name (a DNS-1123 label); empty when it is."""
    return NameFormat.LABEL.problems(namespace)


def short_hash(text: str) -> str:
    """A stable short digest of `text`, appended to a truncated name so two long names stay apart."""
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_LENGTH]


def label_value(text: str) -> str:
    """`text` if it fits a label value, else a readable prefix plus a hash of the whole."""
    if len(text) <= MAX_LABEL_LENGTH:
        return text
    keep = MAX_LABEL_LENGTH - HASH_LENGTH - 1
    return f"{text[:keep].rstrip('-._')}-{short_hash(text)}"
