"""Pure helpers for names and label values that must fit Kubernetes' 63-character limit and stay unique."""

from __future__ import annotations

import hashlib

#: A DNS-1035/1123 label (a Service's or a Pod's hostname part) and a label value are at most this long.
MAX_LABEL_LENGTH = 63
#: Hex digits of the SHA-256 that keep a shortened name unique.
HASH_LENGTH = 8


def short_hash(text: str) -> str:
    """A stable short digest of `text`, appended to a truncated name so two long names stay apart."""
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_LENGTH]


def label_value(text: str) -> str:
    """`text` if it fits a label value, else a readable prefix plus a hash of the whole."""
    if len(text) <= MAX_LABEL_LENGTH:
        return text
    keep = MAX_LABEL_LENGTH - HASH_LENGTH - 1
    return f"{text[:keep].rstrip('-._')}-{short_hash(text)}"
