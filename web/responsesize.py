"""No answer larger than `limits.current().response_bytes` leaves the web process or the webhook listener.

A backstop, not a bound of its own: every input is bounded where it is read (sizes, counts, YAML
expansion), so a response this large means a bound upstream is missing. The body is already built when the
middleware sees it; what the cap saves is the copy the server and the network would make, and the client
that would receive it. It answers 500 (our fault, not the caller's), names the limit and logs the path at
ERROR, so the missing bound shows in the hostile-input suite and in monitoring instead of in a 200 MB answer.

Streaming responses pass: their producers bound what they hold at once (the trials CSV streams chunks of
2,000 rows; vendored files are fixed files of pinned packages), and their length is unknown until sent.
Innermost in MIDDLEWARE, so the security headers and the CSP are added to the refusal too; the webhook
listener runs the same MIDDLEWARE (`argoml_site.webhook_wsgi`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils.html import escape

import limits

logger = logging.getLogger(__name__)

#: Paths whose callers read JSON: the REST API and the admission webhooks.
JSON_PREFIXES = ("/api/", "/webhooks/")


def too_large(size: int) -> str:
    limit = limits.current().response_bytes
    setting = limits.Limits.setting_name("response_bytes")
    return f"The answer would be {size} bytes, more than the limit of {limit} bytes ({setting})."


class ResponseSizeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not isinstance(response, HttpResponse):  # streaming (StreamingHttpResponse, FileResponse)
            return response
        size = len(response.content)
        if size <= limits.current().response_bytes:
            return response
        message = too_large(size)
        logger.error(
            "refused to send %s bytes for %s %s (status %s): %s",
            size,
            request.method,
            request.path,
            response.status_code,
            message,
        )
        if request.path.startswith(JSON_PREFIXES) or "json" in response.get("Content-Type", ""):
            return JsonResponse({"detail": message}, status=500)
        title = "Server Error (500)"
        page = f"<!doctype html><title>{title}</title><h1>{title}</h1><p>{escape(message)}</p>\n"
        return HttpResponse(page, status=500, content_type="text/html; charset=utf-8")
