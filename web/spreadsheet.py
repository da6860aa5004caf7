"""CSV cells that are safe to open in a spreadsheet: every CSV we write goes through `csv_cell`.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice
and Google Sheets as a formula, so a trial message or a parameter value a tenant wrote could run a formula
(or DDE) on the machine of whoever opens the export. As OWASP's "CSV Injection" page advises, such a cell
is prefixed with a single quote, which spreadsheets show as text and do not evaluate. csv.writer quotes
and doubles embedded quotes, the rest of that advice.

One exception, chosen deliberately: a cell that is a plain decimal number (``-0.25``, ``+3``, ``-1e-05``)
is written as it is. A spreadsheet reads it as a number, not a formula (there is no operator after the
sign, no function and no reference), and metrics and learning rates are often negative or written with a
sign; a quote would turn them into text and break sorting and charts. Anything else after the sign (``-1+1``,
``-A1``, ``-SUM(...)``) is escaped.
"""

from __future__ import annotations

import re
from typing import Any

#: What spreadsheets take for the start of a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def csv_cell(value: Any) -> str:
    """The text of one CSV cell: None is empty, dates are ISO 8601, floats keep every digit (repr), and
    text that a spreadsheet would run as a formula is prefixed with a single quote."""
    if value is None:
        return ""
    if hasattr(value, "isoformat"):
        text = value.isoformat()
    elif isinstance(value, float):
        text = repr(value)
    else:
        text = str(value)
    if text.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text
