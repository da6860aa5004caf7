"""Content-Security-Policy on every response: our own scripts, styles, images and fonts only, no inline
script or style, no framing. A dozen lines of middleware rather than django-csp: the policy is one fixed
string (no nonces: the pages have no inline script or style left), and one setting can turn it off.

htmx is told not to inject its indicator style (base.html), the Swagger UI is served by drf-spectacular's
split view (its initialiser is a file, not an inline script) with its inline style moved to a file.

Forms post to our own origin only (`form-action 'self'`), and browsers apply form-action to the redirect
that answers a form too: the TensorBoards page's Open button is answered with a redirect to the instance's
URL, so when TENSORBOARD_BASE_URL is another origin (an Ingress host of its own) settings add that origin
(`policy(form_targets=…)`), or the browser would block the redirect without a word.

One exception, on the sweep page's plots only (PLOTS_POLICY): the plotly.js that the plotly package ships
compiles its WebGL traces (parcoords, scattergl) with `new Function` and injects its own <style> and
style attributes, so that page allows 'unsafe-eval' and inline styles. It still runs no inline script.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def _policy(script_src: str = "'self'", style_src: str = "'self'", form_action: str = "'self'") -> str:
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src {script_src}",
            f"style-src {style_src}",
            # Swagger UI and plotly draw small images (icons, the mode bar) as data: URLs.
            "img-src 'self' data:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            f"form-action {form_action}",
            "frame-ancestors 'none'",
        ]
    )


POLICY = _policy()


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of an absolute http(s) URL, "" for anything else (a path, nothing)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ""
    return f"{parts.scheme}://{parts.netloc}"


def policy(form_targets: tuple[str, ...] = ()) -> str:
    """POLICY, with form-action also allowing the origins of `form_targets` (URLs a form's answer may
    redirect to: TENSORBOARD_BASE_URL)."""
    origins = [origin for origin in dict.fromkeys(map(origin_of, form_targets)) if origin]
    return _policy(form_action=" ".join(["'self'", *origins])) if origins else POLICY


PLOTS_POLICY = _policy(script_src="'self' 'unsafe-eval'", style_src="'self' 'unsafe-inline'")


def allow_plots(response: HttpResponse) -> HttpResponse:
    """Send PLOTS_POLICY on a page that draws plotly figures (the middleware keeps a policy it finds)."""
    if settings.CONTENT_SECURITY_POLICY:
        response["Content-Security-Policy"] = PLOTS_POLICY
    return response


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        return response
