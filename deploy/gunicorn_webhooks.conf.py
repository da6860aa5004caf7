"""Gunicorn's configuration for the webhook listener: the web process's settings (gunicorn.conf.py, the same
GUNICORN_* variables and TLS files), serving `argoml_site.webhook_wsgi` instead, without static files.

The listener is its own Deployment behind its own Service, reached only by the API server; the Ingress
never routes to it (docs/webhooks.md). Each review's time is bounded by WEBHOOK_REVIEW_BUDGET_SECONDS,
well below GUNICORN_TIMEOUT, so a slow review never gets its worker killed.
"""

from __future__ import annotations

import runpy
from pathlib import Path

_web = runpy.run_path(str(Path(__file__).with_name("gunicorn.conf.py")))
globals().update({name: value for name, value in _web.items() if not name.startswith("_")})

wsgi_app = "argoml_site.webhook_wsgi:application"
proc_name = "argoml-webhooks"
