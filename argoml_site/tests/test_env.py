"""The environment readers fail at start-up with a message that names the variable."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from argoml_site.env import env_bool, env_choice, env_float, env_int, env_list, env_str


def test_a_string_comes_from_the_variable_or_its_default(monkeypatch):
    monkeypatch.setenv("ARGOML_X", "value")
    assert env_str("ARGOML_X") == "value"
    assert env_str("ARGOML_MISSING", "fallback") == "fallback"


def test_a_secret_can_come_from_a_mounted_file(monkeypatch, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t\n")
    monkeypatch.setenv("ARGOML_SECRET_FILE", str(secret))
    assert env_str("ARGOML_SECRET") == "s3cr3t"


def test_a_secret_file_that_cannot_be_read_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("ARGOML_SECRET_FILE", str(tmp_path / "absent"))
    with pytest.raises(ImproperlyConfigured, match="ARGOML_SECRET_FILE"):
        env_str("ARGOML_SECRET")


def test_setting_both_a_variable_and_its_file_is_refused(monkeypatch, tmp_path):
    (tmp_path / "s").write_text("a")
    monkeypatch.setenv("ARGOML_SECRET", "b")
    monkeypatch.setenv("ARGOML_SECRET_FILE", str(tmp_path / "s"))
    with pytest.raises(ImproperlyConfigured, match="either ARGOML_SECRET or ARGOML_SECRET_FILE"):
        env_str("ARGOML_SECRET")


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), ("1", True), ("ON", True), ("no", False), ("", False)]
)
def test_booleans_accept_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("ARGOML_FLAG", raw)
    assert env_bool("ARGOML_FLAG") is expected


def test_a_boolean_that_is_not_one_fails_naming_the_variable(monkeypatch):
    monkeypatch.setenv("ARGOML_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match=r"ARGOML_FLAG='maybe' is not a boolean"):
        env_bool("ARGOML_FLAG")


def test_integers_are_parsed_and_bounded(monkeypatch):
    monkeypatch.setenv("ARGOML_N", "7")
    assert env_int("ARGOML_N", 1) == 7
    monkeypatch.setenv("ARGOML_N", "seven")
    with pytest.raises(ImproperlyConfigured, match="ARGOML_N='seven' is not an integer"):
        env_int("ARGOML_N", 1)
    monkeypatch.setenv("ARGOML_N", "0")
    with pytest.raises(ImproperlyConfigured, match="below its minimum of 1"):
        env_int("ARGOML_N", 5, minimum=1)


def test_floats_are_parsed_and_bounded(monkeypatch):
    monkeypatch.setenv("ARGOML_F", "2.5")
    assert env_float("ARGOML_F", 1.0) == 2.5
    monkeypatch.setenv("ARGOML_F", "fast")
    with pytest.raises(ImproperlyConfigured, match="ARGOML_F='fast' is not a number"):
        env_float("ARGOML_F", 1.0)


def test_lists_are_comma_separated_and_trimmed(monkeypatch):
    monkeypatch.setenv("ARGOML_HOSTS", " a.example , b.example,, ")
    assert env_list("ARGOML_HOSTS") == ["a.example", "b.example"]
    assert env_list("ARGOML_UNSET", ["x"]) == ["x"]


def test_a_choice_outside_the_allowed_values_lists_them(monkeypatch):
    monkeypatch.setenv("ARGOML_MODE", "xml")
    with pytest.raises(ImproperlyConfigured, match="ARGOML_MODE='xml' must be one of: text, json"):
        env_choice("ARGOML_MODE", ("text", "json"), "text")
