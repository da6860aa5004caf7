"""The project's Celery app with the controllers' bootstep installed, for the spawner's test worker."""

from argoml_site.celery import app
from kube.bootstep import install

install(app)

__all__ = ["app"]
