"""The roof: the Django project that assembles the apps (settings, URL roots, the Celery app, the WSGI
entry points, health and metrics views, the site's commands). Nothing below imports it; the code the apps
share is in `web`."""

from .celery import app as celery_app

__all__ = ["celery_app"]
