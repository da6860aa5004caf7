"""'Did you mean': which known name is offered for an unknown one, and how the offer reads."""

from __future__ import annotations

import pytest

from workflows import spelling

KEYS = ["catalog", "config", "cpu_limit", "cpu_request", "on_failure"]


def test_no_known_name_close_enough_offers_nothing():
    assert spelling.closest("zzzz", KEYS) is None
    assert spelling.did_you_mean("zzzz", KEYS) == ""


def test_no_known_names_at_all_offers_nothing():
    assert spelling.closest("config", []) is None
    assert spelling.did_you_mean("config", []) == ""


def test_one_close_name_is_offered():
    assert spelling.closest("catalogue", KEYS) == "catalog"
    assert spelling.did_you_mean("catalogue", KEYS) == 'did you mean "catalog"?'


def test_of_several_close_names_the_closest_is_offered():
    assert spelling.closest("cpu_limt", KEYS) == "cpu_limit"
    assert spelling.closest("cpu_reqest", KEYS) == "cpu_request"
    assert spelling.closest("confg", KEYS) == "config"


def test_of_names_equally_close_the_same_one_is_offered_whatever_their_order():
    assert spelling.closest("ab", ["ac", "ad"]) == spelling.closest("ab", ["ad", "ac"])


def test_a_name_differing_only_in_case_is_offered_before_a_closer_spelling():
    # difflib alone prefers "paramZ" (one letter off) to "PARAMS" (every letter's case off).
    assert spelling.closest("params", ["paramZ", "PARAMS"]) == "PARAMS"
    assert spelling.closest("Workflow", ["workflow", "workflows"]) == "workflow"


def test_a_name_that_is_known_gets_no_offer():
    assert spelling.closest("config", KEYS) is None
    assert spelling.did_you_mean("config", KEYS) == ""


def test_an_alias_wins_where_its_counterpart_is_known():
    aliases = {"parameters": "hyperparams"}
    assert spelling.closest("parameters", ["hyperparams", "perimeters"]) == "perimeters"
    assert spelling.closest("parameters", ["hyperparams", "perimeters"], aliases=aliases) == "hyperparams"


def test_an_alias_whose_counterpart_is_not_known_falls_back_to_spelling():
    aliases = {"parameters": "hyperparams"}
    assert spelling.closest("parameters", ["values", "range"], aliases=aliases) is None
    assert spelling.closest("parameters", ["parameter", "range"], aliases=aliases) == "parameter"


def test_known_names_may_be_any_iterable_with_repeats():
    assert spelling.closest("confg", iter(["config", "config", "catalog"])) == "config"


@pytest.mark.parametrize(
    ("quote", "offer"), [('"', 'did you mean "config"?'), ("'", "did you mean 'config'?")]
)
def test_the_offer_quotes_the_name_as_its_door_quotes(quote, offer):
    assert spelling.did_you_mean("confg", KEYS, quote=quote) == offer


def test_the_cutoff_is_difflibs_own():
    # "abcd" vs "abxy": ratio 0.5, below the cutoff; "abcd" vs "abcy": 0.75, above it.
    assert spelling.closest("abcd", ["abxy"]) is None
    assert spelling.closest("abcd", ["abcy"]) == "abcy"
