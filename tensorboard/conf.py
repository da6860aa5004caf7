"""The spawner's settings as one typed value, so the builders stay pure functions of (object, conf).

Read from django.conf.settings (the "TensorBoard" block of argoml_site/settings.py, env-driven) by
`conf_from_settings()`; tests build `TensorboardConf(...)` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from .artifacts import ObjectStore, Repository

DEFAULT_IMAGE = "tensorflow/tensorflow:2.16.1"
# Our own image, which runs `manage.py fetch_tensorboard_logs` in the TensorBoard pod; the chart sets it to
# the image it deploys.
DEFAULT_FETCH_IMAGE = "argoml/argoml:latest"
DEFAULT_IDLE_TIMEOUT = timedelta(hours=2)
DEFAULT_SYNC_SECONDS = 60


@dataclass(frozen=True)
class TensorboardConf:
    image: str = DEFAULT_IMAGE
    fetch_image: str = DEFAULT_FETCH_IMAGE
    # How often the pod of a source still running fetches its artifacts again.
    sync_seconds: int = DEFAULT_SYNC_SECONDS
    requests: dict[str, str] = field(default_factory=lambda: {"cpu": "100m", "memory": "256Mi"})
    limits: dict[str, str] = field(default_factory=lambda: {"cpu": "1", "memory": "2Gi"})
    idle_timeout: timedelta = DEFAULT_IDLE_TIMEOUT
    # Each instance is served under <path_prefix>/<namespace>/<name>/ (TensorBoard's --path_prefix).
    path_prefix: str = "/tensorboards"
    # Where users reach that path (an Ingress or gateway in front of the Services); empty: the in-cluster URL.
    base_url: str = ""
    cluster_domain: str = "cluster.local"
    # Object-store credentials: a Secret in the instance's namespace, unless the artifact names its own.
    s3_credentials_secret: str = "tensorboard-s3"  # noqa: S105 - a Secret's name, not a secret
    s3_access_key_key: str = "accesskey"
    s3_secret_key_key: str = "secretkey"  # noqa: S105 - a key name in that Secret
    default_repository: Repository = field(default_factory=Repository)
    gcs_credentials_secret: str = ""
    gcs_credentials_key: str = "key.json"
    gcs_endpoint: str = ""  # the JSON API's base URL; empty: Google's
    # Path prefixes (s3://…, gs://…, pvc://claim/…) users may name directly; `{namespace}` is replaced.
    allowed_logdirs: tuple[str, ...] = ()
    # The logdir of a training job (TFJob, MXJob, PyTorchJob, MPIJob), e.g. s3://ml-logs/{namespace}/{name}.
    job_logdir: str = ""

    def __post_init__(self) -> None:
        if not self.image:
            raise ValueError("TENSORBOARD_IMAGE: must name an image.")
        if not self.fetch_image:
            raise ValueError("TENSORBOARD_FETCH_IMAGE: must name an image.")
        if self.sync_seconds < 1:
            raise ValueError(f"TENSORBOARD_SYNC_SECONDS: {self.sync_seconds} must be at least 1.")
        if not self.path_prefix.startswith("/") or self.path_prefix.endswith("/"):
            raise ValueError(
                f"TENSORBOARD_PATH_PREFIX: {self.path_prefix!r} must start with '/' and not end with one."
            )
        if self.idle_timeout <= timedelta(0):
            raise ValueError("TENSORBOARD_IDLE_TIMEOUT_SECONDS: must be positive.")
        for prefix in self.allowed_logdirs:
            if not prefix.startswith(("s3://", "gs://", "pvc://")):
                raise ValueError(
                    f"TENSORBOARD_ALLOWED_LOGDIRS: {prefix!r} must start with s3://, gs:// or pvc://."
                )
        if self.gcs_endpoint and not self.gcs_endpoint.startswith(("http://", "https://")):
            raise ValueError(
                f"TENSORBOARD_GCS_ENDPOINT: {self.gcs_endpoint!r} must start with http:// or https://."
            )
        if self.job_logdir and not self.job_logdir.startswith(("s3://", "gs://", "pvc://")):
            raise ValueError(
                f"TENSORBOARD_JOB_LOGDIR: {self.job_logdir!r} must start with s3://, gs:// or pvc://."
            )


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def conf_from_settings() -> TensorboardConf:
    """The settings' values; a bad one stops with ImproperlyConfigured naming it."""
    defaults = TensorboardConf()
    store = ObjectStore(
        endpoint=_setting("TENSORBOARD_ARTIFACT_ENDPOINT", ""),
        region=_setting("TENSORBOARD_ARTIFACT_REGION", ""),
        insecure=bool(_setting("TENSORBOARD_ARTIFACT_INSECURE", False)),
    )
    requests = {
        "cpu": _setting("TENSORBOARD_CPU_REQUEST", "100m"),
        "memory": _setting("TENSORBOARD_MEMORY_REQUEST", "256Mi"),
    }
    limits = {
        "cpu": _setting("TENSORBOARD_CPU_LIMIT", "1"),
        "memory": _setting("TENSORBOARD_MEMORY_LIMIT", "2Gi"),
    }
    try:
        return TensorboardConf(
            image=_setting("TENSORBOARD_IMAGE", DEFAULT_IMAGE),
            fetch_image=_setting("TENSORBOARD_FETCH_IMAGE", DEFAULT_FETCH_IMAGE),
            sync_seconds=_setting("TENSORBOARD_SYNC_SECONDS", DEFAULT_SYNC_SECONDS),
            requests={key: value for key, value in requests.items() if value},
            limits={key: value for key, value in limits.items() if value},
            idle_timeout=timedelta(seconds=_setting("TENSORBOARD_IDLE_TIMEOUT_SECONDS", 7200)),
            path_prefix=_setting("TENSORBOARD_PATH_PREFIX", defaults.path_prefix),
            base_url=str(_setting("TENSORBOARD_BASE_URL", "")).rstrip("/"),
            cluster_domain=_setting("TENSORBOARD_CLUSTER_DOMAIN", defaults.cluster_domain),
            s3_credentials_secret=_setting(
                "TENSORBOARD_S3_CREDENTIALS_SECRET", defaults.s3_credentials_secret
            ),
            s3_access_key_key=_setting("TENSORBOARD_S3_ACCESS_KEY_KEY", defaults.s3_access_key_key),
            s3_secret_key_key=_setting("TENSORBOARD_S3_SECRET_KEY_KEY", defaults.s3_secret_key_key),
            default_repository=Repository(
                s3_bucket=_setting("TENSORBOARD_ARTIFACT_BUCKET", ""),
                s3=store,
                gcs_bucket=_setting("TENSORBOARD_ARTIFACT_GCS_BUCKET", ""),
            ),
            gcs_credentials_secret=_setting("TENSORBOARD_GCS_CREDENTIALS_SECRET", ""),
            gcs_credentials_key=_setting("TENSORBOARD_GCS_CREDENTIALS_KEY", defaults.gcs_credentials_key),
            gcs_endpoint=_setting("TENSORBOARD_GCS_ENDPOINT", ""),
            allowed_logdirs=tuple(_setting("TENSORBOARD_ALLOWED_LOGDIRS", ())),
            job_logdir=_setting("TENSORBOARD_JOB_LOGDIR", ""),
        )
    except ValueError as error:
        raise ImproperlyConfigured(str(error)) from error
