"""`POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status`: a training
pod pushes its progress and metrics (Kubeflow KEP-2779), answered as Trainer's status server answers: 200
with the report as stored, or a Kubernetes `Status` (401, 403, 404, 413, 422, 429 with Retry-After, 503
with Retry-After while the API server or the database is away, 500).

Served by the webhook listener only (`argoml_site.webhook_urls`, TLS, never routed by the Ingress). The pod
proves itself with a projected ServiceAccount token of this TrainJob's audience; in order: the body's size
(unread), the token (TokenReview, then the pod), the pod's rate, the body, the write. No session, no CSRF:
the token is the only credential.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

import fields
from kube import errors as kube_errors
from kube import names
from trainer import constants as c
from trainer.progress import reporting
from trainer.progress import update as progress_update
from web import bodies
from workflows import safeyaml

logger = logging.getLogger(__name__)


def status(code: int, reason: str, message: str) -> JsonResponse:
    """A Kubernetes `Status` (metav1.Status), as Trainer's server and the API server answer errors."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return JsonResponse(body, status=code)


def refused(refusal: reporting.Refused) -> JsonResponse:
    return status(refusal.code, refusal.reason, refusal.message)


@csrf_exempt
def train_job_status(request: HttpRequest, namespace: str, name: str) -> JsonResponse:
    if request.method != "POST":
        response = status(405, "MethodNotAllowed", f"{request.method} is not allowed; POST a status update")
        response["Allow"] = "POST"
        return response
    if names.namespace_problems(namespace) or names.name_problems(c.TRAIN_JOB_KIND, name):
        return status(404, "NotFound", "Not found")
    too_big = _too_big(request)
    if too_big:
        return status(413, "RequestEntityTooLarge", too_big)
    try:
        reporter = reporting.authenticate(
            reporting.bearer_token(request.headers.get("Authorization", "")), namespace, name
        )
        wait_ms = reporting.retry_after_ms(reporter)
        if wait_ms:
            seconds = max(1, math.ceil(wait_ms / 1000))
            response = status(
                429,
                "TooManyRequests",
                f"pod {reporter.pod} reported more than {settings.TRAINER_STATUS_REPORTS_PER_WINDOW} times "
                f"in {settings.TRAINER_STATUS_WINDOW_SECONDS}s; try again in {seconds}s",
            )
            response["Retry-After"] = str(seconds)
            return response
        report = _parse(request, name)
        if report is None:
            return JsonResponse({})  # Trainer: an update without trainerStatus changes nothing
        reporting.record(reporter, report)
    except reporting.Refused as refusal:
        return refused(refusal)
    except (kube_errors.ApiError, DatabaseError) as error:
        if _unavailable(error):
            logger.warning("TrainJob progress of %s/%s: %s is unavailable (%s); the pod will report again",
                           namespace, name, _which(error), error)  # fmt: skip
            response = status(
                503, "ServiceUnavailable", f"{_which(error)} is unavailable; report again in {RETRY_SECONDS}s"
            )
            response["Retry-After"] = str(RETRY_SECONDS)
            return response
        logger.exception("TrainJob progress of %s/%s: the API server or the database failed", namespace, name)
        return status(500, "InternalError", "Internal error")
    return JsonResponse({"trainerStatus": report.as_status()})


#: What a pod is told to wait when the API server or the database is away for a moment (Kubeflow's SDK
#: reports every 5 s anyway; a later report carries the newer progress).
RETRY_SECONDS = 5


def _unavailable(error: Exception) -> bool:
    """The API server did not answer or asked to be retried (5xx, 429, no answer), or the database could
    not be reached: nothing the pod did wrong, and it passes."""
    if isinstance(error, kube_errors.ApiError):
        return error.transient
    return isinstance(error, OperationalError | InterfaceError)


def _which(error: Exception) -> str:
    return "the Kubernetes API server" if isinstance(error, kube_errors.ApiError) else "the database"


def _too_big(request: HttpRequest) -> str:
    sentence = "Payload too large: the body is {length} bytes; a status update may have at most {limit}"
    return bodies.past_limit(request.META, settings.TRAINER_STATUS_MAX_BODY_BYTES, sentence)


def _parse(request: HttpRequest, name: str) -> progress_update.TrainerStatus | None:
    """The report, or Refused 422 naming the job and every wrong field (as the API server words it)."""
    try:
        body = progress_update.loads(safeyaml.bounded_json_text(request.body))
    except safeyaml.YamlRefused as refused:
        problem = "the body is not JSON" if refused.limit == "syntax" else refused.problem
        raise reporting.Refused(422, "Invalid", f"Invalid payload: {problem}") from None
    except ValueError:
        raise reporting.Refused(422, "Invalid", "Invalid payload: the body is not JSON") from None
    try:
        return progress_update.parse(body)
    except fields.SpecError as error:
        detail = ", ".join(str(problem) for problem in error.errors)
        message = f'{c.TRAIN_JOB_KIND}.{c.GROUP} "{name}" is invalid: {detail}'
        raise reporting.Refused(422, "Invalid", message) from None
