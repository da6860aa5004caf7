"""The production WSGI entry point: Django's application, with the collected static files in front.

`argoml_site.wsgi` serves no static files once DEBUG is off, and the admin, dashboard and API docs need
theirs. WhiteNoise serves the files `collectstatic` put into STATIC_ROOT at image build time, from the
web process itself: no second server, no shared volume. gunicorn.conf.py loads this module.
"""

from __future__ import annotations

from django.conf import settings
from whitenoise import WhiteNoise

from argoml_site.wsgi import application as django_application

# The file names carry no content hash (plain storage), so browsers revalidate after an hour.
STATIC_MAX_AGE_SECONDS = 3600

application = WhiteNoise(
    django_application,
    root=str(settings.STATIC_ROOT),
    prefix=settings.STATIC_URL,
    max_age=STATIC_MAX_AGE_SECONDS,
)
