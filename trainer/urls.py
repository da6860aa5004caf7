"""Mounted at the root of the webhook listener only (`argoml_site.webhook_urls`): the path Trainer's status
server serves, which KUBEFLOW_TRAINER_SERVER_URL names. The web server's URLconf never includes it."""

from django.urls import path

from .progress.view import train_job_status

urlpatterns = [
    path(
        "apis/trainer.kubeflow.org/v1alpha1/namespaces/<str:namespace>/trainjobs/<str:name>/status",
        train_job_status,
        name="trainer-trainjob-status",
    ),
]
