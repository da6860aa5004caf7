"""API error responses become typed errors that keep the server's message."""

import json

import pytest

from kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    error_from_response,
)


def status_body(code, reason, message, **details):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                       "reason": reason, "message": message, "details": details}).encode()  # fmt: skip


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [(404, "NotFound", NotFound), (409, "Conflict", Conflict), (409, "AlreadyExists", AlreadyExists),
     (410, "Expired", Gone), (422, "Invalid", Invalid), (429, "TooManyRequests", TooManyRequests),
     (500, "InternalError", ServerError), (503, "ServiceUnavailable", ServerError),
     (400, "BadRequest", ApiError)],
)  # fmt: skip
def test_each_status_code_maps_to_its_error(code, reason, cls):
    error = error_from_response(code, status_body(code, reason, "the message"))
    assert type(error) is cls
    assert error.status == code
    assert str(error) == "the message"


def test_already_exists_is_a_conflict_so_create_callers_can_catch_either():
    assert isinstance(error_from_response(409, status_body(409, "AlreadyExists", "x")), Conflict)


def test_only_throttling_and_server_errors_are_transient():
    assert error_from_response(429, b"").transient
    assert error_from_response(500, b"").transient
    assert not error_from_response(404, b"").transient
    assert not error_from_response(409, b"").transient


def test_retry_after_is_read_from_the_headers():
    error = error_from_response(429, b"", {"Retry-After": "3"})
    assert error.retry_after == 3.0


def test_an_invalid_object_lists_the_fields_at_fault():
    body = status_body(422, "Invalid", "bad", causes=[{"field": "spec.replicas", "message": "must be >= 0"}])
    error = error_from_response(422, body)
    assert error.causes == [{"field": "spec.replicas", "message": "must be >= 0"}]


def test_a_body_that_is_not_json_still_gives_a_readable_message():
    error = error_from_response(502, b"<html>Bad Gateway</html>")
    assert isinstance(error, ServerError)
    assert "Bad Gateway" in str(error)
