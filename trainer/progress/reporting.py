"""The progress endpoint's side effects (KEP-2779): who is reporting (TokenReview, then the pod), whether
that pod may report again yet (a window per pod in Redis), and the write (the TrainJob's status patch, then
a TrainerStatusUpdate row). The server the pods are told to report to is the reconcile's
(`trainer.reconcile.status_server`).

The view (`trainer.progress.view`) calls these in that order; nothing here speaks HTTP to the pods.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis
from django.conf import settings

from kube import errors as kube_errors
from kube import resources
from kube.client import get_client
from trainer import constants as c
from trainer.models import TrainerStatusUpdate
from trainer.progress import server as progress_server
from trainer.progress import update as progress_update

logger = logging.getLogger(__name__)

TRAIN_JOB = resources.ResourceType(c.API_VERSION, c.TRAIN_JOB_KIND, "trainjobs")
# Trainer's server applies the report as this field manager.
FIELD_MANAGER = "trainer-status"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"
POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
LIMIT_KEY_PREFIX = "argoml:trainer:status-reports"


class Refused(Exception):
    """A report answered with an error Status: the HTTP code, the Status reason and what to tell the pod."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def unauthorized() -> Refused:
    return Refused(401, "Unauthorized", "Unauthorized")


def forbidden() -> Refused:
    return Refused(403, "Forbidden", "Forbidden")


@dataclass(frozen=True)
class Reporter:
    """A pod proved by its token to be one of the TrainJob's."""

    namespace: str
    pod: str
    job: progress_update.Owner


def bearer_token(header: str) -> str:
    """The credential of an RFC 7235 `Bearer` Authorization header, or "" (as Trainer reads it)."""
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


def authenticate(token: str, namespace: str, name: str) -> Reporter:
    """The pod behind `token`, when the API server vouches for it with this TrainJob's audience, the token
    is bound to a pod of `namespace`, and that very pod (same uid) belongs to the TrainJob. Refused: 401
    for no or a bad token, 403 for a good token of anyone else."""
    if not token:
        raise unauthorized()
    audience = progress_server.token_audience(namespace, name)
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": [audience]},
    }
    client = get_client()
    status = client.create(resources.TOKEN_REVIEW, review).get("status") or {}
    if status.get("authenticated") is not True or audience not in (status.get("audiences") or []):
        raise unauthorized()
    user = status.get("user") or {}
    username = str(user.get("username", ""))
    if not username.startswith(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:"):
        raise forbidden()
    extra = user.get("extra") or {}
    pod_name = next(iter(extra.get(POD_NAME_EXTRA) or []), "")
    pod_uid = next(iter(extra.get(POD_UID_EXTRA) or []), "")
    if not pod_name or not pod_uid:
        raise forbidden()  # not a pod's projected token
    try:
        pod = client.get(resources.POD, pod_name, namespace)
    except kube_errors.NotFound:
        raise forbidden() from None
    if (pod.get("metadata") or {}).get("uid") != pod_uid:
        raise forbidden()  # the pod it was issued to is gone; another has its name
    owner = progress_update.owner_of(pod, name)
    if owner is None:
        raise forbidden()
    return Reporter(namespace, pod_name, owner)


# One window per pod: the first report opens it; past the limit, the answer is the window's time left (ms).
_COUNT_IN_WINDOW = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
if count > tonumber(ARGV[2]) then
    local left = redis.call('PTTL', KEYS[1])
    if left < 0 then
        redis.call('PEXPIRE', KEYS[1], ARGV[1])
        left = tonumber(ARGV[1])
    end
    return left
end
return 0
"""


def retry_after_ms(reporter: Reporter) -> int:
    """0 when the pod may report now, else the milliseconds until it may. Redis down: 0, logged (the
    API server's own limits still hold)."""
    key = f"{LIMIT_KEY_PREFIX}:{reporter.namespace}:{reporter.pod}"
    window_ms = settings.TRAINER_STATUS_WINDOW_SECONDS * 1000
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
        left = client.register_script(_COUNT_IN_WINDOW)(
            keys=[key], args=[window_ms, settings.TRAINER_STATUS_REPORTS_PER_WINDOW]
        )
    except redis.RedisError:
        logger.exception("TrainJob progress: Redis did not answer; the report of %s is not limited", key)
        return 0
    return int(left)


def record(reporter: Reporter, status: progress_update.TrainerStatus) -> None:
    """Patch the TrainJob's `status.trainerStatus` (the shipped write limiter applies) if it is the very
    TrainJob the pod belongs to (uid), then keep the report under the TrainJob the patch wrote, as the API
    server answered it: never under a uid a caller claimed. Refused 404 when the TrainJob is gone, 403
    when it is another one than the pod's (its uid differs), 422 with the API server's words when it
    refuses the status."""
    job = reporter.job
    try:
        written = get_client().patch(
            TRAIN_JOB,
            job.name,
            status.status_patch(job.uid),
            reporter.namespace,
            patch_type="json",
            subresource="status",
            field_manager=FIELD_MANAGER,
        )
    except kube_errors.NotFound:
        raise Refused(404, "NotFound", "Train job not found") from None
    except kube_errors.Invalid as error:
        if _uid_test_failed(error):
            raise forbidden() from None
        raise Refused(422, "Invalid", str(error)) from None
    metadata = written["metadata"]
    TrainerStatusUpdate.objects.create(
        namespace=metadata["namespace"],
        trainjob_name=metadata["name"],
        trainjob_uid=metadata["uid"],
        pod=reporter.pod,
        progress_percentage=status.progress_percentage,
        estimated_remaining_seconds=status.estimated_remaining_seconds,
        metrics=[{"name": m.name, "value": m.value} for m in status.metrics],
        reported_at=status.last_updated_time,
    )


def _uid_test_failed(error: kube_errors.Invalid) -> bool:
    """Whether the API server refused the status patch at its uid test (JSON patch's "testing value
    /metadata/uid failed"), rather than refusing the status: the only path our patch tests."""
    words = [str(error), *(str(cause.get("message", "")) for cause in error.causes)]
    return any(progress_update.UID_PATH in text for text in words)
