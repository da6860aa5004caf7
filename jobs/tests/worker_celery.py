"""The project's Celery app with the controllers' bootstep installed, for the operator test worker."""

from argoml_site.celery import app
from kube.bootstep import install

install(app)

__all__ = ["app"]
