"""The project's Celery app with the controllers' `--controllers` worker option installed, for the test
workers (`celery -A kube.tests.controller_celery worker --controllers`)."""

from argoml_site.celery import app
from kube.bootstep import install

install(app)

__all__ = ["app"]
