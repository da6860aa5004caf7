"""'Did you mean': the known name a misspelt one most likely meant, and the one wording that offers it.

Pure and Django-free, so every door that refuses an unknown name asks the same question the same way: the
webhooks (unknown fields of our resources and of Argo specs), the pipeline transpiler (unknown keys) and
the REST API (unknown body fields). Each door writes the sentence around the offer; the offer itself is
`did_you_mean`'s.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

#: How alike (difflib's ratio, 0 to 1) a known name must be to be offered: difflib's own default.
CUTOFF = 0.6


def closest(unknown: str, known: Iterable[str], *, aliases: Mapping[str, str] | None = None) -> str | None:
    """The known name the user most likely meant, or None when none is close or `unknown` is itself known.

    First an alias (another product's name for one of ours: a Katib user's `parameters` is our
    `hyperparams`, which difflib alone would take for `parallelism`), offered only where its counterpart is
    known; then the same name in other letter case; then difflib's closest above `CUTOFF`.
    """
    names = sorted(set(known))
    if unknown in names:
        return None
    alias = (aliases or {}).get(unknown)
    if alias in names:
        return alias
    folded = {name.lower(): name for name in names}
    if unknown.lower() in folded:
        return folded[unknown.lower()]
    matches = difflib.get_close_matches(unknown, names, n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def did_you_mean(
    unknown: str, known: Iterable[str], *, aliases: Mapping[str, str] | None = None, quote: str = '"'
) -> str:
    """`did you mean "x"?` naming the `closest` known name, or "" when there is none to offer.

    `quote` follows the door's own messages (the pipeline quotes keys with `'`).
    """
    match = closest(unknown, known, aliases=aliases)
    return f"did you mean {quote}{match}{quote}?" if match else ""
