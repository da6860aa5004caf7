"""The Django project: settings, URLs, the Celery app, health and metrics views."""

from .celery import app as celery_app

__all__ = ["celery_app"]
