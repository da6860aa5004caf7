"""The TensorBoard origin: a request whose Host is TENSORBOARD_BASE_URL's is served by the TensorBoard
URLconf only (`argoml_site.tensorboard_urls`: the proxy and nothing else), every other request by the
dashboard's, which has no proxy. So no TensorBoard page is ever served on the dashboard's origin, and no
dashboard page, API or admin on the TensorBoard origin (docs/security.md, "The TensorBoard proxy").

Before the session middleware, though nothing it sets is read on this origin: the proxy authorizes with
its own pass (dashboard/tensorboardpass.py), never with the dashboard's session.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

URLCONF = "argoml_site.tensorboard_urls"


def tensorboard_host(base_url: str) -> str:
    """`host[:port]` of TENSORBOARD_BASE_URL as a browser sends it in Host (lower case), "" when it names
    no http(s) host (the in-cluster URLs: no proxy is served then)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    default_port = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    return host if parts.port in (None, default_port) else f"{host}:{parts.port}"


def is_tensorboard_origin(request: HttpRequest) -> bool:
    host = tensorboard_host(settings.TENSORBOARD_BASE_URL)
    return bool(host) and request.get_host().lower() == host


class TensorboardOriginMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if is_tensorboard_origin(request):
            request.urlconf = URLCONF  # type: ignore[attr-defined] # Django's per-request URLconf
        return self.get_response(request)
