"""A sweep's counts said in `limits`' words, except past HUGE, which no sweep computes in full: said as
"more than 10^100" so a message does not grow with a count written as a long string of digits."""

from __future__ import annotations

import limits

#: Counts past this are said as "more than 10^100": their digits would tell nothing, and the counts that get
#: there (a grid's size, a loop count written as a long string of digits) are never computed in full.
HUGE = 10**100


def too_many(what: str, count: int, field: str) -> str:
    """`limits.too_many`'s wording, with a count past HUGE said as "more than 10^100"."""
    if count <= HUGE:
        return limits.too_many(what, count, field)
    return limits.too_many(what, HUGE, field).removesuffix(str(HUGE)) + "more than 10^100"
