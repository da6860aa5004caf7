"""The webhook listener's URLs: the admission endpoints, the TrainJob progress endpoint pods push to
(KEP-2779, `trainer.urls`) and the probes of its Deployment, nothing else.

The web server's URLconf (`argoml_site.urls`) does not contain `/webhooks/`: a review answered there
would be answered to anyone the Ingress lets in. This one is served only by `argoml_site.webhook_wsgi`.
"""

from django.urls import include, path

from . import views

handler500 = "argoml_site.views.server_error"

urlpatterns = [
    path("webhooks/", include("webhooks.urls")),
    path("", include("trainer.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
]
