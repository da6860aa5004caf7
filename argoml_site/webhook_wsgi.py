"""The webhook listener's WSGI application: Django with `WEBHOOK_URLCONF` as every request's URLconf.

One settings file serves both processes; only the URLconf differs, chosen per request (`request.urlconf`),
so the dev stack can serve the web app and the webhooks from one process on two ports, and the webhook
Deployment runs the same image with `args: [webhooks]` (deploy/gunicorn_webhooks.conf.py).
"""

from __future__ import annotations

import os

import django
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponseBase

from workflows import lint


class WebhookHandler(WSGIHandler):
    """Django's handler, resolving against the webhook listener's URLs instead of ROOT_URLCONF."""

    def get_response(self, request: HttpRequest) -> HttpResponseBase:
        request.urlconf = settings.WEBHOOK_URLCONF  # type: ignore[attr-defined]  # Django's documented hook
        return super().get_response(request)


def get_webhook_application() -> WebhookHandler:
    """The handler, with the linter's schema loaded first (from the committed argo_schema.json, no longer
    compiled from hera's models), so the first review spends none of its time budget on it."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")
    django.setup(set_prefix=False)
    lint.warm_up()
    return WebhookHandler()


application = get_webhook_application()
