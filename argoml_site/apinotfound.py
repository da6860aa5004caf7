"""Every 404 under /api/ is JSON, with DEBUG on as in production.

In production `handler404` (`argoml_site.views.not_found`) answers a path no pattern matches. With DEBUG on,
Django never calls it: a 404 from the URL resolver (an id that is not a number, `/api/jobs/1.5/`) becomes
its technical HTML page, a content type the API's schema does not document, and the dev stack is where
clients and schemathesis are pointed first. This middleware gives such an answer the API's JSON 404.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

from .views import API_PREFIX, api_not_found


class ApiNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith(API_PREFIX)
            and "json" not in response.get("Content-Type", "")
        ):
            return api_not_found()
        return response
