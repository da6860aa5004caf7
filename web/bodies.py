"""Request bodies are bounded before they are read whole.

- The REST API's parsers (JSON, YAML, form, multipart) refuse a body whose Content-Length is past
  DATA_UPLOAD_MAX_MEMORY_SIZE with a 413 naming the limit, before reading a byte of it; DRF on its own
  reads any JSON body whole (Django checks the limit only on `request.body` and form fields). A JSON body
  is then read by the one bounded reader (`workflows.safeyaml.load_json`): nested past `yaml_depth`, it is
  a 400 naming the bound, not a RecursionError in the parser or in whatever walks it next. A YAML body
  (`application/yaml`: the manifests users have are YAML) is read by the same module's YAML reader, with
  every YAML bound (values, depth, aliases and their expansion) and one document per body.
- Pages rely on Django for form fields (DATA_UPLOAD_MAX_MEMORY_SIZE), and on `LimitedUploadHandler` for
  uploaded files, which Django does not bound at all: it stops reading a file once it passes
  MAX_UPLOAD_BYTES and records the refusal on the request, so the form can say so (`upload_refused`).

Only WSGI bodies with a Content-Length are read (Django treats a body without one as empty), so checking
the header is checking the body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpRequest
from rest_framework import exceptions, parsers, status

from workflows import safeyaml


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is larger than the limit."
    default_code = "request_too_large"


def declared_length(meta: Mapping[str, Any]) -> int | None:
    """The body length a request declares (0 when it declares none), or None when its Content-Length is not
    a number (Django then reads the body as empty). What Django will read, no more: checked before reading."""
    try:
        return int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None


def past_limit(meta: Mapping[str, Any], limit: int, sentence: str) -> str:
    """Why a body is refused unread, or "": `sentence` with the declared `{length}` and the `{limit}` filled
    in when the body is longer than `limit`. A Content-Length that is not a number is not too long: Django
    reads that body as empty."""
    length = declared_length(meta) or 0
    return sentence.format(length=length, limit=limit) if length > limit else ""


def check_content_length(meta: dict[str, Any], limit: int) -> None:
    """RequestTooLarge naming `limit` when the request says its body is longer."""
    length = declared_length(meta)
    if length is None:
        raise exceptions.ParseError("Content-Length is not a number.")
    if length > limit:
        raise RequestTooLarge(f"The request body is {length} bytes; the limit is {limit} bytes.")


class _Bounded:
    """Checks the body's size against DATA_UPLOAD_MAX_MEMORY_SIZE before the parser reads it."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        request = (parser_context or {}).get("request")
        if request is not None:
            check_content_length(request.META, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return super().parse(stream, media_type, parser_context)  # type: ignore[misc]


class _BoundedReader:
    """The body through the bounded reader `read`, refused as DRF's JSON parser refuses: a 400 naming the
    problem (and its line)."""

    language = ""
    read: Callable[[str], Any]

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return self.read(stream.read().decode(encoding))
        except UnicodeDecodeError:
            raise exceptions.ParseError(
                f"{self.language} parse error - the body is not {encoding} text"
            ) from None
        except safeyaml.YamlRefused as refused:
            raise exceptions.ParseError(f"{self.language} parse error - {refused}") from None


class _BoundedJSONParser(_BoundedReader, parsers.JSONParser):
    """DRF's JSON parser with the bounded reader in place of `json.load`; same media type, same 400."""

    language = "JSON"
    read = staticmethod(safeyaml.load_json)


class _BoundedYAMLParser(_BoundedReader, parsers.BaseParser):
    """One YAML document (RFC 9512's `application/yaml`) through the bounded reader."""

    media_type = "application/yaml"
    language = "YAML"
    read = staticmethod(safeyaml.load)


class JSONParser(_Bounded, _BoundedJSONParser):
    pass


class YAMLParser(_Bounded, _BoundedYAMLParser):
    pass


#: What an endpoint taking a document (a manifest, a request holding one) reads: JSON or YAML, never a form.
DOCUMENT_PARSERS: list[type[parsers.BaseParser]] = [JSONParser, YAMLParser]


class FormParser(_Bounded, parsers.FormParser):
    pass


class MultiPartParser(_Bounded, parsers.MultiPartParser):
    pass


def upload_refused(request: HttpRequest) -> str | None:
    """Why an upload of this request was not read (too large), or None."""
    return getattr(request, "_upload_refused", None)


class LimitedUploadHandler(FileUploadHandler):
    """First of FILE_UPLOAD_HANDLERS: passes chunks on, and stops the upload (without reading the rest of
    the body) once one file passes MAX_UPLOAD_BYTES, noting why on the request for the page to show."""

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        limit = settings.MAX_UPLOAD_BYTES
        if self.received > limit:
            if self.request is not None:
                self.request._upload_refused = (  # type: ignore[attr-defined]
                    f"{self.file_name} is larger than the upload limit of {limit} bytes"
                )
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None
