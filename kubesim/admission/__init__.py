"""Admission webhooks called over HTTPS with AdmissionReview v1, as the apiserver calls them."""

from kubesim.admission.webhooks import Webhooks

__all__ = ["Webhooks"]
